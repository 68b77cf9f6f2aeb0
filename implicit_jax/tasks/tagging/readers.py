"""Readers for sequence-labeling data in CoNLL-style column files, IOB1 -> BIOES conversion, word and tag indices.

Formats
-------
**Column files.** One token per line, its fields in columns; a blank (or whitespace-only) line ends a sentence.
``read_conll`` reads any such file given the column names; the first column holds the tokens.

* **CoNLL-2003** (``eng.train``, ``eng.testa``, ``eng.testb``): ``token POS chunk NER`` separated by single
  spaces; chunk and NER tags in IOB1. ``-DOCSTART-`` lines separate documents: such a line ends the current
  sentence and is dropped, so it never becomes (part of) a sentence; the blank line after it is then just an
  extra separator. (The files here have 946 / 216 / 231 of them; in each, one is the very last line, without a
  trailing newline.)
* **Twitter POS** (Gimpel et al. 2011, Owoputi et al. 2013): ``token<TAB>tag``, a blank line between tweets,
  25 coarse tags (``TWITTER_POS_TAGS``). Tokens may hold any character but a tab (emoticons, URLs, a CJK
  bracket glued to a word; oct27.train and oct27.dev have tokens that are one no-break space, tagged ``G``),
  so this format is split on tabs only and tokens are kept verbatim.

Text is UTF-8 (a BOM is dropped; a trailing ``\\r`` of Windows line endings is ignored). Every error about the
content is a ``ValueError`` whose message starts with ``PATH:LINE:`` (1-based) and says what was expected; a
missing file is a ``FileNotFoundError`` naming the path.

Tags
----
CoNLL-2003 NER is IOB1: a chunk starts with ``I-`` and ``B-`` appears only on the first token of a chunk that
directly follows a chunk of the same type. ``iob1_to_bioes`` rewrites it as BIOES (``B-`` first, ``I-`` middle,
``E-`` last token of a multi-token chunk, ``S-`` a single-token chunk, ``O``), whose every tag says where its
token sits in its chunk: a first-order tag model then sees chunk boundaries that IOB1 hides. 4 types give the
17 labels of ``CONLL2003_BIOES_TAGS``. Chunks and the chunk F1 are in ``chunks.py``.

Indices
-------
``Vocabulary``: word ids ``PAD_ID = 0`` (padding, as the tagging networks expect), ``UNK_ID = 1`` (a word not
in the vocabulary), then the training words. ``TagIndex``: tag ids ``0..C-1`` in a fixed order; tags have no
padding id, padded positions are masked instead.
"""

from __future__ import annotations

import codecs
import collections
import dataclasses
from os import PathLike
from pathlib import Path
from typing import Collection, Iterable, NamedTuple, Sequence

import numpy as np

from implicit_jax.tasks.tagging.chunks import bioes_to_chunks

__all__ = [
    'CONLL2003_BIOES_TAGS',
    'CONLL2003_COLUMNS',
    'CONLL2003_IOB1_TAGS',
    'CONLL2003_TYPES',
    'Corpus',
    'PAD_ID',
    'Sentence',
    'TWITTER_POS_TAGS',
    'TagIndex',
    'UNK_ID',
    'Vocabulary',
    'bioes_to_chunks',
    'build_vocabulary',
    'capitalised',
    'iob1_to_bioes',
    'load_conll2003',
    'load_twitter_pos',
    'read_conll',
    'read_conll2003',
    'read_twitter_pos',
    'read_unlabeled',
    'sniff_format',
]

StrPath = str | PathLike

DOCSTART = '-DOCSTART-'
PAD_ID = 0
UNK_ID = 1

# The 25 coarse tags of Gimpel et al. (2011), Table 1, in its order: nominal (N O ^ S Z L M), other open-class
# (V A R !), closed-class (D P & T X Y), Twitter-specific (# @ ~ U E) and miscellaneous ($ , G).
TWITTER_POS_TAGS = tuple('NO^SZLMVAR!DP&TXY#@~UE$,G')

CONLL2003_COLUMNS = ('token', 'pos', 'chunk', 'ner')
CONLL2003_TYPES = ('PER', 'LOC', 'ORG', 'MISC')
CONLL2003_IOB1_TAGS = ('O',) + tuple(f'{p}-{t}' for t in CONLL2003_TYPES for p in 'BI')
CONLL2003_BIOES_TAGS = ('O',) + tuple(f'{p}-{t}' for t in CONLL2003_TYPES for p in 'BIES')

# InfNet's Twitter POS setting: oct27 train + dev to train, oct27 test as dev, daily547 as test.
TWITTER_POS_FILES = {'train': 'oct27.traindev', 'dev': 'oct27.test', 'test': 'daily547.conll'}
CONLL2003_FILES = {'train': 'eng.train', 'dev': 'eng.testa', 'test': 'eng.testb'}


class Sentence(NamedTuple):
  """One sentence (tweet): its tokens, their tags, the 1-based file line of its first token (for messages about
  it), and its other columns (and derived features) by name, one entry per token."""

  tokens: tuple[str, ...]
  tags: tuple[str, ...]
  line: int
  features: dict


class Corpus(NamedTuple):
  """Train / dev / test sentences and the tag set, in the fixed order of the task's tag ids."""

  train: list[Sentence]
  dev: list[Sentence]
  test: list[Sentence]
  tags: tuple[str, ...]

  def splits(self) -> dict[str, list[Sentence]]:
    return {'train': self.train, 'dev': self.dev, 'test': self.test}


# --------------------------------------------------------------------------------------------------------------
# Column files
# --------------------------------------------------------------------------------------------------------------


def _read_lines(path: Path) -> list[str]:
  data = path.read_bytes()
  if data.startswith(codecs.BOM_UTF8):
    data = data[len(codecs.BOM_UTF8):]
  try:
    text = data.decode('utf-8')
  except UnicodeDecodeError as e:
    line = data[:e.start].count(b'\n') + 1
    raise ValueError(f'{path}:{line}: not UTF-8 text (byte 0x{data[e.start]:02x})') from None
  # split('\n'), not splitlines(): the latter also splits on \x1c, \x85, \u2028, ..., which may occur inside
  # a tweet's token, and would shift every later line number.
  return [line[:-1] if line.endswith('\r') else line for line in text.split('\n')]


def _expected_tags(tags: Collection[str]) -> str:
  shown = ' '.join(sorted(tags)) if len(tags) <= 30 else f'{len(tags)} known tags'
  return f'one of {shown}'


def read_conll(path: StrPath, columns: Sequence[str], tag_column: str, *, separator: str | None = None,
               tags: Collection[str] | None = None, docstart: bool = True) -> list[Sentence]:
  """The sentences of a column file, in file order.

  ``columns`` names the columns in file order (the first holds the tokens); ``tag_column`` is the one that
  becomes ``Sentence.tags``, the others go to ``Sentence.features``. ``separator``: ``None`` splits on runs of
  whitespace (CoNLL-2003), ``'\\t'`` on single tabs (Twitter POS: a field may then be empty, which is an
  error). ``tags``: the allowed values of the tag column (any non-empty string if None). ``docstart``: drop
  ``-DOCSTART-`` lines, each ending the current sentence.
  """
  columns = tuple(columns)
  if tag_column not in columns[1:]:
    raise ValueError(f'tag_column {tag_column!r} must be one of the non-token columns {columns[1:]}')
  tag_at = columns.index(tag_column)
  allowed = None if tags is None else frozenset(tags)
  split_on = 'whitespace' if separator is None else 'tab' if separator == '\t' else repr(separator)
  layout = f'{len(columns)} {split_on}-separated columns ({" ".join(columns)})'
  sentences: list[Sentence] = []
  rows: list[list[str]] = []
  first = 0

  def flush():
    if rows:
      fields = list(zip(*rows))
      features = {name: fields[j] for j, name in enumerate(columns) if j not in (0, tag_at)}
      sentences.append(Sentence(fields[0], fields[tag_at], first, features))
      rows.clear()

  path = Path(path)
  for i, line in enumerate(_read_lines(path)):
    lineno = i + 1
    if not line.strip():
      flush()
      continue
    if docstart and line.startswith(DOCSTART):
      flush()
      continue
    fields = line.split(separator)
    if len(fields) != len(columns):
      raise ValueError(f'{path}:{lineno}: expected {layout}, got {len(fields)}: {line!r}')
    for name, value in zip(columns, fields):
      if not value:  # only a tab-separated field can be empty; a whitespace one (NBSP) is a real token
        raise ValueError(f'{path}:{lineno}: empty {name} field: {line!r}')
    tag = fields[tag_at]
    if allowed is not None and tag not in allowed:
      raise ValueError(f'{path}:{lineno}: {tag_column} tag {tag!r} is not valid; expected '
                       f'{_expected_tags(allowed)}')
    if not rows:
      first = lineno
    rows.append(fields)
  flush()
  return sentences


# Text to tag (the predict command line): CoNLL-style columns or raw text.
INPUT_FORMATS = ('auto', 'conll', 'text')


def sniff_format(lines: Sequence[str]) -> str:
  """'conll' or 'text' for ``input_format='auto'``: a column file has a tab or a ``-DOCSTART-`` line, or the same
  number of whitespace-separated fields on every line and a blank line between sentences; anything else is raw
  text (one sentence per line, whose lines vary in length)."""
  body = [line for line in lines if line.strip()]
  if any('\t' in line or line.startswith(DOCSTART) for line in body):
    return 'conll'
  filled = [i for i, line in enumerate(lines) if line.strip()]
  separated = bool(filled) and len(filled) < filled[-1] - filled[0] + 1  # a blank line between two non-blank ones
  return 'conll' if separated and len({len(line.split()) for line in body}) == 1 else 'text'


def read_unlabeled(path: StrPath, input_format: str = 'auto') -> tuple[list[Sentence], str]:
  """Sentences to tag and the format they were read in (``INPUT_FORMATS``; 'auto' is ``sniff_format``).

  ``conll``: one token per line in the first column, a blank line between sentences, ``-DOCSTART-`` lines dropped;
  columns split on tabs when the file has one (Twitter POS: a token may hold a space), else on whitespace; every
  column after the first is kept in ``Sentence.features['columns']`` (one tuple of fields per token), an existing
  tag column included, for the caller to use or ignore. ``text``: one sentence per line, tokens split on
  whitespace; blank lines are skipped. ``tags`` are empty and ``line`` is the sentence's first line.
  """
  if input_format not in INPUT_FORMATS:
    raise ValueError(f'--format: unknown input format {input_format!r}; choose one of {INPUT_FORMATS}')
  path = Path(path)
  if path.is_dir():
    raise IsADirectoryError(f'{path}: a folder, not a file of sentences to tag')
  if not path.is_file():
    raise FileNotFoundError(f'{path}: no such file')
  lines = _read_lines(path)
  fmt = sniff_format(lines) if input_format == 'auto' else input_format
  sentences: list[Sentence] = []
  if fmt == 'text':
    for i, line in enumerate(lines):
      if line.strip():
        sentences.append(Sentence(tuple(line.split()), (), i + 1, {}))
    return sentences, fmt
  separator = '\t' if any('\t' in line for line in lines) else None
  rows: list[list[str]] = []
  first = 0
  width = None  # the number of columns of the first token line: every token line of a CoNLL file has as many
  for i, line in enumerate(lines + ['']):
    if not line.strip() or line.startswith(DOCSTART):
      if rows:
        sentences.append(Sentence(tuple(r[0] for r in rows), (), first, {'columns': tuple(tuple(r[1:]) for r in rows)}))
        rows = []
      continue
    fields = line.split(separator)
    if not fields[0]:
      raise ValueError(f'{path}:{i + 1}: empty token field: {line!r} (a CoNLL line starts with its token)')
    width = width or (len(fields), i + 1)
    if len(fields) != width[0]:
      # Raw text read as columns would tag the first word of each line and drop the rest, silently.
      raise ValueError(f'{path}:{i + 1}: {len(fields)} columns where line {width[1]} has {width[0]}: a CoNLL file '
                       'has one token per line and the same columns on every line; raw text, a sentence per line? '
                       'give --format=text')
    if not rows:
      first = i + 1
    rows.append(fields)
  body = lines[:-1] if lines and not lines[-1] else lines  # the empty string after a final newline is no line
  if width and width[0] > 1 and not any(line.startswith(DOCSTART) or not line.strip() for line in body):
    count = len(sentences[0].tokens)
    raise ValueError(f'{path}: {count} line{"s" * (count > 1)} of {width[0]} columns and no blank line: a CoNLL file '
                     'puts a blank line after each sentence (the last one too); raw text, a sentence per line? give '
                     '--format=text')
  return sentences, fmt


# --------------------------------------------------------------------------------------------------------------
# Tag schemes
# --------------------------------------------------------------------------------------------------------------


def _split_iob1(tag: str, i: int) -> tuple[str, str]:
  if tag == 'O':
    return 'O', ''
  if len(tag) < 3 or tag[0] not in 'BI' or tag[1] != '-':
    raise ValueError(f'tag {i}: {tag!r} is not an IOB1 tag: expected O, B-TYPE or I-TYPE')
  return tag[0], tag[2:]


def iob1_to_bioes(tags: Sequence[str]) -> list[str]:
  """IOB1 -> BIOES. A token starts a chunk if it is ``B-``, or ``I-X`` after ``O`` or after another type; it
  continues its chunk if the next token is ``I-`` of the same type (a ``B-`` there starts a new chunk). A ``B-``
  that does not follow its own type (not IOB1, but what IOB2 writes) is read as a start, as conlleval does.
  """
  parsed = [_split_iob1(tag, i) for i, tag in enumerate(tags)]
  out = []
  for i, (prefix, kind) in enumerate(parsed):
    if prefix == 'O':
      out.append('O')
      continue
    starts = prefix == 'B' or i == 0 or parsed[i - 1][1] != kind  # parsed[i - 1] is O or another type
    nxt = parsed[i + 1] if i + 1 < len(parsed) else ('O', '')
    continues = nxt == ('I', kind)
    out.append(('B' if continues else 'S') + '-' + kind if starts else ('I' if continues else 'E') + '-' + kind)
  return out


def capitalised(token: str) -> int:
  """1 if the token's first character is an upper-case letter, else 0: the casing feature of NER+ (the word
  lookup may be lower-cased, e.g. for GloVe, and this keeps the one casing cue that matters most for names)."""
  return int(token[:1].isupper())


# --------------------------------------------------------------------------------------------------------------
# The two benchmarks
# --------------------------------------------------------------------------------------------------------------


def read_twitter_pos(path: StrPath) -> list[Sentence]:
  """Tweets of a Twitter POS ``.conll``-format file, tags checked against ``TWITTER_POS_TAGS``."""
  return read_conll(path, ('token', 'pos'), 'pos', separator='\t', tags=TWITTER_POS_TAGS, docstart=False)


def read_conll2003(path: StrPath) -> list[Sentence]:
  """Sentences of a CoNLL-2003 file with NER tags in BIOES; ``features`` keeps ``pos`` and ``chunk`` (chunk
  tags as in the file, IOB1) and adds ``caps`` (``capitalised`` per token)."""
  sentences = read_conll(path, CONLL2003_COLUMNS, 'ner', tags=CONLL2003_IOB1_TAGS)
  out = []
  for s in sentences:
    features = dict(s.features, caps=tuple(capitalised(t) for t in s.tokens))
    out.append(s._replace(tags=tuple(iob1_to_bioes(s.tags)), features=features))
  return out


def load_twitter_pos(data_dir: StrPath) -> Corpus:
  """InfNet's Twitter POS splits from ``data_dir/twitter_pos``: train = oct27.traindev (1000 + 327 tweets),
  dev = oct27.test (500), test = daily547.conll (547)."""
  root = Path(data_dir) / 'twitter_pos'
  splits = {split: read_twitter_pos(root / name) for split, name in TWITTER_POS_FILES.items()}
  return Corpus(**splits, tags=TWITTER_POS_TAGS)


def load_conll2003(data_dir: StrPath) -> Corpus:
  """CoNLL-2003 English NER from ``data_dir/conll2003``: train = eng.train, dev = eng.testa, test = eng.testb;
  BIOES tags (``CONLL2003_BIOES_TAGS``)."""
  root = Path(data_dir) / 'conll2003'
  splits = {split: read_conll2003(root / name) for split, name in CONLL2003_FILES.items()}
  return Corpus(**splits, tags=CONLL2003_BIOES_TAGS)


# --------------------------------------------------------------------------------------------------------------
# Indices
# --------------------------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Vocabulary:
  """Word ids: ``PAD_ID`` 0, ``UNK_ID`` 1, then ``words[k]`` has id ``k + 2``. With ``lowercase`` every lookup
  lower-cases the word first (the words are stored lower-cased), as a lower-cased embedding table needs."""

  words: tuple[str, ...]
  lowercase: bool = False

  def __post_init__(self):
    words = tuple(self.words)
    index = {word: k + 2 for k, word in enumerate(words)}
    if len(index) != len(words):
      raise ValueError('Vocabulary: duplicate words')
    object.__setattr__(self, 'words', words)
    object.__setattr__(self, '_index', index)

  def __len__(self) -> int:
    return len(self.words) + 2

  def id(self, word: str) -> int:
    return self._index.get(word.lower() if self.lowercase else word, UNK_ID)

  def encode(self, tokens: Iterable[str]) -> np.ndarray:
    return np.asarray([self.id(t) for t in tokens], dtype=np.int32)


def build_vocabulary(sentences: Iterable[Sentence], lowercase: bool = False, min_count: int = 1) -> Vocabulary:
  """The words seen at least ``min_count`` times in ``sentences`` (the training split: a dev or test word
  must be unknown to the model), most frequent first, ties in string order, so that ids are reproducible."""
  counts = collections.Counter(t.lower() if lowercase else t for s in sentences for t in s.tokens)
  words = sorted((w for w, c in counts.items() if c >= min_count), key=lambda w: (-counts[w], w))
  return Vocabulary(tuple(words), lowercase)


@dataclasses.dataclass(frozen=True)
class TagIndex:
  """Tag ids ``0..len(tags)-1`` in the order of ``tags``; an unknown tag is an error, not a silent id."""

  tags: tuple[str, ...]

  def __post_init__(self):
    tags = tuple(self.tags)
    index = {tag: k for k, tag in enumerate(tags)}
    if len(index) != len(tags):
      raise ValueError('TagIndex: duplicate tags')
    object.__setattr__(self, 'tags', tags)
    object.__setattr__(self, '_index', index)

  def __len__(self) -> int:
    return len(self.tags)

  def id(self, tag: str) -> int:
    try:
      return self._index[tag]
    except KeyError:
      raise ValueError(f'unknown tag {tag!r}: expected {_expected_tags(self.tags)}') from None

  def encode(self, tags: Iterable[str]) -> np.ndarray:
    return np.asarray([self.id(t) for t in tags], dtype=np.int32)

  def decode(self, ids: Iterable[int]) -> tuple[str, ...]:
    return tuple(self.tags[int(k)] for k in np.asarray(ids).reshape(-1))
