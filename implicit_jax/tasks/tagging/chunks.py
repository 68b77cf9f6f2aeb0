"""Chunk-level precision / recall / F1 of BIOES tag sequences (named entities, phrase chunks).

A tag is ``O`` or ``P-TYPE`` with the prefix ``P`` one of ``B`` (begin), ``I`` (inside), ``E`` (end), ``S``
(single-token chunk) and a non-empty ``TYPE`` (``PER``, ``LOC``, ...). A chunk is ``(type, start, end)`` with
``end`` exclusive, and is one of

* ``S-X`` alone: ``(X, i, i + 1)``;
* ``B-X (I-X)* E-X``: from the ``B-`` to the ``E-``, all of the same type.

Scoring is conlleval's strict exact match: a predicted chunk is correct only if the gold sequence has a chunk
with the same type, start and end; precision = correct / predicted chunks, recall = correct / gold chunks,
F1 = 2PR / (P + R), all micro-averaged over every sentence, and 0 (not NaN) where a denominator is 0.

Ill-formed sequences
--------------------
A per-token argmax can predict ``I-PER`` after ``O``, a ``B-`` that is never closed, or an ``E-`` without its
``B-``. Such tags belong to no chunk: a run that does not complete one of the two shapes above counts neither as
a predicted chunk nor, of course, as a correct one (it only loses the gold chunk it was meant to be). Scanning
left to right, a ``B-X`` opens a run that ``I-X``/``E-X`` tokens extend; the first other tag ends it, and is then
read afresh (so ``B-PER I-PER S-LOC`` has the one chunk ``(LOC, 2, 3)``); tokens after an ``E-`` are not part of
its chunk (``B-PER E-PER E-PER`` has the one chunk ``(PER, 0, 2)``). This is seqeval's strict IOBES mode
(``seqeval.metrics.f1_score(..., mode='strict', scheme=IOBES)``), which ``tests/test_tagging_data.py`` checks
this module against on random, partly ill-formed sequences. On well-formed sequences it is conlleval's
semantics; conlleval itself repairs ill-formed input instead (it opens a chunk at an ``I-`` that follows
``O``), which would reward a decoder for tags that a BIOES grammar forbids. The same rule is applied to gold
sequences, which a correct IOB1 -> BIOES conversion (``readers.iob1_to_bioes``) always leaves well-formed.
"""

from __future__ import annotations

from typing import Iterable, Sequence

import numpy as np

__all__ = ['bioes_to_chunks', 'chunk_counts', 'chunk_f1', 'split_tag']

Chunk = tuple[str, int, int]  # (type, start, end), end exclusive

_PREFIXES = frozenset('BIES')


def split_tag(tag: str) -> tuple[str, str]:
  """``(prefix, type)`` of a BIOES tag: ``'O' -> ('O', '')``, ``'B-PER' -> ('B', 'PER')``; ValueError otherwise
  (a misspelt tag would silently be scored as ``O`` by a lenient reader)."""
  if tag == 'O':
    return 'O', ''
  if not isinstance(tag, str) or len(tag) < 3 or tag[0] not in _PREFIXES or tag[1] != '-':
    raise ValueError(f'{tag!r} is not a BIOES tag: expected O or B-/I-/E-/S- followed by a type')
  return tag[0], tag[2:]


def bioes_to_chunks(tags: Sequence[str]) -> list[Chunk]:
  """The chunks ``(type, start, end)`` (end exclusive) of one BIOES sequence, in order; ill-formed runs give
  none (module doc)."""
  parsed = [split_tag(tag) for tag in tags]
  chunks, i, n = [], 0, len(parsed)
  while i < n:
    prefix, kind = parsed[i]
    if prefix == 'S':
      chunks.append((kind, i, i + 1))
      i += 1
      continue
    if prefix != 'B':
      i += 1
      continue
    j, closed = i + 1, False
    while j < n:
      p, k = parsed[j]
      if k != kind or p not in ('I', 'E'):
        break  # the run ends unclosed; token j is read afresh
      j += 1
      if p == 'E':
        closed = True
        break
    if closed:
      chunks.append((kind, i, j))
    i = j
  return chunks


def _as_tags(seq, tag_names: Sequence[str] | None) -> Sequence[str]:
  if tag_names is None:
    return seq
  return [tag_names[int(t)] for t in np.asarray(seq).reshape(-1)]


def chunk_counts(gold_seqs: Iterable[Sequence], pred_seqs: Iterable[Sequence],
                 tag_names: Sequence[str] | None = None) -> tuple[int, int, int]:
  """``(num_gold, num_pred, num_correct)`` chunks over paired sentences; see ``chunk_f1``."""
  gold_seqs, pred_seqs = list(gold_seqs), list(pred_seqs)
  if len(gold_seqs) != len(pred_seqs):
    raise ValueError(f'{len(gold_seqs)} gold sequences but {len(pred_seqs)} predicted ones')
  num_gold = num_pred = num_correct = 0
  for i, (gold, pred) in enumerate(zip(gold_seqs, pred_seqs)):
    gold, pred = _as_tags(gold, tag_names), _as_tags(pred, tag_names)
    if len(gold) != len(pred):
      raise ValueError(f'sentence {i}: {len(gold)} gold tags but {len(pred)} predicted ones')
    gold_chunks, pred_chunks = set(bioes_to_chunks(gold)), set(bioes_to_chunks(pred))
    num_gold += len(gold_chunks)
    num_pred += len(pred_chunks)
    num_correct += len(gold_chunks & pred_chunks)
  return num_gold, num_pred, num_correct


def chunk_f1(gold_seqs: Iterable[Sequence], pred_seqs: Iterable[Sequence],
             tag_names: Sequence[str] | None = None) -> dict:
  """Micro-averaged chunk ``precision``, ``recall`` and ``f1`` (fractions, not percentages) of paired BIOES
  sentences, with ``num_gold``, ``num_pred`` and ``num_correct``.

  Sequences hold tag strings, or, with ``tag_names``, tag ids into it (e.g. rows of an argmax already cut to
  their sentence lengths). A ratio whose denominator is 0 is 0, as in conlleval and seqeval.
  """
  num_gold, num_pred, num_correct = chunk_counts(gold_seqs, pred_seqs, tag_names)
  precision = num_correct / num_pred if num_pred else 0.0
  recall = num_correct / num_gold if num_gold else 0.0
  f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
  return {'precision': precision, 'recall': recall, 'f1': f1,
          'num_gold': num_gold, 'num_pred': num_pred, 'num_correct': num_correct}
