"""Segmentation evaluation: intersection over union of the masks thresholded at 0.5.

* ``mean_iou``: the IoU of each image, averaged over images (DVN's and SEAL's "mean IoU"; the published tables
  report it); an image whose gold and predicted masks are both empty scores 1;
* ``global_iou``: total intersection over total union, pooled over every pixel of the split;
* ``pixel_accuracy``: share of pixels labelled right.

No calibration: the threshold stays at 0.5, as in the papers.
"""

import numpy as np

from implicit_jax.tasks import Evaluator

THRESHOLD = 0.5


def iou_scores(pred: np.ndarray, gold: np.ndarray, threshold: float = THRESHOLD) -> dict[str, float]:
  """Every metric of relaxed masks ``pred`` [N, H, W] against binary ``gold`` [N, H, W]."""
  p, g = np.asarray(pred) >= threshold, np.asarray(gold) >= 0.5
  inter = np.sum(p & g, axis=(1, 2))
  union = np.sum(p | g, axis=(1, 2))
  per_image = image_iou(inter, union)
  return {'mean_iou': float(per_image.mean()),
          'global_iou': float(inter.sum() / max(union.sum(), 1)),
          'pixel_accuracy': float(np.mean(p == g))}


def image_iou(inter: np.ndarray, union: np.ndarray) -> np.ndarray:
  """Each image's IoU from its pixel counts; 1 where gold and prediction are both empty."""
  return np.where(union > 0, inter / np.maximum(union, 1), 1.0)


class IoUEvaluator(Evaluator):
  """``mean_iou`` selects the best epoch."""

  select = headline = 'mean_iou'

  def example_scores(self, pred, split):
    p, g = np.asarray(pred) >= THRESHOLD, np.asarray(split['y']) >= 0.5
    iou = image_iou(np.sum(p & g, axis=(1, 2)), np.sum(p | g, axis=(1, 2)))
    return iou, np.ones_like(iou)

  def metrics(self, pred, split):
    return iou_scores(pred, split['y'])

  def decisions(self, pred, split, calibration=None):
    """``masks`` [N, H, W]: each pixel thresholded at ``THRESHOLD``, all that every metric here reads."""
    return {'masks': np.asarray(pred) >= THRESHOLD}

  def relaxed(self, decisions, split):
    if decisions['masks'].shape != np.shape(split['y']):
      raise ValueError(f'recorded masks of shape {decisions["masks"].shape}, the split\'s gold '
                       f'{np.shape(split["y"])}: not the run\'s data')
    return decisions['masks'].astype(np.float32)

  def describe(self, m):
    return f'mean IoU {m["mean_iou"]:.4f}, global IoU {m["global_iou"]:.4f}'
