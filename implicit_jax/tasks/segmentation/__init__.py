"""Binary image segmentation as a task of the engine: a mask in [0, 1]^(H x W) per image.

Output space: ``Mask``, a ``Binary`` sigmoid per pixel whose height and width are the batch's images'; its ``iou``
cost (1 - soft IoU) is the task loss of the implicit method's CD and SSVM losses and its ``iou`` score DVN's
regression target. Networks (``models.py``): a fully convolutional inference net and a convolutional energy over
(image, mask), in the design of DVN and SEAL. Evaluator (``evaluator.py``): mean IoU over images at threshold 0.5,
global IoU beside it. Augmentation: random horizontal flips of image and mask together (``data.flip``).

Crops (``data.crop``, off by default): the protocol of SEAL's code. Its paper's text describes no crops; they are
said to be DVN's (Gygli et al. 2017), whose text is not among the project's papers. Training batches are random
``crop x crop`` windows of the images and their masks, one window per example, drawn by the epoch's data generator
(so a resumed run sees the same crops). The networks are initialised on, and only ever see, windows of that size:
the energy's dense layers are sized by it. A prediction is the method's own prediction (GBI included) on each
window at the offsets ``data.crop_offsets`` (in both axes: 6 x 6 = 36 windows by default), the soft masks averaged
per pixel over the windows that cover it (``average_over_crops``); the metric is computed on these full masks.

Where SEAL's code (iesl/seal-neurips-2022; read, not copied) does this:
``seal/dataset_readers/img_seg/weizmann_horse_seg_reader.py`` lines 15-24 (the 36 windows at offsets
{0, 2, 3, 4, 6, 8} in both axes) and 46-55 (``RandomCrop`` of 24x24 in training; no flips anywhere);
``seal/metrics/seg_iou.py`` lines 32-49 (sum of the windows' soft masks over the count of windows covering each
pixel, then threshold 0.5); ``seal/modules/sampler/weizmann_horse_seg/inference_net.py`` lines 57-61 and
``gradient_based_inference.py`` lines 32-61 (the task net and GBI run on the 36 windows as a batch);
``seal/modules/weizmann_horse_seg_score_nn.py`` line 20 (the energy's first dense layer takes 128 x 6 x 6
features: 24x24 windows only).

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
  d.size = 32                 # images and masks are resized to size x size (by resize); divisible by 4
  d.resize = 'bilinear'       # 'bilinear': image bilinear, mask nearest; 'bicubic': both bicubic, the mask then cut
                              # at 0.3: Li et al.'s 32x32 set that DVN and SEAL use (horses.py, docs/horses.md)
  d.split = 'seeded'          # 'seeded': the three splits below; 'seal': SEAL's own 160 / 39 / 128 (seal_split.py;
                              # num_train and num_dev must then be 160 and 40, SEAL's sizes)
  d.num_train = 200           # images in the training split; dev takes the next num_dev, test the rest (99 of
  d.num_dev = 28              # the 327), all from a permutation of the ids seeded by split_seed
  d.split_seed = 0
  d.flip = True               # training batches: each image and its mask flipped left-right with probability 1/2
  d.crop = 0                  # 0: full images in training and at test. c > 0 (a multiple of 4 below size; SEAL's 24
                              # of 32): training on random c x c windows of image and mask, prediction averaged over
                              # the windows at crop_offsets (module docstring); the metric is on full masks
  d.crop_offsets = (0, 2, 3, 4, 6, 8)  # with crop: top and left offsets of the test windows, the same in both
                              # axes (SEAL's 36 = 6 x 6); sorted, from 0 to size - crop, every pixel covered
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


class Mask(Binary):
  """Binary pixels, as many as the batch's images have: training crops and full prediction images differ."""

  def shape(self, batch):
    return tuple(batch['x'].shape[:3])


def random_crop(batch: dict, rng: np.random.Generator, crop: int) -> dict:
  """Each image and its mask cut to one ``crop x crop`` window, its top and left offsets uniform over every
  position (one draw of each per example), like torchvision's ``RandomCrop`` in SEAL's reader."""
  n, h, w = batch['y'].shape
  tops = rng.integers(0, h - crop + 1, n)
  lefts = rng.integers(0, w - crop + 1, n)
  rows = (tops[:, None] + np.arange(crop))[:, :, None]  # [n, crop, 1]
  cols = (lefts[:, None] + np.arange(crop))[:, None, :]  # [n, 1, crop]
  examples = np.arange(n)[:, None, None]
  out = dict(batch)
  out['x'] = batch['x'][examples, rows, cols]
  out['y'] = batch['y'][examples, rows, cols]
  return out


def average_over_crops(predict, batch: dict, crop: int, offsets) -> np.ndarray:
  """``[B, H, W]``: ``predict`` (inputs -> relaxed masks) on the ``crop x crop`` window of every (top, left) in
  ``offsets x offsets``, each pixel's soft values averaged over the windows that cover it (SEAL's
  ``seg_iou.py``; every pixel must be covered)."""
  x = batch['x']
  n, h, w = x.shape[:3]
  total = np.zeros((n, h, w), np.float64)
  count = np.zeros((h, w), np.int64)
  pred = None
  for top in offsets:
    for left in offsets:
      pred = np.asarray(predict({**batch, 'x': x[:, top:top + crop, left:left + crop]}))
      total[:, top:top + crop, left:left + crop] += pred
      count[top:top + crop, left:left + crop] += 1
  if not count.all():
    raise ValueError(f'average_over_crops: offsets {tuple(offsets)} of {crop}x{crop} windows leave pixels of the '
                     f'{h}x{w} image uncovered')
  return (total / count).astype(pred.dtype)


def check_crop(d) -> tuple[int, ...]:
  """The test windows' offsets of ``data.crop`` (() when off); the errors name the field."""
  crop = d.crop
  if isinstance(crop, bool) or not isinstance(crop, int) or crop < 0:
    raise ValueError(f'data.crop must be 0 (off) or a crop size, got {crop!r}')
  if not crop:
    return ()
  if crop % 4 or crop >= d.size:
    raise ValueError(f'data.crop={crop} must be a multiple of 4 (the networks downsample twice) below data.size='
                     f'{d.size}')
  offsets = tuple(d.crop_offsets)
  margin = d.size - crop
  if (not offsets or any(isinstance(o, bool) or not isinstance(o, int) for o in offsets)
      or list(offsets) != sorted(set(offsets)) or offsets[0] != 0 or offsets[-1] != margin
      or any(b - a > crop for a, b in zip(offsets, offsets[1:]))):
    raise ValueError(f'data.crop_offsets={offsets} must be increasing integers from 0 to data.size - data.crop = '
                     f'{margin}, no two more than data.crop apart (every pixel covered)')
  return offsets


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
  if d.resize not in horses.RESIZE:
    raise ValueError(f'data.resize: unknown {d.resize!r}; choose one of {horses.RESIZE}')
  if d.split not in horses.SPLITS:
    raise ValueError(f'data.split: unknown {d.split!r}; choose one of {horses.SPLITS}')
  if d.split == 'seal' and (d.num_train, d.num_dev) != (160, 40):
    raise ValueError(f"data.split='seal' is SEAL's 160 train / 40 dev images (39 of them in the PNG set): "
                     f'data.num_train={d.num_train} and data.num_dev={d.num_dev} say otherwise')
  offsets = check_crop(d)
  splits, info = horses.load(d.data_dir, d.size, d.num_train, d.num_dev, d.split_seed, d.resize, d.split)

  def make_inference_net(heads: int = 1):
    return FCN(tuple(m.channels), m.kernel_size, m.dropout, heads)

  def make_energy():
    return ConvEnergy(tuple(m.energy_channels), m.kernel_size, tuple(m.energy_hidden))

  crop, flips = d.crop, d.flip

  def crop_and_flip(batch, rng):
    batch = random_crop(batch, rng, crop)  # the window, then the flip, both from the (seed, epoch) generator
    return flip(batch, rng) if flips else batch

  def crop_views(predict, batch):
    return average_over_crops(predict, batch, crop, offsets)

  augment = crop_and_flip if crop else flip if flips else None
  predict_views = crop_views if crop else None
  return Task(d.name, splits, Mask((d.size, d.size)), make_inference_net, make_energy, IoUEvaluator(),
              score='iou', info=info, augment=augment, predict_views=predict_views)
