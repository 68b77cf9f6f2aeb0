"""Tests for implicit_jax.tasks.mlc.tfds_builders and the ``data.source='tfds'`` pipeline.

The fast tests build each dataset from a manual dir holding the 5-row fixture cuts (tests/fixtures/mlc) placed
where the dataset expects its files, with the builders' feature/label sizes patched to the cuts'.  Building the
real datasets from /work/shared/data is marked slow and skips when the folder is absent.
"""

import shutil
import sys
from pathlib import Path
from xml.sax.saxutils import quoteattr

import chex
import ml_collections
import numpy as np
import pytest
import tensorflow_datasets as tfds

from implicit_jax import tasks
from implicit_jax.engine import config as config_lib
from implicit_jax.tasks.mlc import tfds_builders
from implicit_jax.tasks.mlc.arff import read_clus_hmc, read_mulan
from implicit_jax.tasks.mlc.datasets import DATASETS, PROTOCOLS, load_mlc
from tests.test_arff import FIXTURES, shared_data

NAMES = sorted(tfds_builders.BUILDERS)
# Fixture cut standing in for each dataset's files (delicious has none: bibtex's has its format); its XML, if any.
CUTS = {'bibtex': ('bibtex_cut.arff', 'bibtex_cut.xml'), 'delicious': ('bibtex_cut.arff', 'bibtex_cut.xml'),
        'genbase': ('genbase_cut.arff', 'genbase_cut.xml'), 'cal500': ('cal500_cut.arff', None),
        'spo_fun': ('spo_cut.arff', None)}


def make_manual_dir(root: Path, name: str) -> Path:
  """``root`` laid out like the project's data dir for ``name``, every split file being the fixture cut."""
  dataset, (arff, xml) = DATASETS[name], CUTS[name]
  for relative in (dataset.train, dataset.valid, dataset.test):
    if relative:
      (root / relative).parent.mkdir(parents=True, exist_ok=True)
      shutil.copy(FIXTURES / arff, root / relative)
  if dataset.xml:
    if xml:
      shutil.copy(FIXTURES / xml, root / dataset.xml)
    else:  # the cal500 cut names its labels with MEKA's -C; the dataset reads cal500.xml
      labels = ''.join(f'<label name={quoteattr(n)}/>' for n in read_mulan(FIXTURES / arff).label_names)
      (root / dataset.xml).write_text(f'<labels xmlns="http://mulan.sourceforge.net/labels">{labels}</labels>')
  return root


def raw_parts(name: str, root: Path) -> dict:
  """The official splits through the public readers, independently of the builders' code path."""
  dataset = DATASETS[name]
  read = (read_clus_hmc if dataset.format == 'clus' else
          lambda path: read_mulan(path, root / dataset.xml))
  return {s: read(root / f) for s, f in (('train', dataset.train), ('valid', dataset.valid), ('test', dataset.test))
          if f}


def fit_builder_to(monkeypatch, name: str, parts: dict) -> None:
  """The builders declare the real datasets' sizes; the cuts are smaller."""
  first = parts['train']
  monkeypatch.setattr(tfds_builders.BUILDERS[name], 'NUM_FEATURES', first.x.shape[1])
  monkeypatch.setattr(tfds_builders.BUILDERS[name], 'NUM_LABELS', first.y.shape[1])


def assert_records_equal_parts(sources, parts) -> None:
  assert set(sources) == set(parts)
  for split, part in parts.items():
    source = sources[split]
    assert len(source) == part.num_examples
    records = source.__getitems__(range(len(source)))
    for i, record in enumerate(records):  # record i is row i: shuffling is off
      chex.assert_trees_all_equal(record, {'x': part.x[i], 'y': part.y[i], 'index': np.int64(i)})
      assert record['x'].dtype == np.float32 and record['y'].dtype == np.int8


# ---------------------------------------------------------------------------------------------------------------
# Builders


@pytest.mark.parametrize('name', NAMES)
def test_builder_from_manual_dir_gives_the_raw_readers_records(name, tmp_path, monkeypatch):
  root = make_manual_dir(tmp_path / 'manual', name)
  parts = raw_parts(name, root)
  fit_builder_to(monkeypatch, name, parts)
  sources = tfds.data_source(f'implicit_jax_{name}', data_dir=str(tmp_path / 'tfds'), download_and_prepare_kwargs={
      'download_config': tfds.download.DownloadConfig(manual_dir=str(root))})
  assert set(sources) == set(parts)  # cal500: train only; spo_fun: train, valid, test
  assert_records_equal_parts(sources, parts)
  builder = tfds_builders.builder_for(name, str(tmp_path / 'tfds'))
  assert builder.info.file_format == tfds.core.FileFormat.ARRAY_RECORD
  assert list(Path(builder.data_dir).glob('*.array_record-*'))
  assert builder.info.metadata['label_names'] == list(parts['train'].label_names)
  assert builder.info.metadata['feature_names'] == list(parts['train'].feature_names)
  assert_records_equal_parts(builder.as_data_source(), parts)
  arrays = tfds_builders.load_tfds_arrays(name, str(tmp_path / 'tfds'))  # prepared: no manual dir needed now
  chex.assert_trees_all_equal(arrays, {s: (p.x, p.y) for s, p in parts.items()})
  assert 'tensorflow' not in sys.modules


def test_builder_names_stay_out_of_the_tfds_catalog():
  assert {b.name for b in tfds_builders.BUILDERS.values()} == {f'implicit_jax_{n}' for n in NAMES}
  assert set(tfds_builders.BUILDERS) == set(DATASETS)
  for name in NAMES:
    assert f'implicit_jax_{name}' in tfds.list_builders(with_community_datasets=False)
    assert set(tfds_builders.URLS[name]) and all(u.startswith('https://') for u in tfds_builders.URLS[name].values())


def test_wrong_sizes_are_reported(tmp_path):
  root = make_manual_dir(tmp_path / 'manual', 'genbase')
  builder = tfds_builders.builder_for('genbase', str(tmp_path / 'tfds'))
  with pytest.raises(ValueError, match=r'10 features and 6 labels, but implicit_jax_genbase expects 1185 and 27'):
    builder.download_and_prepare(download_config=tfds.download.DownloadConfig(manual_dir=str(root)))


class FakeDownloadManager:
  """No manual dir; ``download_and_extract`` returns prepared paths, as TFDS would after downloading."""

  def __init__(self, results):
    self.results, self.requested = results, None

  @property
  def manual_dir(self):
    raise AssertionError('Manual directory not enabled.')

  def download_and_extract(self, urls):
    self.requested = urls
    return self.results


def test_download_path_finds_the_files_by_name(tmp_path):
  # cal500: the archive comes back extracted, with MULAN's upper-case names.
  root = make_manual_dir(tmp_path / 'manual', 'cal500')
  unpacked = tmp_path / 'dl' / 'CAL500'
  unpacked.mkdir(parents=True)
  shutil.copy(root / DATASETS['cal500'].train, unpacked / 'CAL500.arff')
  shutil.copy(root / DATASETS['cal500'].xml, unpacked / 'CAL500.xml')
  dl = FakeDownloadManager({'CAL500.rar': unpacked})
  parts = tfds_builders.BUILDERS['cal500'](data_dir=str(tmp_path / 'tfds'))._read_parts(dl)
  assert dl.requested == tfds_builders.URLS['cal500']
  chex.assert_trees_all_equal({s: (p.x, p.y) for s, p in parts.items()},
                              {s: (p.x, p.y) for s, p in raw_parts('cal500', root).items()})
  # spo_fun: plain files, stored by TFDS under names derived from the URL.
  files = {}
  for k, name in enumerate(tfds_builders.URLS['spo_fun']):
    files[name] = tmp_path / 'dl' / f'raw.githubusercontent.com_{k}'
    shutil.copy(FIXTURES / 'spo_cut.arff', files[name])
  parts = tfds_builders.BUILDERS['spo_fun'](data_dir=str(tmp_path / 'tfds'))._read_parts(FakeDownloadManager(files))
  assert set(parts) == {'train', 'valid', 'test'} and parts['valid'].num_examples == 5


def test_rar_without_a_tool_says_what_to_do(tmp_path, monkeypatch):
  monkeypatch.setattr(tfds_builders.shutil, 'which', lambda tool: None)
  archive = tmp_path / 'bibtex.rar'
  archive.write_bytes(b'Rar!')
  dl = FakeDownloadManager({'bibtex.rar': archive})
  with pytest.raises(RuntimeError, match=r'cannot extract RAR.*unrar.*manual dir') as e:
    tfds_builders.BUILDERS['bibtex'](data_dir=str(tmp_path / 'tfds'))._read_parts(dl)
  assert any('DownloadConfig(manual_dir=' in note for note in e.value.__notes__)


# ---------------------------------------------------------------------------------------------------------------
# The pipeline: data.source


@pytest.mark.parametrize('name', NAMES)
def test_tfds_source_gives_the_raw_source_arrays(name, tmp_path, monkeypatch):
  root = make_manual_dir(tmp_path / 'manual', name)
  fit_builder_to(monkeypatch, name, raw_parts(name, root))
  for protocol in PROTOCOLS:
    raw, raw_info = load_mlc(name, str(root), protocol, 0.2, split_seed=3)
    from_tfds, tfds_info = load_mlc(name, str(root), protocol, 0.2, split_seed=3, source='tfds',
                                    tfds_dir=str(tmp_path / 'tfds'))
    chex.assert_trees_all_equal(from_tfds, raw)
    assert (raw_info['source'], tfds_info['source']) == ('raw', 'tfds')
    assert all(f.startswith(str(tmp_path / 'tfds' / f'implicit_jax_{name}')) for f in tfds_info['files'])
    assert without_origin(tfds_info) == without_origin(raw_info)


def without_origin(info: dict) -> dict:
  # 'preprocess' records the ARFF reader's nominal value codes, which a TFDS source does not carry (predict then
  # reads a new file's values in its own order: docs/faults.md); the arrays themselves are compared above.
  return {k: v for k, v in info.items() if k not in ('source', 'files', 'preprocess')}


def mlc_config(**data) -> ml_collections.ConfigDict:
  config = config_lib.base_config(task='mlc')
  config.data.update(data)
  return config


def test_task_config_reads_tfds(tmp_path, monkeypatch):
  root = make_manual_dir(tmp_path / 'manual', 'genbase')
  fit_builder_to(monkeypatch, 'genbase', raw_parts('genbase', root))
  raw = tasks.get_task(mlc_config(name='genbase', data_dir=str(root)))
  from_tfds = tasks.get_task(mlc_config(name='genbase', data_dir=str(root), source='tfds',
                                        tfds_dir=str(tmp_path / 'tfds')))
  chex.assert_trees_all_equal(from_tfds.splits, raw.splits)
  assert from_tfds.info['source'] == 'tfds'
  assert (from_tfds.splits['train']['x'].shape[1], from_tfds.space.units) == (10, 6)


def test_unknown_source_is_named_with_the_choices():
  message = r"data\.source: unknown source 'parquet'; choose one of \['raw', 'tfds'\]"
  with pytest.raises(ValueError, match=message):
    load_mlc('bibtex', source='parquet')
  with pytest.raises(ValueError, match=message):
    tasks.get_task(mlc_config(source='parquet'))
  with pytest.raises(ValueError, match=r"data\.source: 'tfds'.*data\.name='custom'"):
    load_mlc('custom', train_file='x.arff', source='tfds')


# ---------------------------------------------------------------------------------------------------------------
# Real data


@pytest.mark.slow
@pytest.mark.parametrize('name', NAMES)
def test_real_datasets_build_and_match_the_raw_pipeline(name, tmp_path):
  root = shared_data()
  arrays = tfds_builders.load_tfds_arrays(name, str(tmp_path), manual_dir=str(root))
  chex.assert_trees_all_equal(arrays, {s: (p.x, p.y) for s, p in raw_parts(name, root).items()})
  raw, _ = load_mlc(name, str(root), 'official', split_seed=1)
  from_tfds, _ = load_mlc(name, str(root), 'official', split_seed=1, source='tfds', tfds_dir=str(tmp_path))
  chex.assert_trees_all_equal(from_tfds, raw)
