"""Sequence-labeling evaluation over the real (unpadded) tokens: token accuracy (POS, the synthetic task) and
strict BIOES chunk F1 (NER, ``chunks.chunk_f1``). Both decode the relaxed output by argmax per token; neither
has a calibration chosen on dev."""

from typing import Sequence

import numpy as np

from implicit_jax.tasks import Evaluator
from implicit_jax.tasks.tagging.chunks import chunk_f1


def token_accuracy(pred_tags: np.ndarray, gold_tags: np.ndarray, mask: np.ndarray) -> float:
  """Share of real tokens whose predicted tag is the gold one. Tokens without a gold tag (-1: the unlabeled rows
  of a semi-supervised training split, Cora's) are not counted; NaN when no token has one."""
  gold = np.asarray(gold_tags)
  scored = (np.asarray(mask) > 0) & (gold >= 0)
  if not scored.any():
    return float('nan')
  return float(np.mean(np.asarray(pred_tags)[scored] == gold[scored]))


def sentences(tag_ids: np.ndarray, mask: np.ndarray) -> list[np.ndarray]:
  """Each row's tag ids at its real positions: the sentences of a padded ``[N, T]`` array."""
  real = np.asarray(mask) > 0
  return [row[keep] for row, keep in zip(np.asarray(tag_ids), real)]


class AccuracyEvaluator(Evaluator):
  """``accuracy`` selects the best epoch; no calibration (the relaxed output is decoded by argmax per token)."""

  select = 'accuracy'

  def metrics(self, pred, split):
    return {'accuracy': token_accuracy(np.argmax(pred, axis=-1), split['y'], split['mask'])}

  def describe(self, m):
    return f'token accuracy {m["accuracy"]:.4f}'


class ChunkF1Evaluator(Evaluator):
  """Chunk ``f1`` (selects the best epoch), ``precision`` and ``recall`` of the argmax tags per token, read as
  BIOES chunks with ``tag_names`` (the task's tag names in the order of its tag ids) and scored by
  ``chunks.chunk_f1`` (strict: ill-formed predicted runs are no chunk); token ``accuracy`` for information. The
  final scores add the chunk counts (``num_gold``, ``num_pred``, ``num_correct``). No calibration."""

  select = 'f1'

  def __init__(self, tag_names: Sequence[str]):
    self.tag_names = tuple(tag_names)
    if not self.tag_names:
      raise ValueError('ChunkF1Evaluator: no tag names')

  def _scores(self, pred, split) -> dict:
    if pred.shape[-1] != len(self.tag_names):
      raise ValueError(f'predictions have {pred.shape[-1]} tags per token, the evaluator knows '
                       f'{len(self.tag_names)} tag names')
    pred_tags = np.argmax(pred, axis=-1)
    chunks = chunk_f1(sentences(split['y'], split['mask']), sentences(pred_tags, split['mask']), self.tag_names)
    return {'f1': float(chunks['f1']), 'precision': float(chunks['precision']),
            'recall': float(chunks['recall']),
            'accuracy': token_accuracy(pred_tags, split['y'], split['mask']),
            'num_gold': int(chunks['num_gold']), 'num_pred': int(chunks['num_pred']),
            'num_correct': int(chunks['num_correct'])}

  def metrics(self, pred, split):
    return {k: v for k, v in self._scores(pred, split).items() if isinstance(v, float)}

  def describe(self, m):
    return (f'chunk F1 {m["f1"]:.4f} (precision {m["precision"]:.4f}, recall {m["recall"]:.4f}), '
            f'token accuracy {m["accuracy"]:.4f}')

  def score(self, pred, split, calibration):
    return self._scores(pred, split)

  def summary(self, result):
    return (f'test chunk F1 {result["test_f1"]:.4f} (precision {result["test_precision"]:.4f}, recall '
            f'{result["test_recall"]:.4f}), token accuracy {result["test_accuracy"]:.4f} '
            f'(best dev epoch {result["best_epoch"]})')
