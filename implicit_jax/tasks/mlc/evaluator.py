"""Multi-label evaluation: example F1 at threshold 0.5 and at a threshold tuned on dev, micro and macro F1.

The two protocols of the literature (the guide's section 4): SEAL and DVN report example F1 at 0.5, SPEN and
InfNet tune the threshold on dev. The best epoch is selected on dev F1 at 0.5; the tuned threshold is the
calibration, chosen on the best epoch's dev predictions and applied once to test.
"""

import numpy as np

from implicit_jax.tasks import Evaluator
from implicit_jax.tasks.mlc import metrics

GRID = np.linspace(0.05, 0.95, 19)


def tune_threshold(probs: np.ndarray, y: np.ndarray, grid=GRID, empty: float = 1.0) -> tuple[float, float]:
  """The threshold on the grid with the best example F1 on (dev) predictions, and that F1."""
  scores = [metrics.example_f1(probs >= t, y > 0.5, empty) for t in grid]
  best = int(np.argmax(scores))
  return float(grid[best]), float(scores[best])


class F1Evaluator(Evaluator):
  """Per epoch ``f1`` (example F1 at 0.5, the selection metric), ``f1_tuned`` and its ``threshold``. ``empty``:
  the example F1 of a row whose gold and predicted label sets are both empty (``data.empty_f1``)."""

  select = 'f1'
  headline = 'f1'  # example F1 at 0.5 (DVN's and SEAL's protocol, the papers' tables)

  def __init__(self, empty: float = 1.0):
    self.empty = metrics.check_empty(empty)

  def metrics(self, pred, split):
    y = split['y']
    threshold, tuned = tune_threshold(pred, y, empty=self.empty)
    # Tuned on the same dev predictions: recorded to show whether the @0.5 choice of epoch also suits the tuned
    # protocol, never used for selection.
    return {'f1': metrics.example_f1(pred >= 0.5, y > 0.5, self.empty), 'f1_tuned': tuned, 'threshold': threshold}

  def describe(self, m):
    return f'example-F1 {m["f1"]:.4f} at 0.5, {m["f1_tuned"]:.4f} at {m["threshold"]:.2f}'

  def decisions(self, pred, split, calibration=None):
    """``bins`` [N, L] (uint8): how many of ``cuts`` each score is at or above, and ``cuts``, the thresholds the
    metrics compare scores with, each also rounded to the scores' dtype: ``GRID`` and 0.5 where the threshold is
    tuned (dev, ``calibration`` None), 0.5 and the tuned threshold where a split is scored under it (test: a
    quarter of the full grid's size on delicious). Every metric here reads scores only through ``score >= t`` for
    such a t: in float64 for the grid's numpy scalars, in the scores' dtype for a Python float (numpy 2's promotion
    rules), and the rounding can move a float32 score across a cut. Two scores in the same bin agree on every such
    comparison, so the bins keep all that the figures read."""
    pred = np.asarray(pred)
    cuts = np.array([0.5, calibration['threshold']]) if calibration else np.concatenate([GRID, [0.5]])
    if np.issubdtype(pred.dtype, np.floating):
      cuts = np.concatenate([cuts, cuts.astype(pred.dtype).astype(np.float64)])
    cuts = np.unique(cuts)
    bins = np.searchsorted(cuts, pred.astype(np.float64), side='right')  # the count of cuts <= score
    return {'bins': bins.astype(np.uint8), 'cuts': cuts, 'dtype': np.array(pred.dtype.str)}

  def relaxed(self, decisions, split):
    """Scores with the recorded bins: in bin b >= 1, the smallest value of the scores' dtype at or above
    ``cuts[b - 1]`` (an original score lay there, so it is below ``cuts[b]``); 0 in bin 0."""
    cuts, dtype = decisions['cuts'], np.dtype(str(decisions['dtype']))
    low = cuts.astype(dtype)
    low = np.where(low.astype(np.float64) < cuts, np.nextafter(low, np.array(np.inf, dtype)), low)
    values = np.concatenate([np.zeros(1, dtype), low])
    if decisions['bins'].shape != np.shape(split['y']):
      raise ValueError(f'recorded decisions of shape {decisions["bins"].shape}, the split\'s gold '
                       f'{np.shape(split["y"])}: not the run\'s data')
    return values[decisions['bins'].astype(np.int64)]

  def example_scores(self, pred, split):
    f1 = metrics.example_f1_each(np.asarray(pred) >= 0.5, np.asarray(split['y']) > 0.5, self.empty)
    return f1, np.ones_like(f1)

  def calibrate(self, dev_pred, dev):
    return {'threshold': tune_threshold(dev_pred, dev['y'], empty=self.empty)[0]}

  def score(self, pred, split, calibration):
    threshold = calibration['threshold']
    return {'threshold': threshold, 'at_0.5': metrics.all_f1(pred, split['y'], 0.5, self.empty),
            'at_tuned': metrics.all_f1(pred, split['y'], threshold, self.empty)}

  def final(self, dev_pred, dev, test_pred, test):
    threshold, dev_tuned = tune_threshold(dev_pred, dev['y'], empty=self.empty)
    test_scores = self.score(test_pred, test, {'threshold': threshold})
    return {'dev_f1_tuned': dev_tuned, 'threshold': threshold, 'empty_f1': self.empty,
            'test_f1': test_scores['at_0.5']['example_f1'], 'test_f1_tuned': test_scores['at_tuned']['example_f1'],
            'test_at_0.5': test_scores['at_0.5'], 'test_at_tuned': test_scores['at_tuned']}

  def calibration_of(self, result):
    return {'threshold': result['threshold']}

  def summary(self, result):
    return (f'test example-F1: {result["test_f1"]:.4f} at threshold 0.5, {result["test_f1_tuned"]:.4f} at '
            f'dev-tuned threshold {result["threshold"]:.2f} (best dev epoch {result["best_epoch"]})')
