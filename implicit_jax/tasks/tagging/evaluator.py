"""Sequence-labeling evaluation over the real (unpadded) tokens: token accuracy (POS, the synthetic task) and
chunk F1 (NER, ``chunks.chunk_f1``: conlleval's, the papers' metric, and strict BIOES beside it). Both decode the
relaxed output by argmax per token; neither has a calibration chosen on dev."""

from typing import Sequence

import numpy as np

from implicit_jax.tasks import Evaluator
from implicit_jax.tasks.tagging.chunks import chunk_counts, chunk_f1


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


class ArgmaxDecisions:
  """Decisions of a per-token argmax decoder (``Evaluator.decisions``): ``tags``, the argmax tag id of every real
  token, sentence after sentence, and ``lengths``, each sentence's count of real tokens. ``relaxed`` gives the
  one-hot rows of those tags, whose argmax is the same (np.argmax takes the first of tied maxima, as it did on
  the original scores)."""

  def decisions(self, pred, split, calibration=None):
    real = np.asarray(split['mask']) > 0
    tags = np.argmax(pred, axis=-1)[real]
    return {'tags': tags.astype(np.uint8 if pred.shape[-1] <= 256 else np.int32),
            'lengths': real.sum(axis=1).astype(np.int32)}  # xz squeezes the zero high bytes

  def relaxed(self, decisions, split):
    real = np.asarray(split['mask']) > 0
    if not np.array_equal(real.sum(axis=1), decisions['lengths']):
      raise ValueError('the split\'s sentence lengths differ from the recorded ones: not the run\'s data')
    # Token accuracy knows no tag names: as many columns as the largest tag needs, which leaves every argmax as it is
    num_tags = len(self.tag_names) if hasattr(self, 'tag_names') else int(decisions['tags'].max(initial=0)) + 1
    out = np.zeros(real.shape + (num_tags,), np.float32)
    out[real, decisions['tags'].astype(np.int64)] = 1.0
    return out


class AccuracyEvaluator(ArgmaxDecisions, Evaluator):
  """``accuracy`` selects the best epoch; no calibration (the relaxed output is decoded by argmax per token)."""

  select = headline = 'accuracy'

  def example_scores(self, pred, split):
    gold, mask = np.asarray(split['y']), np.asarray(split['mask']) > 0
    scored = mask & (gold >= 0)
    return np.sum((np.argmax(pred, axis=-1) == gold) & scored, axis=1), np.sum(scored, axis=1)

  def metrics(self, pred, split):
    return {'accuracy': token_accuracy(np.argmax(pred, axis=-1), split['y'], split['mask'])}

  def describe(self, m):
    return f'token accuracy {m["accuracy"]:.4f}'


class ChunkF1Evaluator(ArgmaxDecisions, Evaluator):
  """Chunk F1 of the argmax tags per token, read as BIOES chunks with ``tag_names`` (the task's tag names in the
  order of its tag ids), under two of ``chunks.SCHEMES``: ``f1_conlleval`` (with ``precision_conlleval``,
  ``recall_conlleval``), the papers' metric and the one reported first, and ``f1`` (``precision``, ``recall``),
  strict BIOES; token ``accuracy`` for information. The final scores add each scheme's chunk counts. The third
  reading, ``conlleval_bioes``, is not recorded: a record's kept decisions give it (``example_scores``).

  ``select`` picks the best epoch: ``'f1'`` (strict) by default, because every committed NER / NER+ record selected
  on it and the reproduce script fills in missing seeds beside them; ``'f1_conlleval'`` (``data.chunk_select``)
  once a row's records are all rerun. Strict keeps the key ``f1`` so that a record's ``test_f1`` means the same
  in old and new records. No calibration."""

  SELECTABLE = ('f1', 'f1_conlleval')
  headline = 'f1_conlleval'  # the papers' metric

  def __init__(self, tag_names: Sequence[str], select: str = 'f1'):
    self.tag_names = tuple(tag_names)
    if not self.tag_names:
      raise ValueError('ChunkF1Evaluator: no tag names')
    if select not in self.SELECTABLE:
      raise ValueError(f'ChunkF1Evaluator: select {select!r} is not one of {self.SELECTABLE}')
    self.select = select

  def _scores(self, pred, split) -> dict:
    if pred.shape[-1] != len(self.tag_names):
      raise ValueError(f'predictions have {pred.shape[-1]} tags per token, the evaluator knows '
                       f'{len(self.tag_names)} tag names')
    pred_tags = np.argmax(pred, axis=-1)
    gold, guessed = sentences(split['y'], split['mask']), sentences(pred_tags, split['mask'])
    scores = {}
    for scheme, suffix in (('conlleval', '_conlleval'), ('strict', '')):
      chunks = chunk_f1(gold, guessed, self.tag_names, scheme=scheme)
      scores.update({f'{k}{suffix}': float(chunks[k]) for k in ('f1', 'precision', 'recall')})
      scores.update({f'{k}{suffix}': int(chunks[k]) for k in ('num_gold', 'num_pred', 'num_correct')})
    scores['accuracy'] = token_accuracy(pred_tags, split['y'], split['mask'])
    return scores

  def metrics(self, pred, split):
    return {k: v for k, v in self._scores(pred, split).items() if isinstance(v, float)}

  def example_scores(self, pred, split, scheme: str = 'conlleval'):
    """Per sentence ``2 * correct`` over ``gold + predicted`` chunks (conlleval's, or another of ``chunks.SCHEMES``):
    F1 = 2c / (g + p), and no reading's chunks cross a sentence boundary, so the counts add over sentences."""
    gold, guessed = sentences(split['y'], split['mask']), sentences(np.argmax(pred, axis=-1), split['mask'])
    counts = np.array([chunk_counts([g], [p], self.tag_names, scheme=scheme) for g, p in zip(gold, guessed)])
    return 2 * counts[:, 2], counts[:, 0] + counts[:, 1]

  def describe(self, m):
    return (f'chunk F1 conlleval {m["f1_conlleval"]:.4f} (precision {m["precision_conlleval"]:.4f}, recall '
            f'{m["recall_conlleval"]:.4f}), strict {m["f1"]:.4f}, token accuracy {m["accuracy"]:.4f}')

  def score(self, pred, split, calibration):
    return self._scores(pred, split)

  def summary(self, result):
    return (f'test chunk F1 conlleval {result["test_f1_conlleval"]:.4f} (precision '
            f'{result["test_precision_conlleval"]:.4f}, recall {result["test_recall_conlleval"]:.4f}), strict '
            f'{result["test_f1"]:.4f}, token accuracy {result["test_accuracy"]:.4f} (best dev epoch '
            f'{result["best_epoch"]}, selected on dev {self.select})')
