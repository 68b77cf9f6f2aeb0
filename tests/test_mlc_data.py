"""Tests for the multi-label data layer: splits, the embedded bibtex copy, ``load_mlc`` and the 'mlc' task.

Fixtures in tests/fixtures/mlc are 5-row cuts of the real files (see test_arff.py).  Tests that read
/work/shared/data skip when it is absent; reading every dataset under both protocols is marked slow.
"""

import sys
import time

import jax
import numpy as np
import pytest

from implicit_jax import tasks
from implicit_jax.engine import config as config_lib
from implicit_jax.tasks.mlc import datasets as mlc_datasets
from implicit_jax.tasks.mlc.arff import read_mulan
from implicit_jax.tasks.mlc.datasets import DATA_DIR_ENV, load_embedded_bibtex, load_mlc
from implicit_jax.tasks import mlc
from implicit_jax.tasks.mlc.splits import dev_split, fold_sizes, kfold_split, stratified_split
from tests.conftest import ROOT
from tests.test_arff import FIXTURES, shared_data

FRACTIONS = (0.6, 0.2, 0.2)


def bibtex_like_labels(n=1500, num_labels=60, seed=0):
  """0/1 labels with Zipf-like frequencies (a few common labels, many rare ones) and some empty rows."""
  rng = np.random.default_rng(seed)
  freq = 0.3 / np.arange(1, num_labels + 1) ** 0.8
  y = rng.random((n, num_labels)) < freq
  y[rng.random(n) < 0.05] = False
  return y.astype(np.int8)


def proportion_error(y, folds, fractions=FRACTIONS):
  """Mean over labels and folds of |share of the label's rows in the fold - the fold's fraction|."""
  totals = y.sum(axis=0)
  seen = totals > 0
  return np.mean([np.abs(y[idx].sum(axis=0)[seen] / totals[seen] - r).mean()
                  for idx, r in zip(folds, fractions)])


def assert_partition(folds, n):
  np.testing.assert_array_equal(np.sort(np.concatenate(folds)), np.arange(n))


# ---------------------------------------------------------------------------------------------------------------
# Splits


def test_dev_split_partition_size_and_determinism():
  train, dev = dev_split(1000, 0.1, seed=3)
  assert_partition((train, dev), 1000)
  assert len(dev) == 100 and np.all(np.diff(train) > 0)
  again = dev_split(1000, 0.1, seed=3)
  np.testing.assert_array_equal(dev, again[1])
  assert not np.array_equal(dev, dev_split(1000, 0.1, seed=4)[1])
  assert len(dev_split(5, 0.1, seed=0)[1]) == 1  # a tiny file still gets a dev row
  with pytest.raises(ValueError, match='dev_fraction'):
    dev_split(10, 1.0, seed=0)


@pytest.mark.parametrize('n,folds', [(150, 5), (23, 5), (10, 3), (7, 7)])
def test_kfold_dev_parts_are_disjoint_cover_every_row_and_differ_in_size_by_at_most_one(n, folds):
  parts = [kfold_split(n, folds, k, seed=3) for k in range(folds)]
  devs = [dev for _, dev in parts]
  np.testing.assert_array_equal(np.sort(np.concatenate(devs)), np.arange(n))  # disjoint and covering
  sizes = [len(dev) for dev in devs]
  assert max(sizes) - min(sizes) <= 1 and sum(sizes) == n
  for train, dev in parts:
    assert_partition((train, dev), n)
    assert np.all(np.diff(train) > 0) and np.all(np.diff(dev) > 0)
  # seeded: the same seed the same folds, another seed others
  np.testing.assert_array_equal(kfold_split(n, folds, 1, seed=3)[1], devs[1])
  assert not np.array_equal(kfold_split(n, folds, 1, seed=4)[1], devs[1])


def test_kfold_split_refuses_a_fold_out_of_range():
  for folds, fold in ((5, 5), (5, -1), (1, 0)):
    with pytest.raises(ValueError, match='fold'):
      kfold_split(20, folds, fold, seed=0)


def _numbered(tmp_path, name, rows, first=0):
  """A MULAN file whose feature ``id`` numbers its rows (first, first + 1, ...), labels alternating so that every
  split holds a positive one."""
  lines = ['@relation numbered -C -2', '@attribute id numeric', '@attribute L0 {0,1}', '@attribute L1 {0,1}', '@data']
  lines += [f'{first + i},{i % 2},{(i + 1) % 2}' for i in range(rows)]
  (tmp_path / name).write_text('\n'.join(lines) + '\n')
  return str(tmp_path / name)


def test_dev_fold_cuts_the_official_train_split_in_disjoint_dev_folds(tmp_path):
  kwargs = dict(train_file=_numbered(tmp_path, 'train.arff', 47), test_file=_numbered(tmp_path, 'test.arff', 9, 1000),
                standardise='never')
  ids = lambda split: sorted(int(i) for i in split[0][:, 0])  # noqa: E731
  devs = []
  for k in range(5):
    splits, info = load_mlc('custom', '', 'official', 0.2, 7, dev_fold=k, **kwargs)
    assert ids(splits['test']) == list(range(1000, 1009)) and info['dev_fold'] == k
    assert sorted(ids(splits['train']) + ids(splits['dev'])) == list(range(47))
    assert f'fold {k} of 5-fold' in info['split_note']
    devs.append(ids(splits['dev']))
  assert sorted(sum(devs, [])) == list(range(47))  # disjoint, their union the official train split
  assert {len(d) for d in devs} <= {9, 10}
  # -1 (the default) is the seeded dev_fraction hold-out exactly as before the field
  old_train, old_dev = dev_split(47, 0.2, 7)
  splits, info = load_mlc('custom', '', 'official', 0.2, 7, **kwargs)
  assert ids(splits['dev']) == old_dev.tolist() and ids(splits['train']) == old_train.tolist()
  assert 'dev_fold' not in info and load_mlc('custom', '', 'official', 0.2, 7, dev_fold=-1, **kwargs)[1] == info


def test_dev_fold_without_an_official_test_folds_the_stratified_train_and_dev_rows(tmp_path):
  kwargs = dict(train_file=_numbered(tmp_path, 'all.arff', 60), standardise='never')
  ids = lambda split: sorted(int(i) for i in split[0][:, 0])  # noqa: E731
  plain, _ = load_mlc('custom', '', 'official', 0.2, 0, **kwargs)
  devs = []
  for k in range(5):
    splits, info = load_mlc('custom', '', 'official', 0.2, 0, dev_fold=k, **kwargs)
    assert ids(splits['test']) == ids(plain['test'])  # the 60/20/20 split's test rows stay the test split
    assert sorted(ids(splits['train']) + ids(splits['dev'])) == sorted(ids(plain['train']) + ids(plain['dev']))
    devs.append(ids(splits['dev']))
    assert 'no official split' in info['split_note'] and f'fold {k} of 5-fold' in info['split_note']
  assert sorted(sum(devs, [])) == sorted(ids(plain['train']) + ids(plain['dev']))


def test_an_out_of_range_dev_fold_is_refused_naming_the_field():
  for fold, fraction in ((10, 0.1), (-2, 0.1), (5, 0.2), (0, 0.9)):
    with pytest.raises(ValueError, match=r'data\.dev_fold') as e:
      load_mlc('bibtex', dev_fraction=fraction, dev_fold=fold)
    assert '\n' not in str(e.value)
  config = config_lib.from_file(ROOT / 'configs' / 'custom.py')
  config.data.dev_fold = 5
  config.data.dev_fraction = 0.2
  with pytest.raises(ValueError, match=r'data\.dev_fold must be -1 \(the dev_fraction hold-out\) or a fold in '
                                       r'\[0, 5\)'):
    tasks.get_task(config)  # before the data are read
  # spo_fun's dev is its official valid split: no hold-out of train to cut in folds
  with pytest.raises(ValueError, match=r"data\.dev_fold=0: this dataset's dev split is its official valid split"):
    mlc_datasets._official({'train': None, 'valid': None, 'test': None}, 0.2, 0, 0)  # pylint: disable=protected-access


def test_fold_sizes_are_within_one_of_the_request():
  for n in (0, 1, 3, 7, 100, 7395, 16105):
    sizes = fold_sizes(n, FRACTIONS)
    assert sizes.sum() == n and np.all(np.abs(sizes - n * np.asarray(FRACTIONS)) < 1)
  assert fold_sizes(7395, FRACTIONS).tolist() == [4437, 1479, 1479]
  with pytest.raises(ValueError, match='sum to 1'):
    fold_sizes(10, (0.5, 0.4))


def test_stratified_split_partition_sizes_and_determinism():
  y = bibtex_like_labels()
  folds = stratified_split(y, FRACTIONS, seed=0)
  assert_partition(folds, len(y))
  assert [len(f) for f in folds] == fold_sizes(len(y), FRACTIONS).tolist()
  for a, b in zip(folds, stratified_split(y, FRACTIONS, seed=0)):
    np.testing.assert_array_equal(a, b)
  assert not np.array_equal(folds[0], stratified_split(y, FRACTIONS, seed=1)[0])


def test_stratified_split_beats_random_on_label_proportions():
  y = bibtex_like_labels()
  sizes = np.cumsum(fold_sizes(len(y), FRACTIONS))[:-1]
  for seed in range(3):
    stratified = proportion_error(y, stratified_split(y, FRACTIONS, seed=seed))
    permutations = (np.random.default_rng(100 * seed + k).permutation(len(y)) for k in range(5))
    random = np.mean([proportion_error(y, np.split(p, sizes)) for p in permutations])
    assert stratified < 0.5 * random, (seed, stratified, random)


def test_stratified_split_edge_cases():
  # Rows without labels only, no label columns, tiny n, other fold counts: sizes still exact.
  for y, fractions in ((np.zeros((10, 3)), FRACTIONS), (np.zeros((10, 0)), FRACTIONS),
                       (np.eye(3), FRACTIONS), (bibtex_like_labels(200, 10), (0.5, 0.5)),
                       (bibtex_like_labels(200, 10), (0.2,) * 5)):
    folds = stratified_split(y, fractions, seed=0)
    assert_partition(folds, len(y))
    assert [len(f) for f in folds] == fold_sizes(len(y), fractions).tolist()
  # A label held by exactly as many rows as there are folds lands once in each fold.
  y = np.zeros((30, 2), dtype=np.int8)
  y[[4, 11, 25], 0] = 1
  folds = stratified_split(y, (1 / 3,) * 3, seed=0)
  assert [int(y[f, 0].sum()) for f in folds] == [1, 1, 1]


def test_stratified_split_is_fast_at_delicious_scale():
  y = bibtex_like_labels(16105, 983, seed=1)
  start = time.perf_counter()
  stratified_split(y, FRACTIONS, seed=0)
  assert time.perf_counter() - start < 5


# ---------------------------------------------------------------------------------------------------------------
# Embedded bibtex


def test_embedded_bibtex_loads_without_a_data_dir(monkeypatch):
  monkeypatch.delenv(DATA_DIR_ENV, raising=False)
  data = load_embedded_bibtex()
  assert {s: d.x.shape for s, d in data.items()} == {'train': (4880, 1836), 'test': (2515, 1836)}
  assert data['train'].y.shape == (4880, 159) and len(data['test'].label_names) == 159
  splits, info = load_mlc('bibtex', '')
  assert info['files'] == ['embedded'] and info['sizes'] == {'train': 4392, 'dev': 488, 'test': 2515}
  assert all(x.dtype == np.float32 and y.dtype == np.float32 for x, y in splits.values())


def test_embedded_bibtex_equals_the_mulan_files():
  root = shared_data() / 'mulan' / 'bibtex'
  embedded = load_embedded_bibtex()
  for split in ('train', 'test'):
    real = read_mulan(root / f'bibtex-{split}.arff', root / 'bibtex.xml')
    np.testing.assert_array_equal(embedded[split].x, real.x)
    np.testing.assert_array_equal(embedded[split].y, real.y)
    assert embedded[split].feature_names == real.feature_names
    assert embedded[split].label_names == real.label_names


def test_embedded_and_file_bibtex_give_the_same_splits():
  data_dir = str(shared_data())
  for protocol in ('official', 'resplit'):
    embedded, info_e = load_mlc('bibtex', '', protocol, split_seed=2)
    files, info_f = load_mlc('bibtex', data_dir, protocol, split_seed=2)
    assert info_e['train_sha1'] == info_f['train_sha1'] and info_e['sizes'] == info_f['sizes']
    for split in embedded:
      np.testing.assert_array_equal(embedded[split][0], files[split][0])
      np.testing.assert_array_equal(embedded[split][1], files[split][1])


# ---------------------------------------------------------------------------------------------------------------
# load_mlc on the fixtures (custom)


def test_custom_mulan_train_and_test_relative_to_data_dir():
  splits, info = load_mlc('custom', str(FIXTURES), 'official', 0.1, 0, train_file='bibtex_cut.arff',
                          test_file='bibtex_cut.arff', xml_file='bibtex_cut.xml')
  assert info['sizes'] == {'train': 4, 'dev': 1, 'test': 5}
  assert (info['num_features'], info['num_labels']) == (16, 10)
  assert info['files'][0] == str(FIXTURES / 'bibtex_cut.arff') and len(info['train_sha1']) == 12
  expected = read_mulan(FIXTURES / 'bibtex_cut.arff', FIXTURES / 'bibtex_cut.xml')
  np.testing.assert_array_equal(splits['test'][0], expected.x)
  np.testing.assert_array_equal(splits['test'][1], expected.y)
  assert all(x.dtype == np.float32 and y.dtype == np.float32 for x, y in splits.values())


def test_custom_without_test_file_is_split_stratified_and_recorded():
  splits, info = load_mlc('custom', '', train_file=str(FIXTURES / 'genbase_cut.arff'),
                          xml_file=str(FIXTURES / 'genbase_cut.xml'))
  assert info['sizes'] == {'train': 3, 'dev': 1, 'test': 1} and 'no official split' in info['split_note']
  assert splits['train'][0].shape[1] == 10 and splits['train'][1].shape[1] == 6  # protein id dropped


def test_custom_meka_header_and_resplit_is_seeded():
  kwargs = dict(train_file=str(FIXTURES / 'cal500_cut.arff'), test_file=str(FIXTURES / 'cal500_cut.arff'))
  a, info_a = load_mlc('custom', '', 'resplit', split_seed=1, **kwargs)
  b, info_b = load_mlc('custom', '', 'resplit', split_seed=1, **kwargs)
  assert info_a == info_b and info_a['sizes'] == {'train': 6, 'dev': 2, 'test': 2}
  assert a['train'][1].shape[1] == 5 and info_a['protocol'] == 'resplit'
  np.testing.assert_array_equal(a['dev'][0], b['dev'][0])


def test_custom_clus_is_imputed_and_standardised_with_train_statistics():
  splits, info = load_mlc('custom', str(FIXTURES), 'official', 0.2, 0, train_file='spo_cut.arff',
                          test_file='spo_cut.arff', file_format='clus')
  x_train, x_test = splits['train'][0], splits['test'][0]
  assert not np.isnan(x_train).any() and not np.isnan(x_test).any()
  assert 'train statistics' in info['preprocessing']
  np.testing.assert_allclose(x_train.mean(axis=0), 0, atol=1e-5)  # imputed entries sit at the train mean


def test_a_shipped_datasets_config_on_a_file_of_ones_own_is_refused_naming_the_route():
  # one route for a user's file: a dataset's config carries the settings chosen on that dataset (config.chosen_on),
  # whatever path or name it was loaded by
  own_file = {'data.name': 'custom', 'data.data_dir': str(FIXTURES), 'data.train_file': 'scaled.arff'}
  for name in ('bibtex', 'genbase'):
    config = config_lib.from_file(ROOT / 'configs' / f'{name}.py')
    config.update_from_flattened_dict({**own_file, 'config_file': f'configs/{name}.py'})
    with pytest.raises(ValueError, match=rf'config.data.name=custom with --config=configs/{name}.py: that file holds '
                                         rf'the settings chosen on {name}; .* --config=configs/custom.py'):
      tasks.get_task(config)
  config.config_file = ''  # built in code: the field is named instead of a file
  with pytest.raises(ValueError, match=r'with the settings chosen on genbase \(config.chosen_on\); '):
    tasks.get_task(config)
  config = config_lib.from_file(ROOT / 'configs' / 'custom.py')
  config.update_from_flattened_dict({**own_file, 'config_file': 'elsewhere/bibtex.py'})
  assert tasks.get_task(config).space.units == 3


def test_mlc_task_from_config():
  config = config_lib.base_config(task='mlc')
  config.data.name = 'custom'
  config.data.data_dir = str(FIXTURES)
  config.data.train_file = 'bibtex_cut.arff'
  config.data.test_file = 'bibtex_cut.arff'
  config.data.xml_file = 'bibtex_cut.xml'
  task = tasks.get_task(config)
  assert (task.splits['train']['x'].shape[1], task.space.units) == (16, 10)
  assert set(task.splits) == {'train', 'dev', 'test'}
  assert task.info['dataset'] == 'custom'


def test_default_data_config_fields():
  d = mlc.data_config()
  assert d.to_dict() == {'name': 'bibtex', 'data_dir': '', 'protocol': 'official', 'dev_fraction': 0.1,
                         'split_seed': 0, 'dev_fold': -1, 'train_file': '', 'test_file': '', 'xml_file': '',
                         'num_labels': 0, 'format': 'mulan', 'source': 'raw', 'tfds_dir': '', 'standardise': 'auto',
                         'empty_f1': 1.0}


# ---------------------------------------------------------------------------------------------------------------
# Errors


def test_unknown_dataset_and_protocol_are_named():
  with pytest.raises(ValueError, match=r"data\.name: unknown dataset 'bibtexx'.*'bibtex'.*'custom'"):
    load_mlc('bibtexx')
  with pytest.raises(ValueError, match=r"data\.protocol: unknown protocol 'seal'; choose one of "
                                       r"\['official', 'resplit'\]"):
    load_mlc('bibtex', protocol='seal')
  with pytest.raises(ValueError, match=r'data\.dev_fraction'):
    load_mlc('bibtex', dev_fraction=0.0)


def test_missing_data_dir_says_what_to_set(monkeypatch):
  monkeypatch.delenv(DATA_DIR_ENV, raising=False)
  with pytest.raises(ValueError) as e:
    load_mlc('delicious', '')
  message = str(e.value)
  assert 'data.data_dir' in message and DATA_DIR_ENV in message and 'delicious' in message
  assert 'mulan/delicious/delicious-train.arff' in message


def test_tfds_source_without_tensorflow_datasets_says_what_to_install(monkeypatch, tmp_path):
  # tensorflow-datasets is an extra: an environment without it (None in sys.modules blocks the import) gets a
  # config error naming the extra, not a ModuleNotFoundError from inside the package.
  monkeypatch.setitem(sys.modules, 'tensorflow_datasets', None)
  monkeypatch.delitem(sys.modules, 'implicit_jax.tasks.mlc.tfds_builders', raising=False)
  monkeypatch.delattr(mlc, 'tfds_builders', raising=False)
  with pytest.raises(ValueError, match=r"data\.source: 'tfds' needs tensorflow-datasets.*implicit_jax\[tfds\]"):
    load_mlc('genbase', str(tmp_path), source='tfds', tfds_dir=str(tmp_path))


def test_env_data_dir_is_used_and_missing_files_are_named(monkeypatch, tmp_path):
  monkeypatch.setenv(DATA_DIR_ENV, str(tmp_path))
  with pytest.raises(FileNotFoundError, match=r'genbase-train\.arff.*data\.data_dir'):
    load_mlc('genbase', '')


def test_custom_errors_name_the_field():
  with pytest.raises(ValueError, match=r'data\.train_file'):
    load_mlc('custom', '')
  with pytest.raises(ValueError, match=r"data\.format: unknown format 'csv'"):
    load_mlc('custom', '', train_file='x.arff', file_format='csv')


# ---------------------------------------------------------------------------------------------------------------
# Real data


def test_real_cal500_and_spo_fun_protocols():
  data_dir = str(shared_data())
  splits, info = load_mlc('cal500', data_dir, 'official', split_seed=0)
  assert info['sizes'] == {'train': 301, 'dev': 101, 'test': 100} and 'no official split' in info['split_note']
  np.testing.assert_allclose(splits['train'][0].mean(axis=0), 0, atol=1e-4)
  splits, info = load_mlc('spo_fun', data_dir, 'official')
  assert info['sizes'] == {'train': 1600, 'dev': 837, 'test': 1266}
  assert 'train+valid' in info['preprocessing'] and splits['train'][1].shape[1] == 499
  pooled = np.concatenate([splits['train'][0], splits['dev'][0]])
  np.testing.assert_allclose(pooled.mean(axis=0), 0, atol=1e-4)


@pytest.mark.slow
@pytest.mark.parametrize('name', sorted(mlc_datasets.DATASETS))
@pytest.mark.parametrize('protocol', ['official', 'resplit'])
def test_real_datasets_load_under_both_protocols(name, protocol):
  start = time.perf_counter()
  splits, info = load_mlc(name, str(shared_data()), protocol, split_seed=0)
  assert time.perf_counter() - start < 20
  sizes = info['sizes']
  if protocol == 'resplit':
    assert sorted(sizes.values()) == sorted(fold_sizes(sum(sizes.values()), FRACTIONS).tolist())
  for x, y in splits.values():
    assert x.dtype == np.float32 and y.dtype == np.float32 and np.isfinite(x).all()


def test_missing_features_without_standardising_name_file_line_and_the_setting(tmp_path):
  path = tmp_path / 'holes.arff'
  path.write_text('@relation r\n@attribute a numeric\n@attribute b numeric\n@attribute L {0,1}\n@data\n' +
                  ''.join(f'{i},{i % 3},{i % 2}\n' for i in range(20)) + '5,?,1\n')
  with pytest.raises(ValueError, match=rf"{path}:26: feature 'b' is missing .*data\.standardise='always'"):
    load_mlc('custom', '', 'resplit', train_file=str(path), num_labels=1, standardise='never')
  splits, info = load_mlc('custom', '', 'resplit', train_file=str(path), num_labels=1)  # auto: dense, imputed
  assert info['standardised'] and all(np.isfinite(x).all() for x, _ in splits.values())


# ---------------------------------------------------------------------------------------------------------------
# Feature scaling (data.standardise)


def test_auto_standardises_features_on_scales_1e_minus_2_to_1e2():
  """The fixture's columns differ by four orders of magnitude; auto z-scores them with train statistics only,
  never reads test rows for it, and records what it did."""
  raw = read_mulan(FIXTURES / 'scaled.arff', None, None).x
  spread = raw.std(axis=0)
  assert spread.max() / spread.min() > 1e3 and raw.min() < 0.1 and raw.max() > 100
  kwargs = dict(train_file='scaled.arff', test_file='scaled.arff')
  splits, info = load_mlc('custom', str(FIXTURES), 'official', 0.2, 0, **kwargs)
  assert info['standardised'] and 'dense numeric' in info['preprocessing']
  x_train = splits['train'][0]
  np.testing.assert_allclose(x_train.mean(axis=0), 0, atol=1e-5)
  np.testing.assert_allclose(x_train.std(axis=0), 1, atol=1e-4)
  # test = the whole file, scaled with the statistics of the train rows alone (recomputed here from the split).
  train_idx, _ = dev_split(raw.shape[0], 0.2, 0)
  fit = raw[train_idx]
  np.testing.assert_allclose(splits['test'][0], (raw - fit.mean(axis=0)) / fit.std(axis=0), rtol=1e-4, atol=1e-5)
  never, info = load_mlc('custom', str(FIXTURES), 'official', 0.2, 0, standardise='never', **kwargs)
  assert not info['standardised'] and "'never'" in info['preprocessing']
  np.testing.assert_allclose(never['test'][0], raw, rtol=1e-6)


def test_auto_keeps_binary_and_sparse_features_as_read():
  splits, info = load_mlc('custom', str(FIXTURES), 'official', 0.2, 0, train_file='bibtex_cut.arff',
                          test_file='bibtex_cut.arff', xml_file='bibtex_cut.xml')
  assert not info['standardised'] and 'binary' in info['preprocessing']
  assert set(np.unique(splits['test'][0])) <= {0.0, 1.0}
  dataset = mlc_datasets.Dataset('mulan', 'x.arff')
  sparse = np.zeros((100, 10))
  sparse[::7, 3] = 2.5  # tf-idf-like: non-binary, 98.6% zeros
  assert mlc_datasets.scaling_decision('auto', dataset, sparse)[0] is False
  assert mlc_datasets.scaling_decision('always', dataset, sparse)[0] is True
  dense = np.random.default_rng(0).normal(size=(50, 4))
  assert mlc_datasets.scaling_decision('auto', dataset, dense)[0] is True
  with pytest.raises(ValueError, match=r"data\.standardise: unknown setting 'yes'"):
    load_mlc('custom', str(FIXTURES), train_file='scaled.arff', standardise='yes')


def test_prediction_inputs_are_scaled_as_the_training_run_scaled_them():
  """``read_for_prediction`` with what the run records (names, codes, statistics) gives the features the run
  evaluated its test split on."""
  kwargs = dict(train_file='scaled.arff', test_file='scaled.arff')
  splits, info = load_mlc('custom', str(FIXTURES), 'official', 0.2, 0, **kwargs)
  assert info['standardised'] and info['preprocess']['standardisation'] is not None
  data = mlc_datasets.read_for_prediction(str(FIXTURES / 'scaled.arff'), 'mulan', label_names=info['names']['y'],
                                          feature_names=info['names']['x'], nominal=info['preprocess']['nominal'],
                                          statistics=info['preprocess']['standardisation'])
  np.testing.assert_array_equal(data.x, splits['test'][0])


@pytest.mark.parametrize('heads', [1, 2])
def test_linear_skip_adds_a_linear_map_of_the_input_to_each_head(heads):
  """model.linear_skip: logits = MLP(x) + W x + b per head; off, the parameter tree is the old one (saved runs
  load unchanged)."""
  from implicit_jax.tasks.mlc.models import MLPInferenceNet  # pylint: disable=import-outside-toplevel
  batch = {'x': jax.random.normal(jax.random.key(0), (6, 4))}
  plain, skip = MLPInferenceNet(3, (5,), heads=heads), MLPInferenceNet(3, (5,), heads=heads, linear_skip=True)
  p_plain, p_skip = plain.init(jax.random.key(1), batch), skip.init(jax.random.key(1), batch)
  names = [f'linear_{i}' for i in range(heads)] if heads > 1 else ['linear']
  assert set(p_skip['params']) == set(p_plain['params']) | set(names)
  assert not set(names) & set(p_plain['params'])
  # With the MLP's parameters of the plain net and the linear part's own, the logits add up.
  shared = {'params': {k: v for k, v in p_skip['params'].items() if k not in names}}
  out_plain = plain.apply(shared, batch)
  out_skip = skip.apply(p_skip, batch)
  for i, name in enumerate(names):
    lin = p_skip['params'][name]
    expected = (out_plain[i] if heads > 1 else out_plain) + batch['x'] @ lin['kernel'] + lin['bias']
    np.testing.assert_allclose(out_skip[i] if heads > 1 else out_skip, expected, rtol=1e-5, atol=1e-6)


def test_a_file_too_small_for_its_splits_is_refused_before_the_run_writes(tmp_path):
  """A training file with no rows, or with too few for a dev and a test row: one line naming the file (or the rows
  each file holds) before the workdir is touched. Before: 'batch_size exceeds 0 examples', and with one row (and
  batch_size 1) a workdir written, then 'predict: no examples' at the first evaluation."""
  from implicit_jax.engine import train  # pylint: disable=import-outside-toplevel
  from tests.conftest import load_config  # pylint: disable=import-outside-toplevel
  header = '@relation r -C -1\n@attribute a {0,1}\n@attribute b {0,1}\n@attribute L {0,1}\n@data\n'
  cases = {'empty.arff': (header, r'empty\.arff: no data rows after @data: nothing to train or evaluate on'),
           'one.arff': (header + '0,1,1\n', r'the dev and test splits are empty: the 60/20/20 split of all rows needs '
                                            r'more rows than the files hold \(rows: .*one\.arff 1\)')}
  for name, (text, message) in cases.items():
    (tmp_path / name).write_text(text)
    config = load_config('custom')
    config.data.train_file, config.batch_size = str(tmp_path / name), 1
    workdir = tmp_path / f'run_{name}'
    with pytest.raises(ValueError, match=message):
      train.train_and_evaluate(config, str(workdir))
    assert not workdir.exists()
  # the fewest a 60/20/20 split takes (each split with a positive label: tests/test_mlc_data.py's no-label test)
  (tmp_path / 'four.arff').write_text(header + '0,1,1\n1,0,1\n1,1,1\n0,0,1\n')
  splits, _ = load_mlc('custom', '', 'official', train_file=str(tmp_path / 'four.arff'))
  assert [len(splits[s][0]) for s in ('train', 'dev', 'test')] == [2, 1, 1]


@pytest.mark.parametrize('labels', ['0,0,0,0,0,0,0,0,0,0', '1,0,0,0,0,0,0,0,0,0'])
def test_a_split_without_a_positive_label_is_refused_naming_the_file(tmp_path, labels):
  """All-zero labels (or a dev or test split left without a positive one): example F1 scores an example with no true
  and no predicted label as 1, so such a run reported dev and test F1 of 100 from epoch 1. Refused before training,
  naming the file and the fields that say which columns are labels."""
  header = '@relation r -C -1\n@attribute a numeric\n@attribute b numeric\n@attribute L {0,1}\n@data\n'
  rows = ''.join(f'{i},{i % 3},{y}\n' for i, y in enumerate(labels.split(',')))
  path = tmp_path / 'zeros.arff'
  path.write_text(header + rows)
  with pytest.raises(ValueError, match=r'zeros\.arff: the .*split.* no positive label in any row .*data\.num_labels'):
    load_mlc('custom', '', 'resplit', split_seed=0, train_file=str(path))


def test_a_dataset_name_given_with_a_file_of_ones_own_is_refused():
  """configs/custom.py with --config.data.name=bibtex and a train file trained on bibtex and recorded the file: the
  file is read only for data.name='custom', so the two together are refused, naming both."""
  with pytest.raises(ValueError, match=r"data\.train_file given with data\.name='bibtex', which reads its own files"):
    load_mlc('bibtex', '', train_file=str(FIXTURES / 'scaled.arff'))
