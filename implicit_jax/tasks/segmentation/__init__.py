"""Binary image segmentation as a task of the engine: a mask in [0, 1]^(H x W) per image.

Output space: ``Binary((size, size))``, a sigmoid per pixel; its ``iou`` cost (1 - soft IoU) is the task loss of
the implicit method's CD and SSVM losses and its ``iou`` score DVN's regression target. Networks
(``models.py``): a fully convolutional inference net and a convolutional energy over (image, mask), in the design
of DVN and SEAL. Evaluator (``evaluator.py``): mean IoU over images at threshold 0.5, global IoU beside it.
Augmentation: random horizontal flips of image and mask together (``data.flip``).

Datasets (``data.name``): ``horses``, Weizmann horses (``horses.py``: reader, resizing, the seeded split).
"""

import ml_collections
import numpy as np

from implicit_jax.spaces.binary import Binary
from implicit_jax.tasks import Task
from implicit_jax.tasks.segmentation import horses
from implicit_jax.tasks.segmentation.evaluator import IoUEvaluator
from implicit_jax.tasks.segmentation.models import FCN, ConvEnergy

DATASETS = ('horses',)


def default_config() -> ml_collections.ConfigDict:
  c = ml_collections.ConfigDict()
  d = c.data = ml_collections.ConfigDict()
  d.name = 'horses'           # dataset: 'horses' (Weizmann horses, horses.py)
  d.data_dir = ''             # folder holding weizmann_horse/{images,masks}; '' = $IMPLICIT_JAX_DATA_DIR
  d.size = 32                 # images and masks are resized to size x size (bilinear / nearest); divisible by 4
  d.num_train = 200           # images in the training split; dev takes the next num_dev, test the rest (99 of
  d.num_dev = 28              # the 327), all from a permutation of the ids seeded by split_seed
  d.split_seed = 0
  d.flip = True               # training batches: each image and its mask flipped left-right with probability 1/2
  m = c.model = ml_collections.ConfigDict()
  m.channels = (64, 128, 128)  # inference net (FCN): channels of its three 5x5 convolutions (strides 1, 2, 2)
  m.kernel_size = 5           # convolution kernels of both networks
  m.dropout = 0.0             # inference net: dropout on its features (training only)
  m.energy_channels = (64, 128, 128)  # energy: channels of its three convolutions over (image, mask)
  m.energy_hidden = (384, 192)  # energy: dense layers after them, then one scalar
  return c


def flip(batch: dict, rng: np.random.Generator) -> dict:
  """Each image and its mask mirrored left-right with probability 1/2 (one draw per example)."""
  flipped = rng.random(len(batch['x'])) < 0.5
  out = dict(batch)
  out['x'] = np.where(flipped[:, None, None, None], batch['x'][:, :, ::-1], batch['x'])
  out['y'] = np.where(flipped[:, None, None], batch['y'][:, :, ::-1], batch['y'])
  return out


def make_task(config) -> Task:
  d, m = config.data, config.model
  if d.name not in DATASETS:
    raise ValueError(f'data.name: unknown segmentation dataset {d.name!r}; choose one of {DATASETS}')
  if not isinstance(d.size, int) or d.size < 4 or d.size % 4:
    raise ValueError(f'data.size must be a positive multiple of 4 (the networks downsample twice), got {d.size}')
  if not 0.0 <= m.dropout < 1.0:
    raise ValueError(f'model.dropout must be in [0, 1), got {m.dropout}')
  for field in ('channels', 'energy_channels'):
    if len(m[field]) != 3 or any(not isinstance(c, int) or c < 1 for c in m[field]):
      raise ValueError(f'model.{field} must be three positive integers, got {tuple(m[field])}')
  splits, info = horses.load(d.data_dir, d.size, d.num_train, d.num_dev, d.split_seed)

  def make_inference_net(heads: int = 1):
    return FCN(tuple(m.channels), m.kernel_size, m.dropout, heads)

  def make_energy():
    return ConvEnergy(tuple(m.energy_channels), m.kernel_size, tuple(m.energy_hidden))

  return Task(d.name, splits, Binary((d.size, d.size)), make_inference_net, make_energy, IoUEvaluator(),
              score='iou', info=info, augment=flip if d.flip else None)
