"""Chunk-level precision / recall / F1 of BIOES tag sequences (named entities, phrase chunks), under three readings
of ill-formed sequences: ``conlleval`` (the papers' metric, the headline), ``conlleval_bioes`` and ``strict``.

A tag is ``O`` or ``P-TYPE`` with the prefix ``P`` one of ``B`` (begin), ``I`` (inside), ``E`` (end), ``S``
(single-token chunk) and a non-empty ``TYPE`` (``PER``, ``LOC``, ...). A chunk is ``(type, start, end)`` with
``end`` exclusive. On a well-formed sequence, where every chunk is ``S-X`` alone or ``B-X (I-X)* E-X``, every
reading gives exactly those chunks.

Scoring is exact match: a predicted chunk is correct only if the gold sequence has a chunk with the same type,
start and end; precision = correct / predicted chunks, recall = correct / gold chunks, F1 = 2PR / (P + R), all
micro-averaged over every sentence, and 0 (not NaN) where a denominator is 0 (as conlleval and seqeval do).

Ill-formed sequences
--------------------
A per-token argmax can predict ``I-PER`` after ``O``, a ``B-`` that is never closed, or an ``E-`` without its
``B-``. The readings differ only there, and only in the predicted sequences (gold ones, converted from IOB1
by ``readers.iob1_to_bioes``, are well-formed):

* ``conlleval`` (``conlleval_chunks``): what the CoNLL shared task's ``conlleval`` script reports, the metric
  the published NER numbers use. conlleval knows IOB and IOE prefixes but not ``S-``, so BIOES output is first
  mapped to IOB2 (``S-`` -> ``B-``, ``E-`` -> ``I-``), as BIOES taggers usually do before calling it. Every
  non-``O`` tag then belongs to some chunk: a chunk starts at ``B-``/``S-``, at an ``I-``/``E-`` after ``O`` and
  wherever the type changes, and runs over the following ``I-``/``E-`` tags of its type. So a stray ``I-PER``
  after ``O`` is a predicted chunk (a false positive, or a correct one if it happens to span a gold chunk),
  ``B-PER I-PER O`` is the chunk ``(PER, 0, 2)`` and ``B-PER E-PER E-PER`` the chunk ``(PER, 0, 3)``.
  ``tests/test_tagging_data.py`` checks it against a line-by-line reimplementation of conlleval.pl's counting,
  against seqeval's default (conlleval) mode on the IOB2 tags, and against counts conlleval.pl printed for
  hand-written cases. seqeval's default mode applied to the BIOES tags themselves reads ``E-``/``S-`` as closing
  a chunk and differs on some ill-formed runs (``B-PER E-PER E-PER``: two chunks there).
* ``conlleval_bioes`` (``conlleval_bioes_chunks``): the BIOES tags read as they stand, with conlleval's rules
  extended to ``S-`` and ``E-``: a chunk ends after every ``E-`` and ``S-`` (and where conlleval's IOB rules end
  it: before a ``B-``, ``S-`` or ``O``, at a type change), and starts at every ``B-`` and ``S-``, at an ``I-``/``E-``
  after ``O``, ``E-`` or ``S-``, and at a type change. These are the rules of seqeval's default mode and of the
  BIOES-aware versions of conlleval; on ``B-PER E-PER E-PER`` they give two chunks where the IOB2 mapping gives one,
  and on ``O S-PER I-PER`` two where it gives one. Which of the two readings the published NER numbers used is not
  stated; the claims ledger (experiments/claims.py) reports both. The CoNLL-2000 conlleval.pl itself, given raw
  BIOES, is neither: its rules know no ``S-`` (``S-PER S-PER`` is one chunk) and let a ``B-`` after an ``E-`` of
  the same type continue the chunk.
* ``strict`` (``bioes_to_chunks``): a run that does not complete ``S-X`` or ``B-X (I-X)* E-X`` is no chunk,
  neither predicted nor correct. Scanning left to right, a ``B-X`` opens a run that ``I-X``/``E-X`` tokens
  extend; the first other tag ends it and is then read afresh (so ``B-PER I-PER S-LOC`` has the one chunk
  ``(LOC, 2, 3)``); tokens after an ``E-`` are not part of its chunk (``B-PER E-PER E-PER`` has the one chunk
  ``(PER, 0, 2)``). This is seqeval's strict IOBES mode (``mode='strict', scheme=IOBES``). It is not the
  papers' metric: dropping a stray tag spares the precision conlleval charges for it, so strict F1 is usually
  the higher of the two on an argmax decoder's output (issue 33's check on a 3-epoch BiLSTM's CoNLL-2003 test
  output: 76.25 strict, 73.86 with seqeval's default mode), and a table that scores with it alone is not
  comparable with the published numbers.

The training loop keeps strict F1 under the key ``f1`` (the one every committed NER record selected epochs on)
and adds conlleval's as ``f1_conlleval``; ``evaluator.ChunkF1Evaluator`` says which one selects.
"""

from __future__ import annotations

from typing import Callable, Iterable, Sequence

import numpy as np

__all__ = ['SCHEMES', 'bioes_to_chunks', 'chunk_counts', 'chunk_f1', 'conlleval_bioes_chunks', 'conlleval_chunks',
           'split_tag']

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
  """The strict chunks ``(type, start, end)`` (end exclusive) of one BIOES sequence, in order; ill-formed runs
  give none (module doc)."""
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


# BIOES -> IOB2, the conversion made before conlleval in the usual BIOES pipelines (conlleval knows no S-).
_TO_IOB2 = {'O': 'O', 'B': 'B', 'S': 'B', 'I': 'I', 'E': 'I'}


def conlleval_chunks(tags: Sequence[str]) -> list[Chunk]:
  """The chunks ``(type, start, end)`` (end exclusive) of one BIOES sequence as conlleval reads it after S -> B,
  E -> I, in order: every non-``O`` tag is in one (module doc)."""
  chunks, start, prev, prev_kind = [], None, 'O', ''
  for i, (prefix, kind) in enumerate([split_tag(tag) for tag in tags] + [('O', '')]):  # an O ends the last chunk
    prefix = _TO_IOB2[prefix]
    # conlleval's endOfChunk and startOfChunk, on IOB2 tags: a B- or O ends the open chunk, and so does a type change
    if start is not None and (prefix in ('B', 'O') or kind != prev_kind):
      chunks.append((prev_kind, start, i))
      start = None
    if prefix == 'B' or (prefix == 'I' and (prev == 'O' or kind != prev_kind)):
      start = i
    prev, prev_kind = prefix, kind
  return chunks


def conlleval_bioes_chunks(tags: Sequence[str]) -> list[Chunk]:
  """The chunks ``(type, start, end)`` (end exclusive) of one BIOES sequence read as it stands, a chunk closed
  after every ``E-`` and ``S-`` (module doc), in order: every non-``O`` tag is in one."""
  chunks, start, prev, prev_kind = [], None, 'O', ''
  for i, (prefix, kind) in enumerate([split_tag(tag) for tag in tags] + [('O', '')]):  # an O ends the last chunk
    if start is not None and (prev in ('E', 'S') or prefix in ('B', 'S', 'O') or kind != prev_kind):
      chunks.append((prev_kind, start, i))
      start = None
    if prefix in ('B', 'S') or (prefix in ('I', 'E') and start is None):
      start = i
    prev, prev_kind = prefix, kind
  return chunks


SCHEMES: dict[str, Callable[[Sequence[str]], list[Chunk]]] = {'conlleval': conlleval_chunks,
                                                               'conlleval_bioes': conlleval_bioes_chunks,
                                                               'strict': bioes_to_chunks}


def _as_tags(seq, tag_names: Sequence[str] | None) -> Sequence[str]:
  if tag_names is None:
    return seq
  return [tag_names[int(t)] for t in np.asarray(seq).reshape(-1)]


def chunk_counts(gold_seqs: Iterable[Sequence], pred_seqs: Iterable[Sequence],
                 tag_names: Sequence[str] | None = None, *, scheme: str) -> tuple[int, int, int]:
  """``(num_gold, num_pred, num_correct)`` chunks over paired sentences; see ``chunk_f1``."""
  if scheme not in SCHEMES:
    raise ValueError(f'scheme: unknown {scheme!r}; choose one of {sorted(SCHEMES)}')
  to_chunks = SCHEMES[scheme]
  gold_seqs, pred_seqs = list(gold_seqs), list(pred_seqs)
  if len(gold_seqs) != len(pred_seqs):
    raise ValueError(f'{len(gold_seqs)} gold sequences but {len(pred_seqs)} predicted ones')
  num_gold = num_pred = num_correct = 0
  for i, (gold, pred) in enumerate(zip(gold_seqs, pred_seqs)):
    gold, pred = _as_tags(gold, tag_names), _as_tags(pred, tag_names)
    if len(gold) != len(pred):
      raise ValueError(f'sentence {i}: {len(gold)} gold tags but {len(pred)} predicted ones')
    gold_chunks, pred_chunks = set(to_chunks(gold)), set(to_chunks(pred))
    num_gold += len(gold_chunks)
    num_pred += len(pred_chunks)
    num_correct += len(gold_chunks & pred_chunks)
  return num_gold, num_pred, num_correct


def chunk_f1(gold_seqs: Iterable[Sequence], pred_seqs: Iterable[Sequence],
             tag_names: Sequence[str] | None = None, *, scheme: str) -> dict:
  """Micro-averaged chunk ``precision``, ``recall`` and ``f1`` (fractions, not percentages) of paired BIOES
  sentences, with ``num_gold``, ``num_pred`` and ``num_correct``. ``scheme``: ``'conlleval'`` (the papers'),
  ``'conlleval_bioes'`` or ``'strict'`` (module doc); no default, since they differ on a decoder's ill-formed output.

  Sequences hold tag strings, or, with ``tag_names``, tag ids into it (e.g. rows of an argmax already cut to
  their sentence lengths). A ratio whose denominator is 0 is 0, as in conlleval and seqeval.
  """
  num_gold, num_pred, num_correct = chunk_counts(gold_seqs, pred_seqs, tag_names, scheme=scheme)
  precision = num_correct / num_pred if num_pred else 0.0
  recall = num_correct / num_gold if num_gold else 0.0
  f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
  return {'precision': precision, 'recall': recall, 'f1': f1,
          'num_gold': num_gold, 'num_pred': num_pred, 'num_correct': num_correct}
