"""Evaluation metrics on discrete multi-label outputs (numpy, host side).

Convention for an example with no gold and no predicted label: its example F1 is 1 (the prediction is exactly
right), as in SPEN and InfNet. sklearn-based code (DVN, SEAL) scores it 0; delicious has such rows.
"""

import numpy as np


def example_f1(pred: np.ndarray, gold: np.ndarray) -> float:
  """Mean over examples of ``2 |pred & gold| / (|pred| + |gold|)``; binary arrays of shape [N, L]."""
  pred, gold = np.asarray(pred, bool), np.asarray(gold, bool)
  if pred.shape != gold.shape:
    raise ValueError(f'example_f1: prediction shape {pred.shape} does not match gold shape {gold.shape}')
  tp = np.sum(pred & gold, axis=-1)
  denom = np.sum(pred, axis=-1) + np.sum(gold, axis=-1)
  f1 = np.where(denom == 0, 1.0, 2.0 * tp / np.maximum(denom, 1))
  return float(np.mean(f1))
