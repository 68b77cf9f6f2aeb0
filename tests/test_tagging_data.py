"""Sequence-labeling data: the CoNLL-2003 and Twitter POS readers, IOB1 -> BIOES, word and tag indices, and the
chunk F1 (checked against the independent ``seqeval`` package on random, partly ill-formed sequences).

Fixtures in tests/fixtures/tagging (see its README.md): the first 5 tweets of Twitter POS oct27.train (CC-BY),
and a hand-written CoNLL-2003-format file with made-up sentences (CoNLL-2003 text itself may not be copied here).
The real-data tests at the end skip when ../shared/data is absent.
"""

import re
import warnings
from pathlib import Path

import numpy as np
import pytest

from implicit_jax.tasks.tagging import chunks
from implicit_jax.tasks.tagging.chunks import bioes_to_chunks, chunk_f1, conlleval_chunks, split_tag
from implicit_jax.tasks.tagging.readers import (
    CONLL2003_BIOES_TAGS,
    PAD_ID,
    TWITTER_POS_TAGS,
    UNK_ID,
    TagIndex,
    build_vocabulary,
    capitalised,
    iob1_to_bioes,
    load_conll2003,
    load_twitter_pos,
    read_conll,
    read_conll2003,
    read_twitter_pos,
)
from tests.test_arff import shared_data

FIXTURES = Path(__file__).resolve().parent / 'fixtures' / 'tagging'
TWEETS = FIXTURES / 'twitter_pos_oct27_train_cut.conll'
CONLL = FIXTURES / 'conll2003_synthetic.txt'


def write(tmp_path: Path, name: str, text: str) -> Path:
  path = tmp_path / name
  path.write_text(text, encoding='utf-8')
  return path


def tagging_data(folder: str) -> Path:
  """``shared_data()`` (which skips without it), also skipping when its ``folder`` is missing."""
  root = shared_data()
  if not (root / folder).is_dir():
    pytest.skip(f'shared data has no {folder}: {root}')
  return root


# --------------------------------------------------------------------------------------------------------------
# IOB1 -> BIOES and chunks, by hand
# --------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize('iob1, bioes', [
    ([], []),
    (['O', 'O'], ['O', 'O']),
    (['I-PER'], ['S-PER']),                                                     # single token -> S-
    (['I-ORG', 'I-ORG', 'I-ORG'], ['B-ORG', 'I-ORG', 'E-ORG']),                 # multi-token -> B- I- E-
    (['I-PER', 'I-PER', 'O', 'I-LOC'], ['B-PER', 'E-PER', 'O', 'S-LOC']),
    (['I-PER', 'B-PER', 'I-PER'], ['S-PER', 'B-PER', 'E-PER']),                 # B-: same type directly after
    (['I-ORG', 'I-ORG', 'B-ORG', 'I-ORG'], ['B-ORG', 'E-ORG', 'B-ORG', 'E-ORG']),
    (['I-PER', 'B-PER', 'B-PER'], ['S-PER', 'S-PER', 'S-PER']),
    (['I-MISC', 'I-PER', 'I-PER'], ['S-MISC', 'B-PER', 'E-PER']),               # a type change starts a chunk
    (['O', 'B-LOC', 'I-LOC', 'O'], ['O', 'B-LOC', 'E-LOC', 'O']),               # IOB2-style B- after O: a start
])
def test_iob1_to_bioes_by_hand(iob1, bioes):
  assert iob1_to_bioes(iob1) == bioes
  # the chunks are the ones IOB1 means: checked with seqeval's conlleval-style reader of IOB1, if present
  try:
    from seqeval.metrics.sequence_labeling import get_entities
  except ImportError:
    return
  assert bioes_to_chunks(bioes) == [(t, s, e + 1) for t, s, e in get_entities(list(iob1))]


def test_iob1_to_bioes_rejects_other_tags():
  for bad in (['X-PER'], ['I-'], ['o'], ['S-PER'], ['I_PER']):
    with pytest.raises(ValueError, match='is not an IOB1 tag'):
      iob1_to_bioes(['O'] + bad)


def test_seventeen_bioes_labels():
  assert len(CONLL2003_BIOES_TAGS) == 17 and CONLL2003_BIOES_TAGS[0] == 'O'
  assert len(set(CONLL2003_BIOES_TAGS)) == 17
  assert len(TWITTER_POS_TAGS) == 25 and len(set(TWITTER_POS_TAGS)) == 25


@pytest.mark.parametrize('tags, expected', [
    (['B-PER', 'I-PER', 'E-PER', 'O', 'S-LOC'], [('PER', 0, 3), ('LOC', 4, 5)]),
    (['S-PER', 'S-PER'], [('PER', 0, 1), ('PER', 1, 2)]),
    # ill-formed runs make no chunk (seqeval strict IOBES):
    (['I-PER', 'E-PER'], []),                                   # no B-
    (['O', 'E-LOC'], []),
    (['B-PER', 'I-PER'], []),                                   # never closed
    (['B-PER', 'E-LOC'], []),                                   # closed by another type
    (['B-PER', 'I-PER', 'S-LOC'], [('LOC', 2, 3)]),             # the breaking tag is read afresh
    (['B-PER', 'B-PER', 'E-PER'], [('PER', 1, 3)]),
    (['B-PER', 'E-PER', 'E-PER'], [('PER', 0, 2)]),             # nothing extends a closed chunk
    (['S-LOC', 'I-LOC', 'E-LOC'], [('LOC', 0, 1)]),
])
def test_bioes_to_chunks_by_hand(tags, expected):
  assert bioes_to_chunks(tags) == expected


def test_split_tag_rejects_malformed_tags():
  assert split_tag('O') == ('O', '') and split_tag('E-MISC') == ('E', 'MISC')
  for bad in ('B', 'B-', 'X-PER', 'BPER', 'o', ''):
    with pytest.raises(ValueError, match='is not a BIOES tag'):
      bioes_to_chunks(['O', bad])


# --------------------------------------------------------------------------------------------------------------
# Readers on the fixtures
# --------------------------------------------------------------------------------------------------------------


def test_twitter_fixture():
  tweets = read_twitter_pos(TWEETS)
  assert len(tweets) == 5
  assert [t.line for t in tweets] == [1, 34, 46, 57, 68]
  assert [len(t.tokens) for t in tweets] == [32, 11, 10, 10, 13]
  first = tweets[0]
  assert first.tokens[:4] == ('I', 'predict', 'I', "won't") and first.tags[:4] == ('O', 'V', 'O', 'V')
  assert first.tokens[-1] == 'http://tl.gd/6meogh' and first.tags[-1] == 'U'
  assert '\u300bhave' in tweets[2].tokens  # kept verbatim, the CJK bracket glued to the word and all
  assert all(len(t.tokens) == len(t.tags) for t in tweets) and tweets[0].features == {}


def test_conll_fixture_docstart_and_bioes():
  sentences = read_conll2003(CONLL)
  assert len(sentences) == 4
  assert [s.line for s in sentences] == [3, 11, 19, 22]
  assert not any(tok.startswith('-DOCSTART-') for s in sentences for tok in s.tokens)
  assert sentences[0].tokens[:2] == ('Marta', 'Okafor')
  assert sentences[0].tags == ('B-PER', 'E-PER', 'O', 'S-LOC', 'O', 'O', 'O')
  assert sentences[1].tags == ('B-ORG', 'E-ORG', 'B-ORG', 'E-ORG', 'O')  # the B-ORG case
  assert sentences[2].tags == ('S-ORG', 'O')
  assert sentences[3].tags == ('O', 'S-MISC', 'B-PER', 'E-PER', 'O', 'O')
  s = sentences[1]
  assert s.features['pos'] == ('NNP', 'NNPS', 'NNP', 'NNP', 'CD')
  assert s.features['chunk'] == ('I-NP', 'I-NP', 'B-NP', 'I-NP', 'I-NP')
  assert sentences[0].features['caps'] == (1, 1, 0, 1, 0, 1, 0)
  assert sentences[2].features['caps'] == (1, 0)  # QUORVEX, 1999-01-05
  assert capitalised('') == 0 and capitalised('émile') == 0 and capitalised('Émile') == 1


def test_docstart_is_always_a_boundary_never_a_sentence(tmp_path):
  # As in the real files: a -DOCSTART- at the very end without a newline; also one with no blank line around it.
  text = ('-DOCSTART- -X- O O\n\nA NN I-NP O\nB NN I-NP I-PER\n-DOCSTART- -X- O O\nC NN I-NP O\n\n\n\n'
          'D NN I-NP I-LOC\n\n-DOCSTART- -X- O O')
  sentences = read_conll2003(write(tmp_path, 'docs.txt', text))
  assert [s.tokens for s in sentences] == [('A', 'B'), ('C',), ('D',)]
  assert [s.line for s in sentences] == [3, 6, 10]
  assert [s.tags for s in sentences] == [('O', 'S-PER'), ('O',), ('S-LOC',)]
  # With docstart=False (as the Twitter reader reads) the line is an ordinary token line.
  raw = read_conll(write(tmp_path, 'raw.txt', '-DOCSTART- -X- O O\n\nA NN I-NP O\n'), ('token', 'pos', 'chunk', 'ner'),
                   'ner', docstart=False)
  assert raw[0].tokens == ('-DOCSTART-',)


def test_windows_line_endings_and_bom(tmp_path):
  path = tmp_path / 'crlf.txt'
  path.write_bytes(b'\xef\xbb\xbfA NN I-NP I-PER\r\nB NN I-NP I-PER\r\n\r\nC NN I-NP O\r\n')
  sentences = read_conll2003(path)
  assert [s.tags for s in sentences] == [('B-PER', 'E-PER'), ('O',)] and [s.line for s in sentences] == [1, 4]


# --------------------------------------------------------------------------------------------------------------
# Malformed input: the message names the file and the 1-based line, and what was expected
# --------------------------------------------------------------------------------------------------------------


def test_conll_errors_name_file_and_line(tmp_path):
  good = 'EU NNP I-NP I-ORG\nsaid VBD I-VP O\n\n'  # lines 1-3
  cases = {
      'columns.txt': ('Bonn NNP I-LOC\n',
                      ":4: expected 4 whitespace-separated columns (token pos chunk ner), got 3: 'Bonn NNP I-LOC'"),
      'type.txt': ('Bonn NNP I-NP I-CITY\n', ":4: ner tag 'I-CITY' is not valid; expected one of B-LOC B-MISC"),
      'bioes.txt': ('Bonn NNP I-NP S-LOC\n', ":4: ner tag 'S-LOC' is not valid"),
      'shape.txt': ('Bonn NNP I-NP I_LOC\n', ":4: ner tag 'I_LOC' is not valid"),
  }
  for name, (line, message) in cases.items():
    path = write(tmp_path, name, good + line)
    with pytest.raises(ValueError) as err:
      read_conll2003(path)
    assert f'{path}{message}' in str(err.value), str(err.value)


def test_twitter_errors_name_file_and_line(tmp_path):
  good = 'hello\t!\nworld\tN\n\n'  # lines 1-3
  cases = {
      'empty.conll': ('x\tN\n\tN\n', ":5: empty token field: '\\tN'"),
      'three.conll': ('x\tN\textra\n', ':4: expected 2 tab-separated columns (token pos), got 3'),
      'spaces.conll': ('x N\n', ":4: expected 2 tab-separated columns (token pos), got 1: 'x N'"),
      'notag.conll': ('x\t\n', ":4: empty pos field"),
      'tag.conll': ('x\tNN\n', ":4: pos tag 'NN' is not valid; expected one of ! # $ & , @ A D E G L M N O P R S T U"),
  }
  for name, (line, message) in cases.items():
    path = write(tmp_path, name, good + line)
    with pytest.raises(ValueError) as err:
      read_twitter_pos(path)
    assert f'{path}{message}' in str(err.value), str(err.value)


def test_encoding_and_missing_file_errors(tmp_path):
  path = tmp_path / 'latin1.conll'
  path.write_bytes(b'ok\tN\n\ncaf\xe9\tN\n')
  with pytest.raises(ValueError, match=re.escape(f'{path}:3: not UTF-8 text (byte 0xe9)')):
    read_twitter_pos(path)
  with pytest.raises(FileNotFoundError, match='absent.conll'):
    read_twitter_pos(tmp_path / 'absent.conll')
  with pytest.raises(ValueError, match='tag_column'):
    read_conll(TWEETS, ('token', 'pos'), 'token')


# --------------------------------------------------------------------------------------------------------------
# Indices
# --------------------------------------------------------------------------------------------------------------


def test_vocabulary_ids():
  tweets = read_twitter_pos(TWEETS)
  vocab = build_vocabulary(tweets)
  # Most frequent first ('I' 5 times; ',' ':' 'RT' 3 times each, ties in string order), ids from 2.
  assert PAD_ID == 0 and UNK_ID == 1 and vocab.words[:4] == ('I', ',', ':', 'RT') and vocab.id('I') == 2
  assert len(vocab) == len(set(t for s in tweets for t in s.tokens)) + 2
  assert vocab.id('never-seen') == UNK_ID and vocab.id('i') == UNK_ID
  ids = vocab.encode(tweets[0].tokens)
  assert ids.dtype == np.int32 and (ids >= 2).all() and [vocab.words[k - 2] for k in ids] == list(tweets[0].tokens)
  lower = build_vocabulary(tweets, lowercase=True)
  assert lower.id('I') == lower.id('i') != UNK_ID and lower.id('THANKS') == lower.id('thanks') != UNK_ID
  assert len(lower) <= len(vocab) and all(w == w.lower() for w in lower.words)
  rare = build_vocabulary(tweets, min_count=2)
  assert all(sum(t == w for s in tweets for t in s.tokens) >= 2 for w in rare.words) and 'I' in rare.words


def test_tag_index():
  index = TagIndex(CONLL2003_BIOES_TAGS)
  ids = index.encode(['O', 'B-PER', 'E-PER', 'S-MISC'])
  assert ids.dtype == np.int32 and ids.tolist() == [0, 1, 3, 16]
  assert index.decode(ids) == ('O', 'B-PER', 'E-PER', 'S-MISC') and len(index) == 17
  with pytest.raises(ValueError, match="unknown tag 'I-FOO'"):
    index.id('I-FOO')
  with pytest.raises(ValueError, match='duplicate'):
    TagIndex(('O', 'O'))


# --------------------------------------------------------------------------------------------------------------
# Chunk F1
# --------------------------------------------------------------------------------------------------------------


def test_chunk_f1_by_hand():
  gold = [['B-PER', 'E-PER', 'O', 'S-LOC'], ['S-ORG', 'O'], ['O']]
  pred = [['B-PER', 'E-PER', 'O', 'S-ORG'], ['B-ORG', 'E-ORG'], ['I-PER']]  # 1 right, 1 wrong type, 1 wrong end
  m = chunk_f1(gold, pred, scheme='strict')
  assert (m['num_gold'], m['num_pred'], m['num_correct']) == (3, 3, 1)
  assert m['precision'] == m['recall'] == m['f1'] == pytest.approx(1 / 3)
  ill = chunk_f1(gold, [['B-PER', 'I-PER', 'O', 'S-LOC'], ['I-ORG', 'O'], ['O']], scheme='strict')  # no chunk
  assert (ill['num_pred'], ill['num_correct'], ill['precision'], ill['recall']) == (1, 1, 1.0, 1 / 3)
  assert ill['f1'] == pytest.approx(0.5)
  none = chunk_f1([['O']], [['O']], scheme='strict')
  assert none == {'precision': 0.0, 'recall': 0.0, 'f1': 0.0, 'num_gold': 0, 'num_pred': 0, 'num_correct': 0}
  # tag ids, e.g. argmax rows cut to their lengths
  index = TagIndex(CONLL2003_BIOES_TAGS)
  assert chunk_f1([index.encode(g) for g in gold], [index.encode(p) for p in pred], CONLL2003_BIOES_TAGS,
                  scheme='strict') == m
  with pytest.raises(ValueError, match='sentence 1: 2 gold tags but 1 predicted'):
    chunk_f1(gold, [pred[0], ['O'], pred[2]], scheme='conlleval')
  with pytest.raises(ValueError, match='3 gold sequences but 2 predicted'):
    chunk_f1(gold, pred[:2], scheme='strict')


def random_sequences(rng: np.random.Generator, n: int, types=('PER', 'LOC', 'ORG')) -> list[list[str]]:
  """Half well-formed (random chunks in O), half tags drawn independently (mostly ill-formed), lengths 0..14."""
  seqs = []
  for k in range(n):
    length = int(rng.integers(0, 15))
    if k % 2:
      alphabet = ['O'] + [f'{p}-{t}' for t in types for p in 'BIES']
      seqs.append([alphabet[i] for i in rng.integers(0, len(alphabet), length)])
      continue
    tags, i = [], 0
    while i < length:
      span = int(rng.integers(1, 5))
      if rng.random() < 0.4 or i + span > length:
        tags.append('O')
        i += 1
        continue
      kind = types[rng.integers(len(types))]
      tags += [f'S-{kind}'] if span == 1 else [f'B-{kind}'] + [f'I-{kind}'] * (span - 2) + [f'E-{kind}']
      i += span
    seqs.append(tags)
  return seqs


def perturb(rng: np.random.Generator, tags: list[str]) -> list[str]:
  """A prediction near ``tags``: a few positions replaced by random tags (so many chunks are still right)."""
  alphabet = ['O'] + [f'{p}-{t}' for t in ('PER', 'LOC', 'ORG') for p in 'BIES']
  out = list(tags)
  for i in range(len(out)):
    if rng.random() < 0.15:
      out[i] = alphabet[rng.integers(len(alphabet))]
  return out


def predictions(rng: np.random.Generator, gold: list[list[str]]) -> list[list[str]]:
  """Mostly near the gold sequence (``perturb``), else random tags: the same draws as the tests made inline."""
  alphabet = ['O'] + [f'{p}-{t}' for t in ('PER', 'LOC', 'ORG') for p in 'BIES']
  return [perturb(rng, g) if rng.random() < 0.7 else [alphabet[i] for i in rng.integers(0, len(alphabet), len(g))]
          for g in gold]


def test_chunk_f1_matches_seqeval_strict_iobes():
  seqeval_metrics = pytest.importorskip('seqeval.metrics')
  from seqeval.scheme import IOBES, Tokens

  rng = np.random.default_rng(0)
  gold = random_sequences(rng, 400)
  pred = predictions(rng, gold)
  # Per sequence: the same chunks as seqeval's strict IOBES reader.
  for seq in gold + pred:
    theirs = [(e.tag, e.start, e.end) for e in Tokens(seq, IOBES).entities]
    assert bioes_to_chunks(seq) == theirs, seq
  assert sum(bioes_to_chunks(s) != [] for s in pred) > 100  # the comparison is not vacuous
  # Micro P/R/F1 on batches of 1..8 sentences and on all of them.
  starts = np.concatenate([[0], np.cumsum(rng.integers(1, 9, 120))])
  batches = [(gold[a:b], pred[a:b]) for a, b in zip(starts[:-1], starts[1:]) if a < len(gold)] + [(gold, pred)]
  with warnings.catch_warnings():
    warnings.simplefilter('ignore')  # seqeval warns where a denominator is 0 (and, like us, returns 0)
    for g, p in batches:
      ours = chunk_f1(g, p, scheme='strict')
      kwargs = dict(mode='strict', scheme=IOBES)
      assert ours['precision'] == pytest.approx(seqeval_metrics.precision_score(g, p, **kwargs), abs=1e-12)
      assert ours['recall'] == pytest.approx(seqeval_metrics.recall_score(g, p, **kwargs), abs=1e-12)
      assert ours['f1'] == pytest.approx(seqeval_metrics.f1_score(g, p, **kwargs), abs=1e-12)
  assert 0.2 < chunk_f1(gold, pred, scheme='strict')['f1'] < 0.9


def test_chunk_counts_are_exposed():
  assert chunks.chunk_counts([['S-PER', 'O']], [['S-PER', 'S-LOC']], scheme='strict') == (1, 2, 1)
  with pytest.raises(ValueError, match='scheme: unknown'):
    chunks.chunk_counts([['O']], [['O']], scheme='seqeval')


# conlleval: (gold, predicted, conlleval's counts, strict counts), each count (found correct, found guessed, correct
# chunks) as conlleval.pl printed it ("... with N phrases; found: M phrases; correct: K.") for that one sentence
# written as IOB2 (S- -> B-, E- -> I-), and as the strict reading gives it.
CONLLEVAL_BY_HAND = [
    (['O', 'B-PER', 'E-PER', 'O'], ['O', 'I-PER', 'E-PER', 'O'], (1, 1, 1), (1, 0, 0)),   # a stray I- opens a chunk
    (['O', 'B-PER', 'E-PER', 'O'], ['O', 'I-PER', 'I-PER', 'O'], (1, 1, 1), (1, 0, 0)),
    (['B-ORG', 'I-ORG', 'E-ORG'], ['B-ORG', 'I-LOC', 'E-ORG'], (1, 3, 0), (1, 0, 0)),     # types must match
    (['O', 'O', 'O'], ['I-MISC', 'O', 'E-LOC'], (0, 2, 0), (0, 0, 0)),                    # two false positives
    (['B-PER', 'E-PER', 'O'], ['B-PER', 'I-PER', 'O'], (1, 1, 1), (1, 0, 0)),             # unclosed B- I-
    (['B-LOC', 'E-LOC', 'B-LOC', 'E-LOC'], ['B-LOC', 'E-LOC', 'E-LOC', 'E-LOC'], (2, 1, 0), (2, 1, 1)),
    (['B-PER', 'E-PER'], ['B-PER', 'B-PER'], (1, 2, 0), (1, 0, 0)),
    (['B-PER', 'E-PER', 'O', 'B-ORG', 'E-ORG'], ['B-PER', 'I-PER', 'I-PER', 'I-ORG', 'E-ORG'], (2, 2, 1), (2, 0, 0)),
    (['S-PER', 'O', 'S-LOC'], ['S-PER', 'I-PER', 'S-ORG'], (2, 2, 0), (2, 2, 1)),
    (['S-PER', 'S-PER', 'O'], ['S-PER', 'E-PER', 'E-LOC'], (2, 2, 0), (2, 1, 1)),
    (['B-MISC', 'E-MISC', 'S-MISC'], ['B-MISC', 'E-MISC', 'S-MISC'], (2, 2, 2), (2, 2, 2)),
]
CONLLEVAL_ALL_BY_HAND = (15, 19, 6)  # conlleval.pl on the sentences above as one file


@pytest.mark.parametrize('gold, pred, conlleval, strict', CONLLEVAL_BY_HAND)
def test_conlleval_counts_by_hand(gold, pred, conlleval, strict):
  assert chunks.chunk_counts([gold], [pred], scheme='conlleval') == conlleval
  assert chunks.chunk_counts([gold], [pred], scheme='strict') == strict
  assert conlleval_pl_counts([gold], [pred]) == conlleval  # the reimplementation below agrees with conlleval.pl


def test_conlleval_f1_by_hand():
  gold, pred = [c[0] for c in CONLLEVAL_BY_HAND], [c[1] for c in CONLLEVAL_BY_HAND]
  m = chunk_f1(gold, pred, scheme='conlleval')
  assert (m['num_gold'], m['num_pred'], m['num_correct']) == CONLLEVAL_ALL_BY_HAND
  assert (m['precision'], m['recall']) == (6 / 19, 6 / 15) and m['f1'] == pytest.approx(2 * 6 / (19 + 15))
  # strict scores the same predictions higher: it does not count the stray runs conlleval charges as false positives
  assert chunk_f1(gold, pred, scheme='strict')['f1'] == pytest.approx(2 * 5 / (6 + 15))


@pytest.mark.parametrize('tags, expected', [
    (['O', 'I-PER', 'O'], [('PER', 1, 2)]),                     # a stray I- after O is a chunk
    (['O', 'E-LOC'], [('LOC', 1, 2)]),
    (['B-PER', 'I-PER'], [('PER', 0, 2)]),                      # closed by the sentence's end
    (['B-PER', 'E-LOC'], [('PER', 0, 1), ('LOC', 1, 2)]),       # a type change ends one and opens another
    (['B-PER', 'I-PER', 'S-LOC'], [('PER', 0, 2), ('LOC', 2, 3)]),
    (['B-PER', 'B-PER', 'E-PER'], [('PER', 0, 1), ('PER', 1, 3)]),
    (['B-PER', 'E-PER', 'E-PER'], [('PER', 0, 3)]),             # E- is I- to conlleval: the chunk goes on
    (['S-LOC', 'I-LOC', 'E-LOC'], [('LOC', 0, 3)]),
    (['S-PER', 'S-PER'], [('PER', 0, 1), ('PER', 1, 2)]),
    (['B-PER', 'E-PER', 'B-PER', 'E-PER'], [('PER', 0, 2), ('PER', 2, 4)]),
])
def test_conlleval_chunks_by_hand(tags, expected):
  assert conlleval_chunks(tags) == expected


def _iob2(tag: str) -> str:
  return {'S': 'B', 'E': 'I'}.get(tag[0], tag[0]) + tag[1:]


def _pl_end(prev, tag, prev_type, kind) -> bool:
  """conlleval.pl's endOfChunk (the CoNLL-2000 version, IOB and IOE rules)."""
  return ((prev, tag) in {('B', 'B'), ('B', 'O'), ('I', 'B'), ('I', 'O'), ('E', 'E'), ('E', 'I'), ('E', 'O')}
          or (prev not in ('O', '.') and prev_type != kind))


def _pl_start(prev, tag, prev_type, kind) -> bool:
  """conlleval.pl's startOfChunk."""
  return ((prev, tag) in {('B', 'B'), ('I', 'B'), ('O', 'B'), ('O', 'I'), ('E', 'E'), ('E', 'I'), ('O', 'E')}
          or (tag not in ('O', '.') and prev_type != kind))


def _bioes_end(prev, tag, prev_type, kind) -> bool:
  """endOfChunk of the BIOES-aware conlleval (and of seqeval's default mode): the CoNLL-2000 rules, S- beside B-,
  and a chunk always ends after E- or S-."""
  return (prev in ('E', 'S') or (prev, tag) in {('B', 'B'), ('B', 'S'), ('B', 'O'), ('I', 'B'), ('I', 'S'), ('I', 'O')}
          or (prev not in ('O', '.') and prev_type != kind))


def _bioes_start(prev, tag, prev_type, kind) -> bool:
  """startOfChunk of the BIOES-aware conlleval: every B- and S-, and I-/E- after O, E- or S-."""
  return (tag in ('B', 'S') or (prev, tag) in {('E', 'E'), ('E', 'I'), ('S', 'E'), ('S', 'I'), ('O', 'E'), ('O', 'I')}
          or (tag not in ('O', '.') and prev_type != kind))


# A reading of BIOES output by conlleval's counting loop: (how each tag is written before it, endOfChunk,
# startOfChunk). IOB2: the tags mapped S- -> B-, E- -> I-, then CoNLL-2000 conlleval.pl's rules; BIOES: the tags as
# they stand, the BIOES-aware rules; RAW: the tags as they stand, CoNLL-2000 conlleval.pl's rules (neither reading).
IOB2 = (_iob2, _pl_end, _pl_start)
BIOES = (lambda tag: tag, _bioes_end, _bioes_start)
RAW = (lambda tag: tag, _pl_end, _pl_start)


def conlleval_pl_counts(gold_seqs, pred_seqs, reading=IOB2) -> tuple[int, int, int]:
  """conlleval.pl's main loop, transcribed: the sentences as one file of tags (IOB2 by default: ``reading``) with an
  empty line after each (read as O O), chunks counted as they start and a correct one when both end together with
  one type; returns (found correct, found guessed, correct chunks). It shares nothing with chunks.py but the tag
  names."""
  write, end, start = reading
  found_correct = found_guessed = correct_chunks = 0
  in_correct, last_c, last_ct, last_g, last_gt = False, 'O', '', 'O', ''
  for gold, pred in zip(gold_seqs, pred_seqs):
    for c_tag, g_tag in [*zip(gold, pred), ('O', 'O')]:
      c, _, ct = write(c_tag).partition('-')
      g, _, gt = write(g_tag).partition('-')
      if in_correct:
        c_end, g_end = end(last_c, c, last_ct, ct), end(last_g, g, last_gt, gt)
        if c_end and g_end and last_gt == last_ct:
          in_correct, correct_chunks = False, correct_chunks + 1
        elif c_end != g_end or gt != ct:
          in_correct = False
      c_start, g_start = start(last_c, c, last_ct, ct), start(last_g, g, last_gt, gt)
      if c_start and g_start and gt == ct:
        in_correct = True
      found_correct += c_start
      found_guessed += g_start
      last_c, last_ct, last_g, last_gt = c, ct, g, gt
  return found_correct, found_guessed, correct_chunks + in_correct


def adversarial_sequences() -> list[list[str]]:
  """Every sequence of up to 4 tags over two types: each ill-formed pattern, at the start, middle and end."""
  import itertools  # pylint: disable=import-outside-toplevel
  alphabet = ['O'] + [f'{p}-{t}' for t in ('A', 'B') for p in 'BIES']
  return [list(s) for n in range(5) for s in itertools.product(alphabet, repeat=n)]


def test_conlleval_matches_conlleval_pl_counting():
  rng = np.random.default_rng(1)
  gold = random_sequences(rng, 400)
  alphabet = ['O'] + [f'{p}-{t}' for t in ('PER', 'LOC', 'ORG') for p in 'BIES']
  pred = [perturb(rng, g) if rng.random() < 0.7 else [alphabet[i] for i in rng.integers(0, len(alphabet), len(g))]
          for g in gold]
  # sentence by sentence and all together: the same three counts as conlleval.pl's loop
  for g, p in zip(gold, pred):
    assert chunks.chunk_counts([g], [p], scheme='conlleval') == conlleval_pl_counts([g], [p]), (g, p)
  assert chunks.chunk_counts(gold, pred, scheme='conlleval') == conlleval_pl_counts(gold, pred)
  # every short sequence, as a prediction against a well-formed gold of its length, and as gold against itself
  well_formed = {}
  for seq in gold[::2]:  # random_sequences: the even ones are well-formed
    well_formed.setdefault(len(seq), []).append(seq)
  short = adversarial_sequences()
  paired = [well_formed[len(seq)][k % len(well_formed[len(seq)])] for k, seq in enumerate(short)]
  for g, p in zip(paired, short):
    assert chunks.chunk_counts([g], [p], scheme='conlleval') == conlleval_pl_counts([g], [p]), (g, p)
    assert chunks.chunk_counts([p], [p], scheme='conlleval') == conlleval_pl_counts([p], [p]), p
  assert chunks.chunk_counts(paired, short, scheme='conlleval') == conlleval_pl_counts(paired, short)


# Two readings of BIOES output, by hand: (gold, predicted, counts with the IOB2 mapping, counts read as BIOES), each
# count (gold chunks, predicted chunks, correct chunks).
READINGS_BY_HAND = [
    # IOB2: B I I is one chunk (0, 3), not gold's (0, 2); BIOES: E- closes (0, 2), correct, and E- opens (2, 3)
    (['B-PER', 'E-PER', 'O'], ['B-PER', 'E-PER', 'E-PER'], (1, 1, 0), (1, 2, 1)),
    # both: B I I one chunk, where gold is two (IOB2 B I B; BIOES B E S)
    (['B-ORG', 'E-ORG', 'S-ORG'], ['B-ORG', 'I-ORG', 'I-ORG'], (2, 1, 0), (2, 1, 0)),
    # IOB2: B I is one chunk (1, 3); BIOES: S- closes (1, 2), correct, and the I- after it opens (2, 3)
    (['O', 'S-PER', 'O'], ['O', 'S-PER', 'I-PER'], (1, 1, 0), (1, 2, 1)),
    # IOB2: I I I is one chunk (0, 3), gold's; BIOES: the E- closes (0, 1), the I- after it opens (1, 3)
    (['B-MISC', 'I-MISC', 'E-MISC'], ['E-MISC', 'I-MISC', 'E-MISC'], (1, 1, 1), (1, 2, 0)),
]
READINGS_ALL_BY_HAND = ((5, 4, 1), (5, 7, 2))  # the four sentences as one file: IOB2, BIOES


@pytest.mark.parametrize('gold, pred, iob2, bioes', READINGS_BY_HAND)
def test_the_two_readings_by_hand(gold, pred, iob2, bioes):
  """Each reading's chunks (chunks.py) and conlleval's counting loop under that reading's rules give the counts
  worked out by hand."""
  assert chunks.chunk_counts([gold], [pred], scheme='conlleval') == conlleval_pl_counts([gold], [pred], IOB2) == iob2
  assert (chunks.chunk_counts([gold], [pred], scheme='conlleval_bioes') == conlleval_pl_counts([gold], [pred], BIOES)
          == bioes)


def test_the_two_readings_over_every_short_sequence():
  """On the hand sentences as one file, on random predictions and on every short sequence, each reading is what
  conlleval's counting loop gives with its rules; the BIOES reading's chunks are seqeval's default mode's on BIOES
  tags. Stock (CoNLL-2000) conlleval.pl given raw BIOES is neither reading: it knows no S-."""
  gold, pred = [c[0] for c in READINGS_BY_HAND], [c[1] for c in READINGS_BY_HAND]
  assert (chunks.chunk_counts(gold, pred, scheme='conlleval'),
          chunks.chunk_counts(gold, pred, scheme='conlleval_bioes')) == READINGS_ALL_BY_HAND
  rng = np.random.default_rng(3)
  gold = random_sequences(rng, 300)
  pred = predictions(rng, gold)
  short = adversarial_sequences()
  for g, p in [*zip(gold, pred), *((s, s) for s in short)]:
    assert chunks.chunk_counts([g], [p], scheme='conlleval_bioes') == conlleval_pl_counts([g], [p], BIOES), (g, p)
  assert chunks.chunk_counts(gold, pred, scheme='conlleval_bioes') == conlleval_pl_counts(gold, pred, BIOES)
  assert chunks.chunk_counts(gold, pred, scheme='conlleval') != chunks.chunk_counts(gold, pred,
                                                                                    scheme='conlleval_bioes')
  seqeval = pytest.importorskip('seqeval.metrics.sequence_labeling')
  for seq in short + pred:
    assert chunks.conlleval_bioes_chunks(seq) == [(t, s, e + 1) for t, s, e in seqeval.get_entities(seq)], seq
  assert conlleval_pl_counts([['S-PER', 'S-PER']], [['S-PER', 'S-PER']], RAW) == (1, 1, 1)  # one chunk, not two


def test_conlleval_matches_seqeval_default_mode():
  seqeval_metrics = pytest.importorskip('seqeval.metrics')
  from seqeval.metrics.sequence_labeling import get_entities

  rng = np.random.default_rng(2)
  gold = random_sequences(rng, 400)
  pred = predictions(rng, gold)
  iob2 = lambda seqs: [[_iob2(t) for t in s] for s in seqs]  # pylint: disable=unnecessary-lambda-assignment
  # Per sequence: seqeval's conlleval-style reader of the IOB2 tags finds the same chunks.
  for seq in gold + pred + adversarial_sequences():
    assert conlleval_chunks(seq) == [(t, s, e + 1) for t, s, e in get_entities(iob2([seq])[0])], seq
  assert sum(conlleval_chunks(s) != bioes_to_chunks(s) for s in pred) > 50  # the schemes differ on these
  starts = np.concatenate([[0], np.cumsum(rng.integers(1, 9, 120))])
  batches = [(gold[a:b], pred[a:b]) for a, b in zip(starts[:-1], starts[1:]) if a < len(gold)] + [(gold, pred)]
  with warnings.catch_warnings():
    warnings.simplefilter('ignore')  # seqeval warns where a denominator is 0 (and, like us, returns 0)
    for g, p in batches:
      ours = chunk_f1(g, p, scheme='conlleval')
      assert ours['precision'] == pytest.approx(seqeval_metrics.precision_score(iob2(g), iob2(p)), abs=1e-12)
      assert ours['recall'] == pytest.approx(seqeval_metrics.recall_score(iob2(g), iob2(p)), abs=1e-12)
      assert ours['f1'] == pytest.approx(seqeval_metrics.f1_score(iob2(g), iob2(p)), abs=1e-12)
  # Where seqeval's default mode, given BIOES itself, reads E- and S- as closing a chunk, it parts from conlleval
  # on IOB2: the one difference between the two "conlleval-style" scores (chunks.py's docstring).
  assert get_entities(['B-PER', 'E-PER', 'E-PER']) == [('PER', 0, 1), ('PER', 2, 2)]
  assert conlleval_chunks(['B-PER', 'E-PER', 'E-PER']) == [('PER', 0, 3)]


# --------------------------------------------------------------------------------------------------------------
# The real benchmark files (skipped without ../shared/data)
# --------------------------------------------------------------------------------------------------------------


def test_real_twitter_pos():
  corpus = load_twitter_pos(tagging_data('twitter_pos'))
  sizes = {split: len(s) for split, s in corpus.splits().items()}
  assert sizes == {'train': 1327, 'dev': 500, 'test': 547}  # train = oct27 train 1000 + dev 327
  tokens = {split: sum(len(t.tokens) for t in s) for split, s in corpus.splits().items()}
  assert tokens == {'train': 19442, 'dev': 7152, 'test': 7707}
  seen = {tag for s in corpus.splits().values() for t in s for tag in t.tags}
  assert seen == set(TWITTER_POS_TAGS) and len(seen) == 25 and corpus.tags == TWITTER_POS_TAGS
  assert {tag for t in corpus.train for tag in t.tags} == set(TWITTER_POS_TAGS)  # all 25 in train
  # The fixture is the first 5 tweets of oct27.train, the start of oct27.traindev.
  assert corpus.train[:5] == read_twitter_pos(TWEETS)


def test_real_conll2003():
  corpus = load_conll2003(tagging_data('conll2003'))
  sizes = {split: len(s) for split, s in corpus.splits().items()}
  assert sizes == {'train': 14041, 'dev': 3250, 'test': 3453}
  tokens = {split: sum(len(t.tokens) for t in s) for split, s in corpus.splits().items()}
  assert tokens == {'train': 203621, 'dev': 51362, 'test': 46435}
  for split, sentences in corpus.splits().items():
    assert not any(tok.startswith('-DOCSTART-') for s in sentences for tok in s.tokens), split
    assert {tag for s in sentences for tag in s.tags} == set(CONLL2003_BIOES_TAGS), split  # all 17 labels
  # Published entity counts (train / dev / test), and gold scored against itself.
  counts = {split: sum(len(bioes_to_chunks(t.tags)) for t in s) for split, s in corpus.splits().items()}
  assert counts == {'train': 23499, 'dev': 5942, 'test': 5648}
  for scheme in chunks.SCHEMES:
    assert chunk_f1([s.tags for s in corpus.dev], [s.tags for s in corpus.dev], scheme=scheme)['f1'] == 1.0
  # gold is well-formed: both readings give the same chunks
  assert all(conlleval_chunks(t.tags) == bioes_to_chunks(t.tags) for s in corpus.splits().values() for t in s)
  s = corpus.train[0]
  assert len(s.features['pos']) == len(s.features['chunk']) == len(s.features['caps']) == len(s.tokens)


def test_real_conll2003_chunks_match_seqeval_reading_of_iob1():
  """The BIOES chunks are the ones conlleval reads off the original IOB1 tags (seqeval's default mode)."""
  pytest.importorskip('seqeval')
  from seqeval.metrics.sequence_labeling import get_entities

  root = tagging_data('conll2003') / 'conll2003'
  iob1 = read_conll(root / 'eng.train', ('token', 'pos', 'chunk', 'ner'), 'ner')
  bioes = read_conll2003(root / 'eng.train')
  for a, b in zip(iob1, bioes):
    assert [(t, s, e + 1) for t, s, e in get_entities(list(a.tags))] == bioes_to_chunks(b.tags), a.line
