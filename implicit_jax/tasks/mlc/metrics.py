"""Evaluation metrics on discrete multi-label outputs (numpy, host side).

Convention for an example with no gold and no predicted label (``empty``, the ``data.empty_f1`` setting): by
default its example F1 is 1 (the prediction is exactly right), as in SPEN and InfNet; sklearn-based code (DVN,
SEAL) scores it 0. ``all_f1`` reports example F1 under both, so that any table can be read in either.
"""

import numpy as np


def check_empty(empty) -> float:
  """``data.empty_f1`` checked: the example F1 of an empty prediction of an empty gold set, 1.0 or 0.0."""
  if empty not in (0.0, 1.0):
    raise ValueError(f'data.empty_f1: the F1 of an empty prediction of an empty gold set is 1.0 or 0.0, got '
                     f'{empty!r}')
  return float(empty)


def example_f1(pred: np.ndarray, gold: np.ndarray, empty: float = 1.0) -> float:
  """Mean over examples of ``2 |pred & gold| / (|pred| + |gold|)``, ``empty`` where both sets are empty; binary
  arrays of shape [N, L]."""
  return float(np.mean(example_f1_each(pred, gold, empty)))


def example_f1_each(pred: np.ndarray, gold: np.ndarray, empty: float = 1.0) -> np.ndarray:
  """The F1 of each example (``example_f1`` is their mean): [N]."""
  pred, gold = np.asarray(pred, bool), np.asarray(gold, bool)
  if pred.shape != gold.shape:
    raise ValueError(f'example_f1: prediction shape {pred.shape} does not match gold shape {gold.shape}')
  tp = np.sum(pred & gold, axis=-1)
  denom = np.sum(pred, axis=-1) + np.sum(gold, axis=-1)
  return np.where(denom == 0, check_empty(empty), 2.0 * tp / np.maximum(denom, 1))


def micro_f1(pred: np.ndarray, gold: np.ndarray) -> float:
  """F1 of all (example, label) decisions pooled; 1 if there is no positive in either."""
  pred, gold = np.asarray(pred, bool), np.asarray(gold, bool)
  tp, denom = np.sum(pred & gold), np.sum(pred) + np.sum(gold)
  return float(1.0 if denom == 0 else 2.0 * tp / denom)


def macro_f1(pred: np.ndarray, gold: np.ndarray) -> float:
  """Mean over labels of per-label F1; a label absent from both gold and prediction scores 1."""
  pred, gold = np.asarray(pred, bool), np.asarray(gold, bool)
  tp = np.sum(pred & gold, axis=0)
  denom = np.sum(pred, axis=0) + np.sum(gold, axis=0)
  return float(np.mean(np.where(denom == 0, 1.0, 2.0 * tp / np.maximum(denom, 1))))


def all_f1(probs: np.ndarray, gold: np.ndarray, threshold: float, empty: float = 1.0) -> dict:
  """Example (under ``empty``, and under each convention by name), micro and macro F1 of ``probs >= threshold``;
  ``empty_rows`` counts the examples where gold and prediction are both empty."""
  pred, gold = probs >= threshold, gold > 0.5
  both_empty = int(np.sum(~pred.any(axis=-1) & ~gold.any(axis=-1)))
  by_convention = {e: example_f1(pred, gold, e) for e in (1.0, 0.0)}
  return {'example_f1': by_convention[check_empty(empty)], 'example_f1_empty1': by_convention[1.0],
          'example_f1_empty0': by_convention[0.0], 'empty_rows': both_empty,
          'micro_f1': micro_f1(pred, gold), 'macro_f1': macro_f1(pred, gold)}
