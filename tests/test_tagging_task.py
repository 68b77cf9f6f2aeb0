"""The real tagging benchmarks as tasks of the engine (implicit_jax/tasks/tagging/datasets.py): Twitter POS and
CoNLL-2003 NER read from a data directory, padded and masked arrays with a training-only vocabulary, the chunk-F1
evaluator, the configs, and a one-epoch run on the fixtures.

The fixture data directory is laid out like ../shared/data: the Twitter POS fixture (5 tweets of oct27.train) is
the training split, a hand-written file of made-up tweets the dev split; the synthetic CoNLL-format file stands in
for all three CoNLL-2003 files. The real-data tests at the end skip without ../shared/data.
"""

import importlib.util
import json
import shutil
from pathlib import Path

import jax
import numpy as np
import pytest

from implicit_jax import methods, tasks
from implicit_jax.engine import config as config_lib, data, train
from implicit_jax.tasks import tagging
from implicit_jax.tasks.tagging import datasets
from implicit_jax.tasks.tagging.chunks import chunk_f1
from implicit_jax.tasks.tagging.embeddings import GLOVE_PACKAGE
from implicit_jax.tasks.tagging.evaluator import AccuracyEvaluator, ChunkF1Evaluator
from implicit_jax.tasks.tagging.readers import (CONLL2003_BIOES_TAGS, PAD_ID, TWITTER_POS_TAGS, UNK_ID,
                                                load_conll2003, load_twitter_pos, read_conll2003)
from tests.conftest import load_config
from tests.test_tagging_data import CONLL, TWEETS, tagging_data

# Made-up tweets for the dev split: 'zqxv', 'Blorptastic', 'flibber' and 'THE' are in no training tweet; 'I',
# 'the', 'RT' and '!' are (the fixture's first tweets).
DEV_TWEETS = ('I\tO\nzqxv\tV\nthe\tD\nBlorptastic\t^\n\n'
              'RT\t~\nflibber\tN\n!\t,\nTHE\tD\n\n')


def make_data_dir(root: Path) -> Path:
  """``root`` laid out like the shared data, from the fixtures."""
  pos, ner = root / 'twitter_pos', root / 'conll2003'
  pos.mkdir(parents=True)
  ner.mkdir()
  shutil.copy(TWEETS, pos / 'oct27.traindev')
  (pos / 'oct27.test').write_text(DEV_TWEETS, encoding='utf-8')
  shutil.copy(TWEETS, pos / 'daily547.conll')
  for name in ('eng.train', 'eng.testa', 'eng.testb'):
    shutil.copy(CONLL, ner / name)
  return root


@pytest.fixture(scope='module')
def data_dir(tmp_path_factory):
  return make_data_dir(tmp_path_factory.mktemp('tagging_data'))


def tiny_config(name: str, data_dir: Path, method: str = 'feedforward'):
  """The tagging task on fixture data with tiny networks (conv encoder)."""
  c = config_lib.base_config(task='tagging', method=method)
  c.data.name = name
  c.data.data_dir = str(data_dir)
  c.data.buckets = (8, 16)
  c.model.update(encoder='conv', embedding_dim=8, hidden=8, energy_hidden=8)
  c.batch_size = 2
  c.eval_batch_size = 4
  c.num_epochs = 1
  c.log_every = 1
  return c


# --------------------------------------------------------------------------------------------------------------
# Building the task
# --------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize('name, loader, tags, evaluator', [
    ('twitter_pos', load_twitter_pos, TWITTER_POS_TAGS, AccuracyEvaluator),
    ('conll2003', load_conll2003, CONLL2003_BIOES_TAGS, ChunkF1Evaluator),
])
def test_fixture_task_arrays(data_dir, name, loader, tags, evaluator):
  task = tasks.get_task(tiny_config(name, data_dir))
  corpus = loader(data_dir)
  width = max(len(s.tokens) for split in corpus.splits().values() for s in split)  # one width for all splits
  assert task.name == name and task.space.units == len(tags) and task.score == 'accuracy'
  assert isinstance(task.evaluator, evaluator) and task.evaluator.select == ('f1' if name == 'conll2003' else
                                                                            'accuracy')
  assert task.padded == ('x', 'y', 'mask') and task.buckets == (8, 16) and task.names == {'y': list(tags)}
  for split, sentences in corpus.splits().items():
    arrays = task.splits[split]
    assert set(arrays) == {'x', 'y', 'mask'}
    assert (arrays['x'].dtype, arrays['y'].dtype, arrays['mask'].dtype) == (np.int32, np.int32, np.float32)
    assert arrays['x'].shape == arrays['y'].shape == arrays['mask'].shape == (len(sentences), width)
    lengths = np.array([len(s.tokens) for s in sentences])
    real = np.arange(width) < lengths[:, None]
    np.testing.assert_array_equal(arrays['mask'], real.astype(np.float32))
    assert np.all(arrays['x'][~real] == PAD_ID) and np.all(arrays['y'][~real] == -1)
    assert np.all(arrays['x'][real] >= UNK_ID) and np.all(arrays['y'][real] >= 0)
    for i, s in enumerate(sentences):
      assert [tags[k] for k in arrays['y'][i, :len(s.tags)]] == list(s.tags)
  info = task.info
  assert info['dataset'] == name and info['tags'] == list(tags) and info['num_tags'] == len(tags)
  assert info['sizes'] == {split: len(s) for split, s in corpus.splits().items()}
  assert info['tokens'] == {split: sum(len(t.tokens) for t in s) for split, s in corpus.splits().items()}
  assert info['vocab_size'] == len({t for s in corpus.train for t in s.tokens}) + 2  # + PAD and UNK
  assert info['unknown_tokens']['train'] == 0.0  # min_count 1: every training word is in the vocabulary
  assert [Path(f).name for f in info['files']] == [Path(f).name for f in info['split_files'].values()]
  assert all(Path(f).is_file() for f in info['files'])
  assert json.loads(json.dumps(info)) == info  # goes into metrics.json as it is


def test_vocabulary_is_the_training_words(data_dir):
  task = tasks.get_task(tiny_config('twitter_pos', data_dir))
  train_ids = {}
  for s, row in zip(load_twitter_pos(data_dir).train, task.splits['train']['x']):
    train_ids.update(zip(s.tokens, row[:len(s.tokens)].tolist()))
  assert train_ids['I'] == 2  # the most frequent training word comes first
  dev = task.splits['dev']['x']
  # 'zqxv', 'Blorptastic', 'flibber' and 'THE' never occur in training: UNK; the others keep their training ids.
  assert dev[0, :4].tolist() == [train_ids['I'], UNK_ID, train_ids['the'], UNK_ID]
  assert dev[1, :4].tolist() == [train_ids['RT'], UNK_ID, train_ids['!'], UNK_ID]
  assert task.info['unknown_tokens']['dev'] == pytest.approx(4 / 8)
  np.testing.assert_array_equal(task.splits['test']['x'], task.splits['train']['x'])  # the same file

  # lowercase: 'THE' is 'the'; min_count 2: training words seen once are UNK in training too.
  config = tiny_config('twitter_pos', data_dir)
  config.data.lowercase = True
  lower = tasks.get_task(config)
  assert lower.splits['dev']['x'][1, 3] == lower.splits['dev']['x'][0, 2] != UNK_ID
  assert lower.info['unknown_tokens']['dev'] == pytest.approx(3 / 8) and lower.info['lowercase'] is True
  config = tiny_config('twitter_pos', data_dir)
  config.data.min_count = 2
  rare = tasks.get_task(config)
  counts = {}
  for s in load_twitter_pos(data_dir).train:
    for t in s.tokens:
      counts[t] = counts.get(t, 0) + 1
  assert rare.info['vocab_size'] == sum(c >= 2 for c in counts.values()) + 2
  first = load_twitter_pos(data_dir).train[0].tokens
  row = rare.splits['train']['x'][0, :len(first)]
  assert all((k == UNK_ID) == (counts[t] < 2) for t, k in zip(first, row))
  assert rare.info['unknown_tokens']['train'] > 0


def test_data_dir_from_the_environment_and_errors(data_dir, tmp_path, monkeypatch):
  monkeypatch.setenv(tasks.DATA_DIR_ENV, str(data_dir))
  task = tasks.get_task(tiny_config('conll2003', ''))  # data.data_dir empty: the environment's folder
  assert task.info['sizes'] == {'train': 4, 'dev': 4, 'test': 4}
  monkeypatch.delenv(tasks.DATA_DIR_ENV)
  with pytest.raises(ValueError, match=r'data\.data_dir is empty and \$IMPLICIT_JAX_DATA_DIR is not set.*'
                                       r'conll2003/eng\.train'):
    tasks.get_task(tiny_config('conll2003', ''))
  (tmp_path / 'conll2003').mkdir()
  shutil.copy(CONLL, tmp_path / 'conll2003' / 'eng.train')
  with pytest.raises(FileNotFoundError, match=r'eng\.testa: no such file .*dev split .*data\.data_dir'):
    tasks.get_task(tiny_config('conll2003', tmp_path))
  config = tiny_config('conll2003', data_dir)
  config.data.name = 'ptb'
  with pytest.raises(ValueError, match=r"data\.name: unknown tagging dataset 'ptb'; choose one of "
                                       r"\('synthetic', 'twitter_pos', 'conll2003'\)"):
    tasks.get_task(config)
  config = tiny_config('twitter_pos', data_dir)
  config.data.min_count = 0
  with pytest.raises(ValueError, match='data.min_count must be a positive integer'):
    tasks.get_task(config)
  with pytest.raises(ValueError, match='data.lowercase must be True or False'):
    datasets.load('twitter_pos', str(data_dir), lowercase=1)  # a config file's ConfigDict refuses it already


def test_new_fields_leave_the_synthetic_task_as_it_was():
  defaults = tagging.default_config().data
  assert (defaults.name, defaults.data_dir, defaults.lowercase, defaults.min_count) == ('synthetic', '', False, 1)
  task = tasks.get_task(load_config('tiny_tagging'))  # no data directory needed
  assert isinstance(task.evaluator, AccuracyEvaluator) and task.names == {} and task.info['dataset'] == 'synthetic'


# --------------------------------------------------------------------------------------------------------------
# The chunk-F1 evaluator
# --------------------------------------------------------------------------------------------------------------


def test_chunk_evaluator_is_chunk_f1_of_the_argmax_tags(data_dir):
  task = tasks.get_task(tiny_config('conll2003', data_dir))
  evaluator, dev = task.evaluator, task.splits['dev']
  assert evaluator.select == 'f1'  # strict, as every committed NER record selected (data.chunk_select)
  sentences = read_conll2003(data_dir / 'conll2003' / 'eng.testa')
  gold = [list(s.tags) for s in sentences]
  rng = np.random.default_rng(0)
  perfect = task.space.gold(dev['y'])  # one-hot gold rows, zero on padding
  m = evaluator.metrics(perfect, dev)
  keys = {'f1', 'precision', 'recall', 'f1_conlleval', 'precision_conlleval', 'recall_conlleval', 'accuracy'}
  assert m == dict.fromkeys(keys, 1.0)
  differ = 0
  for trial in range(20):
    # Near the gold tags (random tags at ~30% of the tokens), or random scores everywhere; random padding scores.
    noise = rng.random(perfect.shape)
    pred = perfect + (noise * (rng.random(perfect.shape[:2]) < 0.3)[..., None] * 2 if trial % 2 else noise)
    decoded = [[CONLL2003_BIOES_TAGS[k] for k in np.argmax(pred[i, :len(g)], axis=-1)] for i, g in enumerate(gold)]
    m = evaluator.metrics(pred, dev)
    scored = evaluator.score(pred, dev, {})
    assert set(m) == keys and all(isinstance(v, float) for v in m.values())
    for scheme, suffix in (('strict', ''), ('conlleval', '_conlleval')):
      expected = chunk_f1(gold, decoded, scheme=scheme)
      assert [m[f'{k}{suffix}'] for k in ('f1', 'precision', 'recall')] == [
          expected[k] for k in ('f1', 'precision', 'recall')]
      assert [scored[f'{k}{suffix}'] for k in ('num_gold', 'num_pred', 'num_correct')] == [
          expected[k] for k in ('num_gold', 'num_pred', 'num_correct')]
    differ += m['f1'] != m['f1_conlleval']
    tokens = [(d == g) for dd, gg in zip(decoded, gold) for d, g in zip(dd, gg)]
    assert m['accuracy'] == pytest.approx(np.mean(tokens))
  assert differ >= 5  # random tags are often ill-formed, where the two schemes part (7 of 20 trials here)
  assert 'chunk F1 conlleval' in evaluator.describe(m) and 'strict' in evaluator.describe(m)
  final = evaluator.final(perfect, dev, pred, task.splits['test'])
  test_m = evaluator.metrics(pred, task.splits['test'])
  assert final['test_f1'] == test_m['f1'] and final['test_f1_conlleval'] == test_m['f1_conlleval']
  assert final['test_num_gold'] == final['test_num_gold_conlleval'] == 7
  assert evaluator.calibrate(perfect, dev) == {} and evaluator.calibration_of({'test_f1': 0.5}) == {}
  line = evaluator.summary({**final, 'best_epoch': 3})
  assert line.startswith('test chunk F1 conlleval ') and '(best dev epoch 3, selected on dev f1)' in line
  with pytest.raises(ValueError, match='17 tag names'):
    evaluator.metrics(perfect[..., :5], dev)


def test_chunk_select_picks_the_selection_metric(data_dir):
  config = tiny_config('conll2003', data_dir)
  config.data.chunk_select = 'f1_conlleval'
  assert tasks.get_task(config).evaluator.select == 'f1_conlleval'
  config.data.chunk_select = 'conlleval'
  with pytest.raises(ValueError, match="select 'conlleval' is not one of"):
    tasks.get_task(config)


# --------------------------------------------------------------------------------------------------------------
# Runs
# --------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize('name, select', [('conll2003', 'f1'),
                                          pytest.param('twitter_pos', 'accuracy', marks=pytest.mark.e2e)])
def test_one_epoch_run_on_the_fixture_task(data_dir, tmp_path, name, select):
  config = tiny_config(name, data_dir)
  result = train.train_and_evaluate(config, str(tmp_path / 'run'))
  record = json.loads((tmp_path / 'run' / 'metrics.json').read_text())
  assert record['task'] == name and record['best_epoch'] == 1 and record['task_info']['dataset'] == name
  assert record[f'dev_{select}'] == result[f'dev_{select}'] == result['history'][0][f'dev_{select}']
  assert 0.0 <= record[f'test_{select}'] <= 1.0 and 0.0 <= record['test_accuracy'] <= 1.0
  if name == 'conll2003':
    assert {'test_precision', 'test_recall', 'test_num_gold'} <= set(record)
    assert {'dev_precision', 'dev_recall', 'dev_accuracy'} <= set(record['history'][0])
  data_record = json.loads((tmp_path / 'run' / 'data.json').read_text())
  assert data_record['files'] == record['task_info']['files']


@pytest.mark.e2e  # a shipped config end to end at its full size: the e2e suite (setup.cfg), after the fast one
@pytest.mark.parametrize('name', ['pos', 'ner', 'ner_plus'])
def test_configs_build_on_the_fixtures_and_take_a_step(data_dir, name):
  config = load_config(name)
  assert config.method == 'feedforward' and config.data.name in ('twitter_pos', 'conll2003')
  assert config.model.embeddings == 'glove' and config.model.embedding_dim == 50
  assert tuple(config.data.features) == (('caps', 'pos', 'chunk') if name == 'ner_plus' else ())
  config.data.data_dir = str(data_dir)
  if importlib.util.find_spec(GLOVE_PACKAGE) is None:  # CI: the configs' vectors are a 76 MB optional download
    config.model.embeddings = 'random'
  config.batch_size = 2
  config_lib.check(config)
  task = tasks.get_task(config)
  method = methods.build(task, config)
  batch = next(data.train_batches(task, config.batch_size, np.random.default_rng(0)))
  _, metrics = jax.jit(method.train_step)(method.init(jax.random.key(0)), batch, jax.random.key(1))
  assert all(np.isfinite(float(v)) for v in jax.tree.leaves(metrics) if np.size(v) == 1)


# --------------------------------------------------------------------------------------------------------------
# The real benchmark files (skipped without ../shared/data)
# --------------------------------------------------------------------------------------------------------------


def test_real_twitter_pos_task():
  root = tagging_data('twitter_pos')
  task = tasks.get_task(tiny_config('twitter_pos', root))
  assert task.info['sizes'] == {'train': 1327, 'dev': 500, 'test': 547}
  assert task.info['tokens'] == {'train': 19442, 'dev': 7152, 'test': 7707}
  assert task.info['split_files'] == {'train': 'twitter_pos/oct27.traindev', 'dev': 'twitter_pos/oct27.test',
                                      'test': 'twitter_pos/daily547.conll'}
  width = max(task.info['max_length'].values())
  assert {s: a['x'].shape for s, a in task.splits.items()} == {'train': (1327, width), 'dev': (500, width),
                                                               'test': (547, width)}
  assert task.space.units == 25 and 0.0 < task.info['unknown_tokens']['dev'] < 0.5


def test_real_conll2003_task():
  root = tagging_data('conll2003')
  task = tasks.get_task(tiny_config('conll2003', root))
  assert task.info['sizes'] == {'train': 14041, 'dev': 3250, 'test': 3453}
  assert task.info['tokens'] == {'train': 203621, 'dev': 51362, 'test': 46435}
  assert task.space.units == 17 and isinstance(task.evaluator, ChunkF1Evaluator)
  dev = task.splits['dev']
  assert int(dev['mask'].sum()) == 51362 and dev['x'].shape[1] == max(task.info['max_length'].values())
  # Gold scored by the evaluator: all 5942 dev entities found.
  scored = task.evaluator.score(task.space.gold(dev['y']), dev, {})
  assert scored['f1'] == 1.0 and scored['num_gold'] == 5942
