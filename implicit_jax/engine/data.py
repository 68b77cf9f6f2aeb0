"""Batches of a task's splits: shuffled training batches and padded prediction batches, each of a few shapes.

Training: the order of epoch e is ``default_rng([seed, e]).permutation(N)``, cut into ``N // batch_size`` full
batches (the remainder waits for a later epoch's shuffle). For variable-length examples the permutation is cut
into windows of ``WINDOW`` batches, each window sorted by length and its batches shuffled again, so that a batch
holds examples of similar lengths; every batch is then cut to the smallest of the task's buckets that holds its
longest example. The jitted step compiles once per bucket. A task's ``augment`` (random flips, ...) draws from
the same generator, batch after batch, so the data order and every augmentation depend on (seed, epoch) alone,
which exact resumption needs.

Prediction: examples in order (by length for padded tasks), ``batch_size`` at a time; the last batch is padded
with copies of its last example and the copies' outputs dropped, so a split compiles one shape per bucket. A task
that trains on views of its inputs (``Task.predict_views``: segmentation's crops) predicts each batch through them.

A training run places each batch on its data mesh (``shard_batch``): training batches, and prediction batches when
``predict`` is given the mesh's sharding.
"""

from __future__ import annotations

from typing import Iterator

import jax
import numpy as np

WINDOW = 20  # batches per length-sorted window (padded tasks)
SPLITS = ('train', 'dev', 'test')  # every task's splits (tasks.Task.splits)


def first_non_finite(value) -> tuple[int, ...] | None:
  """The index of the first NaN or Inf of a float array, or None (and None for other dtypes)."""
  value = np.asarray(value)
  if not np.issubdtype(value.dtype, np.floating) or np.all(np.isfinite(value)):
    return None
  return tuple(int(i) for i in np.argwhere(~np.isfinite(value))[0])


def num_examples(arrays: dict) -> int:
  return len(arrays['y']) if 'y' in arrays else len(next(iter(arrays.values())))


def lengths(task, arrays: dict) -> np.ndarray | None:
  """Each example's number of real positions (None for fixed-shape tasks)."""
  return np.sum(arrays['mask'] > 0, axis=1) if task.padded else None


def bucket(task, longest: int, width: int) -> int:
  """The padded length of a batch whose longest example has ``longest`` positions (``width``: the split's)."""
  return min([b for b in task.buckets if b >= longest] or [width])


def _cut(task, arrays: dict, idx: np.ndarray, lens: np.ndarray | None) -> dict:
  batch = {k: v[idx] for k, v in arrays.items()}
  if lens is not None:
    length = bucket(task, int(lens[idx].max()), arrays['mask'].shape[1])
    batch = {k: (v[:, :length] if k in task.padded else v) for k, v in batch.items()}
  return batch


def train_batches(task, batch_size: int, rng: np.random.Generator) -> Iterator[dict]:
  """One epoch of training batches; ``y`` in the output space's coordinates (``space.gold``)."""
  arrays = task.splits['train']
  n = num_examples(arrays)
  perm = rng.permutation(n)
  steps = n // batch_size
  lens = lengths(task, arrays)
  if lens is None:
    order = [perm[i * batch_size:(i + 1) * batch_size] for i in range(steps)]
  else:
    order = []
    used = perm[:steps * batch_size]
    for start in range(0, len(used), WINDOW * batch_size):
      window = used[start:start + WINDOW * batch_size]
      window = window[np.argsort(lens[window], kind='stable')].reshape(-1, batch_size)
      order.extend(window[rng.permutation(len(window))])
  for idx in order:
    batch = _cut(task, arrays, idx, lens)
    batch['y'] = task.space.gold(batch['y'])
    yield task.augment(batch, rng) if task.augment else batch


def prediction_batches(task, arrays: dict, batch_size: int) -> Iterator[tuple[dict, np.ndarray]]:
  """``(inputs, idx)``: ``batch_size`` examples at a time, padded to that size; ``idx`` holds the rows of the
  real examples (its length is the number of outputs to keep)."""
  n = num_examples(arrays)
  lens = lengths(task, arrays)
  order = np.arange(n) if lens is None else np.argsort(lens, kind='stable')
  inputs = task.inputs(arrays)
  for start in range(0, n, batch_size):
    idx = order[start:start + batch_size]
    padded = np.concatenate([idx, np.full(batch_size - len(idx), idx[-1])])
    yield _cut(task, inputs, padded, lens), idx


def shard_batch(batch: dict, sharding) -> dict:
  """Places a global batch on the mesh. Every host builds the same global batch (the data order depends on
  the seed alone) and contributes its own rows, so a multi-host run sees the batches of a single-host one."""
  if jax.process_count() == 1:
    return jax.device_put(batch, sharding)
  rows = num_examples(batch) // jax.process_count()
  lo = jax.process_index() * rows
  return {k: jax.make_array_from_process_local_data(sharding, v[lo:lo + rows], v.shape) for k, v in batch.items()}


def predict(task, predict_fn, arrays: dict, batch_size: int, sharding=None) -> np.ndarray:
  """Relaxed predictions for every example of ``arrays``, aligned with it (padded positions as the arrays pad
  them, zero there). ``predict_fn(batch) -> y``; ``sharding``: each batch placed on a data mesh (``shard_batch``)
  first, where given."""
  n = num_examples(arrays)
  out = None
  views = getattr(task, 'predict_views', None)  # duck-typed tasks (tests) may lack the field

  def run(batch):
    return np.asarray(predict_fn(batch if sharding is None else shard_batch(batch, sharding)))

  for batch, idx in prediction_batches(task, arrays, batch_size):
    pred = (views(run, batch) if views else run(batch))[:len(idx)]
    if out is None:
      width = arrays['mask'].shape[1] if task.padded else None
      out = np.zeros((n, width, *pred.shape[2:]) if task.padded else (n, *pred.shape[1:]), pred.dtype)
    if task.padded:
      out[idx, :pred.shape[1]] = pred
    else:
      out[idx] = pred
  if out is None:
    raise ValueError('predict: no examples')
  return out
