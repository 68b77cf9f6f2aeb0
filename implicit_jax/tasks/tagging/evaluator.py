"""Sequence-labeling evaluation: token accuracy over the real (unpadded) tokens."""

import numpy as np

from implicit_jax.tasks import Evaluator


def token_accuracy(pred_tags: np.ndarray, gold_tags: np.ndarray, mask: np.ndarray) -> float:
  """Share of real tokens whose predicted tag is the gold one."""
  real = np.asarray(mask) > 0
  return float(np.mean(np.asarray(pred_tags)[real] == np.asarray(gold_tags)[real]))


class AccuracyEvaluator(Evaluator):
  """``accuracy`` selects the best epoch; no calibration (the relaxed output is decoded by argmax per token)."""

  select = 'accuracy'

  def metrics(self, pred, split):
    return {'accuracy': token_accuracy(np.argmax(pred, axis=-1), split['y'], split['mask'])}

  def describe(self, m):
    return f'token accuracy {m["accuracy"]:.4f}'
