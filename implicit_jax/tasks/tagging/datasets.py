"""The real tagging benchmarks as padded arrays: Twitter POS and CoNLL-2003 NER (words only).

``load(name, data_dir, lowercase, min_count)`` reads a benchmark with ``readers.py`` and returns
``(splits, info, tags)``:

* ``splits``: ``{'train', 'dev', 'test'}`` -> ``{'x': int32 [N, T] word ids (``PAD_ID`` 0 on padding),
  'y': int32 [N, T] tag ids (-1 on padding), 'mask': float32 [N, T]}``, and with ``features`` (NER+, CoNLL-2003
  only) one int32 [N, T] array per feature: ``caps`` 1 + ``readers.capitalised``, ``pos`` and ``chunk`` ids of the
  training split's values (1 for a value it lacks); 0 on padding. The vocabulary is built from the training
  split only (``readers.build_vocabulary``: words seen at least ``min_count`` times, lower-cased with
  ``lowercase``), so a dev or test word it lacks, like a rare training word, is ``UNK_ID`` 1. Every split is
  padded to the longest sentence of the three: the engine's ``Task`` wants one width for all splits, and the
  width costs nothing at run time, since batches are cut to the task's ``data.buckets``.
* ``info``: what the run's record keeps: dataset, files read and which split each one is, sizes in sentences
  and tokens, the longest sentence and the share of unknown tokens per split, vocabulary size and settings, tags.
* ``tags``: the tag names in the order of the tag ids (``TWITTER_POS_TAGS``, ``CONLL2003_BIOES_TAGS``).

Data folder layout (``data.data_dir``, or ``$IMPLICIT_JAX_DATA_DIR`` when it is empty; the project's shared data
is laid out so)::

    <data_dir>/twitter_pos/oct27.traindev, oct27.test, daily547.conll   (train, dev, test: InfNet's protocol)
    <data_dir>/conll2003/eng.train, eng.testa, eng.testb                (train, dev, test)
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable, NamedTuple

import numpy as np

from implicit_jax.tasks import DATA_DIR_ENV, SPLITS
from implicit_jax.tasks.tagging import readers
from implicit_jax.tasks.tagging.readers import PAD_ID, UNK_ID, Corpus, Sentence, TagIndex, Vocabulary

__all__ = ['DATASETS', 'FEATURES', 'Benchmark', 'Loaded', 'encode', 'encode_tokens', 'feature_indices', 'load',
           'resolve_data_dir']

# NER+ inputs beside the words (CoNLL-2003's columns): first-letter capitalisation, POS tag, chunk tag.
FEATURES = ('caps', 'pos', 'chunk')


class Benchmark(NamedTuple):
  """A benchmark's folder under the data directory, its files by split, its loader and what it is."""

  folder: str
  files: dict
  loader: Callable[[Path], Corpus]
  description: str


DATASETS = {
    'twitter_pos': Benchmark('twitter_pos', readers.TWITTER_POS_FILES, readers.load_twitter_pos,
                             'Twitter POS (Gimpel et al. 2011, Owoputi et al. 2013), 25 tags; InfNet\'s splits: '
                             'oct27 train + dev to train, oct27 test as dev, daily547 as test'),
    'conll2003': Benchmark('conll2003', readers.CONLL2003_FILES, readers.load_conll2003,
                           'CoNLL-2003 English NER, words only, IOB1 tags read as BIOES (17 tags); train '
                           'eng.train, dev eng.testa, test eng.testb'),
}


def resolve_data_dir(name: str, data_dir: str) -> Path:
  """The data directory holding ``name``'s folder: ``data_dir``, else ``$IMPLICIT_JAX_DATA_DIR``; every file the
  benchmark needs must be there (a clear error naming ``data.data_dir`` otherwise)."""
  benchmark = DATASETS[name]
  expected = ', '.join(f'{benchmark.folder}/{f}' for f in benchmark.files.values())
  data_dir = data_dir or os.environ.get(DATA_DIR_ENV, '')
  if not data_dir:
    raise ValueError(f'data.data_dir is empty and ${DATA_DIR_ENV} is not set, but dataset {name!r} needs its '
                     f'files: set data.data_dir (e.g. --config.data.data_dir=/path/to/data) or ${DATA_DIR_ENV} '
                     f'to a folder holding {expected}')
  root = Path(data_dir)
  for split, file in benchmark.files.items():
    path = root / benchmark.folder / file
    if not path.is_file():
      raise FileNotFoundError(f'{path}: no such file (dataset {name!r} reads its {split} split from '
                              f'{benchmark.folder}/{file} under data.data_dir {str(root)!r}; expected {expected})')
  return root


def _feature_index(corpus: Corpus, name: str) -> dict:
  """Ids of a categorical feature column (POS or chunk tags) from the training split: 0 is padding, 1 a value
  the training split never shows, then the training values in string order."""
  values = sorted({v for s in corpus.train for v in s.features[name]})
  return {v: k + 2 for k, v in enumerate(values)}


def _pad(sentences: list[Sentence], vocab: Vocabulary, index: TagIndex, width: int, features: dict) -> dict:
  n = len(sentences)
  x = np.full((n, width), PAD_ID, np.int32)
  y = np.full((n, width), -1, np.int32)
  out = {name: np.zeros((n, width), np.int32) for name in features}
  for i, s in enumerate(sentences):
    x[i, :len(s.tokens)] = vocab.encode(s.tokens)
    y[i, :len(s.tags)] = index.encode(s.tags)
    for name, ids in features.items():
      out[name][i, :len(s.tokens)] = _feature_ids(s, name, ids)
  return {'x': x, 'y': y, 'mask': (y >= 0).astype(np.float32), **out}


def encode(corpus: Corpus, lowercase: bool = False, min_count: int = 1, pretrained=None,
           features: tuple = ()) -> tuple[dict, Vocabulary, dict]:
  """``({split: {'x', 'y', 'mask', *features}}, vocabulary, feature sizes)``: the corpus as padded arrays
  (module doc). The vocabulary is the training split's; with ``pretrained`` (a set of lower-cased words with
  pretrained vectors) it adds the words of any split that the set holds, after the training words: their vectors
  are known without their tags, so a dev word with a GloVe vector is not UNK."""
  splits = corpus.splits()
  for split, sentences in splits.items():
    if not sentences:
      raise ValueError(f'the {split} split has no sentences')
  for name in features:
    if name not in FEATURES:
      raise ValueError(f'data.features: unknown feature {name!r}; choose from {FEATURES}')
    missing = [s.line for s in corpus.train if name not in s.features]
    if missing:
      raise ValueError(f'data.features: {name!r} is not a column of this dataset (first sentence without it '
                       f'starts on line {missing[0]}); NER+ features exist for conll2003 only')
  vocab = readers.build_vocabulary(corpus.train, lowercase=lowercase, min_count=min_count)
  if pretrained is not None:
    known = set(vocab.words)
    extra = sorted({t.lower() if lowercase else t for sentences in splits.values() for s in sentences
                    for t in s.tokens} - known)
    vocab = Vocabulary(vocab.words + tuple(w for w in extra if w.lower() in pretrained), lowercase)
  indices = feature_indices(corpus, features)
  sizes = {name: 3 if ids is None else len(ids) + 2 for name, ids in indices.items()}
  index = TagIndex(corpus.tags)
  width = max(len(s.tokens) for sentences in splits.values() for s in sentences)
  return {split: _pad(splits[split], vocab, index, width, indices) for split in SPLITS}, vocab, sizes


def feature_indices(corpus: Corpus, features: tuple) -> dict:
  """Each NER+ feature's value ids (``_feature_index``), None for ``caps`` (its ids are 1 + ``capitalised``)."""
  return {name: None if name == 'caps' else _feature_index(corpus, name) for name in features}


def encode_tokens(sentences: list[Sentence], vocab: Vocabulary, features: dict) -> dict:
  """Padded model inputs of unlabeled sentences (their ``tags`` are not read) as the run's arrays hold them:
  ``x``, ``mask`` and each feature of ``features`` (name -> value ids, None for ``caps``: what ``feature_indices``
  gave the run; a value the run never saw is id 1), as wide as the longest sentence."""
  n, width = len(sentences), max(len(s.tokens) for s in sentences)
  x = np.full((n, width), PAD_ID, np.int32)
  mask = np.zeros((n, width), np.float32)
  out = {name: np.zeros((n, width), np.int32) for name in features}
  for i, s in enumerate(sentences):
    x[i, :len(s.tokens)] = vocab.encode(s.tokens)
    mask[i, :len(s.tokens)] = 1.0
    for name, ids in features.items():
      out[name][i, :len(s.tokens)] = _feature_ids(s, name, ids)
  return {'x': x, 'mask': mask, **out}


def _feature_ids(s: Sentence, name: str, ids: dict | None) -> list[int]:
  # caps is 0/1 per token: stored as 1/2 so that 0 stays padding, like the other features.
  return [v + 1 for v in s.features[name]] if ids is None else [ids.get(v, 1) for v in s.features[name]]


class Loaded(NamedTuple):
  splits: dict
  info: dict
  tags: tuple
  vocab: Vocabulary
  feature_sizes: dict  # feature name -> ids it takes (padding 0 included)
  feature_ids: dict = {}  # feature name -> {value: id} (None for caps): what a new file's columns are mapped by


def load(name: str, data_dir: str = '', lowercase: bool = False, min_count: int = 1, pretrained=None,
         features: tuple = ()) -> Loaded:
  """``Loaded(splits, info, tags, vocab, feature_sizes)`` of benchmark ``name`` (module doc, ``encode``)."""
  if name not in DATASETS:
    raise ValueError(f'data.name: unknown tagging benchmark {name!r}; choose one of {sorted(DATASETS)}')
  if not isinstance(lowercase, bool):
    raise ValueError(f'data.lowercase must be True or False, got {lowercase!r}')
  if isinstance(min_count, bool) or not isinstance(min_count, int) or min_count < 1:
    raise ValueError(f'data.min_count must be a positive integer (1 = every training word), got {min_count!r}')
  benchmark = DATASETS[name]
  root = resolve_data_dir(name, data_dir)
  corpus = benchmark.loader(root)
  for split, sentences in corpus.splits().items():
    if not sentences:  # named here, where the file is known (encode's check has only the split)
      raise ValueError(f'{root / benchmark.folder / benchmark.files[split]}: no sentences (one token per line, a '
                       f'blank line after each sentence): dataset {name!r} reads its {split} split from this file')
  splits, vocab, sizes = encode(corpus, lowercase, min_count, pretrained, tuple(features))
  real = {split: arrays['mask'] > 0 for split, arrays in splits.items()}
  info = {
      'dataset': name,
      'description': benchmark.description,
      'files': [str(root / benchmark.folder / benchmark.files[split]) for split in SPLITS],
      'split_files': {split: f'{benchmark.folder}/{benchmark.files[split]}' for split in SPLITS},
      'sizes': {split: int(len(arrays['y'])) for split, arrays in splits.items()},  # sentences
      'tokens': {split: int(r.sum()) for split, r in real.items()},
      'max_length': {split: int(r.sum(axis=1).max()) for split, r in real.items()},
      'unknown_tokens': {split: float(np.mean(splits[split]['x'][r] == UNK_ID)) for split, r in real.items()},
      'vocab_size': len(vocab),  # word ids, PAD and UNK included
      'vocab_from_pretrained': len(vocab) - len(readers.build_vocabulary(corpus.train, lowercase, min_count)),
      'features': {name: int(n) for name, n in sizes.items()},
      'lowercase': bool(lowercase),
      'min_count': int(min_count),
      'num_tags': len(corpus.tags),
      'tags': list(corpus.tags),
  }
  return Loaded(splits, info, tuple(corpus.tags), vocab, sizes, feature_indices(corpus, tuple(features)))
