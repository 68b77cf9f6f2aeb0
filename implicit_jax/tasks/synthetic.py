"""A built-in structured multi-label problem with a known answer, so the main job runs with no data files.

Labels come in ``num_groups`` groups of ``group_size``; in each group exactly one label is on, the argmax of a
hidden linear score ``W_g x``. The map x -> y is deterministic, so a perfect predictor exists (example F1 = 1),
and the labels are strongly dependent (mutually exclusive within a group): structure the global energy term can
learn. ``label_noise`` flips that fraction of label bits in train and dev (test stays clean).
"""

import numpy as np

from implicit_jax.tasks import Task


def _sample(rng, w, n, group_size):
  x = rng.standard_normal((n, w.shape[0])).astype(np.float32)
  scores = (x @ w).reshape(n, -1, group_size)  # [N, groups, group_size]
  y = np.zeros_like(scores)
  np.put_along_axis(y, scores.argmax(-1)[..., None], 1.0, axis=-1)
  return x, y.reshape(n, -1)


def make_task(config) -> Task:
  d = config.data
  rng = np.random.default_rng(d.seed)
  w = rng.standard_normal((d.num_features, d.num_groups * d.group_size)).astype(np.float32)
  splits = {}
  for split, n in (('train', d.num_train), ('dev', d.num_dev), ('test', d.num_test)):
    x, y = _sample(rng, w, n, d.group_size)
    if split != 'test' and d.label_noise > 0:
      flip = rng.random(y.shape) < d.label_noise
      y = np.where(flip, 1.0 - y, y).astype(np.float32)
    splits[split] = (x, y)
  return Task('synthetic', splits, d.num_features, d.num_groups * d.group_size,
              info={'seed': d.seed, 'sizes': {k: len(v[0]) for k, v in splits.items()}})
