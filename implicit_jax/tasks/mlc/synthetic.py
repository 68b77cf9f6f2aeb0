"""A built-in structured multi-label problem with a known answer, so the main job runs with no data files
(``config.task = 'synthetic'``).

Labels come in ``num_groups`` groups of ``group_size``; in each group exactly one label is on, the argmax of a
hidden linear score ``W_g x``. The map x -> y is deterministic, so a perfect predictor exists (example F1 = 1),
and the labels are strongly dependent (mutually exclusive within a group): structure the global energy term can
learn. ``label_noise`` flips that fraction of label bits in train and dev (test stays clean).
"""

import ml_collections
import numpy as np

from implicit_jax.tasks import Task
from implicit_jax.tasks.mlc import mlc_task, model_config


def default_config() -> ml_collections.ConfigDict:
  c = ml_collections.ConfigDict()
  c.data = ml_collections.ConfigDict()
  c.data.seed = 0                # seed of the generator (fixed across runs: the same problem)
  c.data.num_features = 32       # input dimension D
  c.data.num_groups = 6          # label groups; exactly one label per group is on
  c.data.group_size = 4          # labels per group (L = num_groups * group_size)
  c.data.num_train = 2048
  c.data.num_dev = 512
  c.data.num_test = 2048
  c.data.label_noise = 0.02      # fraction of train/dev label bits flipped (test stays clean)
  c.model = model_config()       # the multi-label networks (tasks/mlc/__init__.py documents each field)
  return c


def _sample(rng, w, n, group_size):
  x = rng.standard_normal((n, w.shape[0])).astype(np.float32)
  scores = (x @ w).reshape(n, -1, group_size)  # [N, groups, group_size]
  y = np.zeros_like(scores)
  np.put_along_axis(y, scores.argmax(-1)[..., None], 1.0, axis=-1)
  return x, y.reshape(n, -1)


def make_task(config) -> Task:
  d = config.data
  for field in ('num_features', 'num_groups', 'group_size', 'num_train', 'num_dev', 'num_test'):
    value = d[field]
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
      raise ValueError(f'config.data.{field} must be a positive integer, got {value!r}')
  if not 0 <= d.label_noise < 1:
    raise ValueError(f'config.data.label_noise must be in [0, 1), got {d.label_noise!r}')
  rng = np.random.default_rng(d.seed)
  w = rng.standard_normal((d.num_features, d.num_groups * d.group_size)).astype(np.float32)
  splits = {}
  for split, n in (('train', d.num_train), ('dev', d.num_dev), ('test', d.num_test)):
    x, y = _sample(rng, w, n, d.group_size)
    if split != 'test' and d.label_noise > 0:
      flip = rng.random(y.shape) < d.label_noise
      y = np.where(flip, 1.0 - y, y).astype(np.float32)
    splits[split] = (x, y)
  return mlc_task('synthetic', splits, d.num_groups * d.group_size, config,
                  info={'seed': d.seed, 'sizes': {k: len(v[0]) for k, v in splits.items()}})
