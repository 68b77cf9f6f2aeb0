"""Seeded index splits for multi-label data: a random dev hold-out, k-fold cross-validation folds and iterative
stratification.

``kfold_split`` cuts one seeded permutation of the rows into ``folds`` near-equal contiguous parts (sizes within 1)
and holds out part ``fold`` as dev: the ``folds`` dev parts of one seed are disjoint and cover every row, so each
row is scored once across the folds (``data.dev_fold``, what ``implicit_jax.tune`` uses on a small file).

``stratified_split`` is the iterative stratification of Sechidis, Tsoumakas & Vlahavas (2011), "On the
stratification of multi-label data" (ECML PKDD), Algorithm 1:

  * every fold j wants ``n * r_j`` rows overall and ``|D^i| * r_j`` rows of each label i;
  * repeatedly take the label with the fewest (but > 0) unassigned rows, ties at random, and give each of its
    unassigned rows to the fold with the largest remaining demand for that label, ties by the largest
    remaining overall demand, then at random;
  * rows with no label at all go last, each to the fold with the largest remaining overall demand.

Two deliberate changes, both for reproducible experiment sizes: the overall demands are whole numbers
(``n * r_j`` rounded by largest remainder, so they sum to ``n``), and a fold whose overall demand is used up
takes no more rows.  Fold sizes are therefore exactly those whole numbers, within 1 of ``n * r_j``.  The rows
of each label are visited in one seeded random order, so the split depends on ``seed`` and not on file order.

All return sorted ``int64`` index arrays and are deterministic for a given seed.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

__all__ = ['dev_split', 'fold_sizes', 'kfold_split', 'stratified_split']


def _check_fraction(dev_fraction: float) -> None:
  if not 0.0 <= dev_fraction < 1.0:
    raise ValueError(f'dev_fraction must be in [0, 1), got {dev_fraction}')


def dev_split(n: int, dev_fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
  """A seeded random hold-out: ``(train_idx, dev_idx)`` partitioning ``range(n)``.

  The dev part has ``round(n * dev_fraction)`` rows, but at least 1 (and at most ``n - 1``) when
  ``dev_fraction > 0``, so that a tiny file still gets a usable dev split.
  """
  _check_fraction(dev_fraction)
  num_dev = int(round(n * dev_fraction))
  if dev_fraction > 0 and n >= 2:
    num_dev = min(max(num_dev, 1), n - 1)
  perm = np.random.default_rng(seed).permutation(n)
  return np.sort(perm[num_dev:]), np.sort(perm[:num_dev])


def kfold_split(n: int, folds: int, fold: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
  """Fold ``fold`` of ``folds``-fold cross-validation: ``(train_idx, dev_idx)`` partitioning ``range(n)``.

  The permutation of ``range(n)`` by ``default_rng(seed)`` is cut into ``folds`` contiguous parts of near-equal
  size (``np.array_split``: the first ``n % folds`` one row longer); dev is part ``fold``, train the others.
  """
  if not isinstance(folds, (int, np.integer)) or folds < 2:
    raise ValueError(f'folds must be an integer >= 2, got {folds!r}')
  if not isinstance(fold, (int, np.integer)) or not 0 <= fold < folds:
    raise ValueError(f'fold must be an integer in [0, {folds}), got {fold!r}')
  if n < folds:
    raise ValueError(f'{folds} folds need at least {folds} rows, got {n}')
  parts = np.array_split(np.random.default_rng(seed).permutation(n), folds)
  train = np.concatenate([p for j, p in enumerate(parts) if j != fold])
  return np.sort(train), np.sort(parts[fold])


def fold_sizes(n: int, fractions: Sequence[float]) -> np.ndarray:
  """Whole fold sizes summing to ``n``, each within 1 of ``n * fraction`` (largest remainder)."""
  r = np.asarray(fractions, dtype=np.float64)
  if r.ndim != 1 or r.size == 0 or (r <= 0).any() or abs(r.sum() - 1.0) > 1e-6:
    raise ValueError(f'fractions must be positive and sum to 1, got {tuple(fractions)}')
  exact = n * r / r.sum()
  sizes = np.floor(exact).astype(np.int64)
  # Stable sort: equal remainders go to the earlier fold, so the result does not depend on a seed.
  order = np.argsort(-(exact - sizes), kind='stable')
  sizes[order[: n - sizes.sum()]] += 1
  return sizes


def _rows_by_label(y: np.ndarray, rank: np.ndarray) -> tuple[list[np.ndarray], list[np.ndarray]]:
  """Each row's positive labels, and each label's rows in visiting order (CSR and CSC, O(n * L) once)."""
  rows, labels = np.nonzero(y)
  row_labels = np.split(labels, np.searchsorted(rows, np.arange(1, y.shape[0])))
  by_label = np.lexsort((rank[rows], labels))  # label-major, visiting order within a label
  starts = np.searchsorted(labels[by_label], np.arange(1, y.shape[1]))
  label_rows = np.split(rows[by_label], starts)
  return row_labels, label_rows


def _best_fold(label_demand: list[float], demand: list[int], noise: np.ndarray) -> int:
  """The open fold with most demand for the label, then most overall demand, then the seeded draw."""
  best, best_key = -1, None
  for j, open_demand in enumerate(demand):
    if open_demand <= 0:
      continue  # full: keeps fold sizes exact
    key = (label_demand[j], open_demand, noise[j])
    if best_key is None or key > best_key:
      best, best_key = j, key
  return best


def _next_label(left: np.ndarray, rng: np.random.Generator) -> int:
  """The label with the fewest unassigned rows (> 0), ties at random; -1 when none is left."""
  done = np.iinfo(left.dtype).max
  pending = np.where(left > 0, left, done)
  fewest = pending.min(initial=done)
  if fewest == done:
    return -1
  ties = np.flatnonzero(pending == fewest)
  return int(ties[rng.integers(len(ties))]) if len(ties) > 1 else int(ties[0])


def stratified_split(
    y: np.ndarray, fractions: Sequence[float] = (0.6, 0.2, 0.2), seed: int = 0
) -> tuple[np.ndarray, ...]:
  """Iterative stratification of the rows of a 0/1 label matrix ``y [n, L]`` (see the module docstring).

  Returns one sorted index array per fraction; together they partition ``range(n)`` and their sizes are
  ``fold_sizes(n, fractions)``.  Cost: one pass over ``y`` plus O(nnz(y) + n * folds + L^2) small steps.
  """
  y = np.asarray(y)
  if y.ndim != 2:
    raise ValueError(f'y must be 2-D [n, L], got shape {y.shape}')
  y = y != 0
  n, num_labels = y.shape
  sizes = fold_sizes(n, fractions)
  r = sizes / max(n, 1)
  rng = np.random.default_rng(seed)
  rank = rng.permutation(n)  # visiting order of rows within a label
  noise = rng.random((n, len(sizes)))  # per-row tie-breaks, drawn up front so the split is seed-determined
  row_labels, label_rows = _rows_by_label(y, rank)
  left = y.sum(axis=0).astype(np.int64)  # unassigned rows per label
  label_demand = np.outer(r, left).astype(np.float64)  # [folds, L]
  demand = sizes.tolist()
  fold = np.full(n, -1, dtype=np.int64)

  def assign(row, fold_demand_for_label):
    j = _best_fold(fold_demand_for_label, demand, noise[row])
    fold[row] = j
    demand[j] -= 1
    labels = row_labels[row]
    left[labels] -= 1
    label_demand[j, labels] -= 1
    return j

  while (label := _next_label(left, rng)) >= 0:
    column = label_demand[:, label].tolist()  # kept in step with label_demand for this label's rows
    for row in label_rows[label]:
      if fold[row] < 0:
        column[assign(row, column)] -= 1
  for row in np.flatnonzero(fold < 0)[np.argsort(rank[fold < 0])]:  # rows without labels
    assign(row, [0.0] * len(sizes))
  return tuple(np.flatnonzero(fold == j) for j in range(len(sizes)))
