"""scikit-learn's handwritten digits as a task of implicit_jax, defined outside the package.

1,797 images of 8x8 grey levels (0-16) of the digits 0-9, one class per image: multi-class classification. The
images are shuffled by ``data.split_seed`` and split 60/20/20 into train, dev and test. Output space:
``Multiclass(10)``, a softmax over the ten classes. Networks: the package's MLP inference net and SPEN energy
(``implicit_jax/tasks/mlc/models.py``), which read ``batch['x']`` and work on any output vector. The best epoch
is the one with the best dev accuracy.

``config.task = 'digits'`` names this module by its import name: put its folder on ``PYTHONPATH``
(``implicit_jax/plugins.py`` says what a task module exports). ``read_inputs`` lets ``python -m implicit_jax.predict``
read images in the task's own file format, UCI's optdigits layout; a ``.npy`` of ``x`` needs no hook, since ``x`` is
the task's only input.
"""

import ml_collections
import numpy as np
from sklearn.datasets import load_digits

from implicit_jax.spaces.categorical import Multiclass
from implicit_jax.tasks import Evaluator, Task
from implicit_jax.tasks.mlc.models import MLCEnergy, MLPInferenceNet

CLASSES = 10


def default_config():
  c = ml_collections.ConfigDict()
  c.data = ml_collections.ConfigDict()
  c.data.split_seed = 0            # shuffles the images before the 60/20/20 train/dev/test split
  c.data.num_train = 0             # train on the first n training images only (0: all 1,078)
  c.model = ml_collections.ConfigDict()
  c.model.hidden = (64,)           # A_theta(x): hidden widths of the MLP inference net
  c.model.energy_hidden = (64,)    # E_phi(x, y): hidden widths of the feature MLP b(x)
  c.model.energy_dim = 64          # E_phi: width of b(x)
  c.model.global_hidden = 16       # E_phi: rows of M in its global term v^T softplus(M y)
  return c


class Accuracy(Evaluator):
  select = 'accuracy'

  def metrics(self, pred, split):
    return {'accuracy': float(np.mean(np.argmax(pred, axis=-1) == split['y']))}


def make_task(config):
  d, m = config.data, config.model
  x, y = load_digits(return_X_y=True)
  order = np.random.default_rng(d.split_seed).permutation(len(y))
  x, y = (x[order] / 16.0).astype(np.float32), y[order]
  dev, test = int(0.6 * len(y)), int(0.8 * len(y))
  train = min(d.num_train or dev, dev)
  splits = {'train': {'x': x[:train], 'y': y[:train]}, 'dev': {'x': x[dev:test], 'y': y[dev:test]},
            'test': {'x': x[test:], 'y': y[test:]}}
  return Task('digits', splits, Multiclass(CLASSES),
              lambda heads=1: MLPInferenceNet(CLASSES, tuple(m.hidden), heads=heads),
              lambda: MLCEnergy(CLASSES, tuple(m.energy_hidden), m.energy_dim, m.global_hidden),
              Accuracy(), score='accuracy', info={'num_train': train, 'split_seed': d.split_seed})


def read_inputs(run, path):
  """Images in the layout of UCI's optdigits files: one per line, its 64 grey levels 0-16 row by row,
  comma-separated; a 65th column (the class) is ignored. Returns ``({'x': [N, 64]}, None)``, scaled as in training."""
  del run  # nothing recorded to repeat: the scaling is fixed
  with open(path) as f:
    rows = [(i, line.split(',')) for i, line in enumerate(f, 1) if line.strip()]
  for i, values in rows:
    if len(values) not in (64, 65) or not all(v.strip().isdigit() and int(v) <= 16 for v in values[:64]):
      raise ValueError(f'{path}:{i}: an image is 64 grey levels 0-16, comma-separated (then its class, optionally); '
                       f'this line has {len(values)} values')
  if not rows:
    raise ValueError(f'{path}: no images (one per line)')
  return {'x': np.array([values[:64] for _, values in rows], np.float32) / 16.0}, None
