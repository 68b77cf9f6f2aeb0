"""TensorFlow Datasets builders for the multi-label benchmarks, written as array_record (no TensorFlow needed).

Builders (registered when this module is imported; the ``implicit_jax_`` prefix keeps them apart from TFDS's
own catalog), one per dataset of ``mlc_datasets.DATASETS``::

  implicit_jax_bibtex     train 4880 / test 2515               x [1836]  y [159]
  implicit_jax_delicious  train 12920 / test 3185              x [500]   y [983]
  implicit_jax_genbase    train 463 / test 199                 x [1185]  y [27]
  implicit_jax_cal500     train 502 (the whole file)           x [68]    y [174]
  implicit_jax_spo_fun    train 1600 / valid 837 / test 1266   x [86]    y [499]

A record is ``{'x': float32 [num_features], 'y': int8 0/1 [num_labels], 'index': row in its file}``, exactly
what ``read_mulan`` / ``read_clus_hmc`` give (FunCat NaN = missing, nothing scaled or imputed), and record ``i``
is row ``i`` (shuffling is disabled).  Feature and label names are in ``builder.info.metadata``.  Dev splits,
scaling and imputation are not stored: ``load_mlc`` derives them from these arrays exactly as from the raw
files, so ``data.source='tfds'`` and ``'raw'`` train on identical arrays.  CAL500 has one file and no official
split: it is the ``train`` split here, and ``load_mlc`` applies the project's seeded 60/20/20 split afterwards.

Preparing.  From a manual directory laid out like the project's data directory (``mulan/bibtex/bibtex-train.arff``,
``mulan/bibtex/bibtex.xml``, ..., ``mulan/cal500/cal500.arff``, ``funcat/spo_FUN.{train,valid,test}.arff``)::

  import tensorflow_datasets as tfds
  from implicit_jax.tasks.mlc import tfds_builders  # registers the builders

  ds = tfds.data_source('implicit_jax_bibtex', data_dir='~/tensorflow_datasets', download_and_prepare_kwargs={
      'download_config': tfds.download.DownloadConfig(manual_dir='/path/to/data')})
  ds['train'][0]  # {'x': array([0., 1., ...], dtype=float32), 'y': array([0, 1, ...], dtype=int8), 'index': 0}
  arrays = tfds_builders.load_tfds_arrays('bibtex', '~/tensorflow_datasets', manual_dir='/path/to/data')

When the manual directory lacks the dataset (none given: TFDS looks in ``<data_dir>/downloads/manual``), the
builder downloads ``URLS``: MULAN's SourceForge RAR archives, which TFDS cannot extract, so ``unrar``, ``7z`` or
``bsdtar`` must be on PATH, and the FunCat files from the C-HMCNN repository.  That path is untested (written
offline).  In training configs: ``data.source='tfds'`` and ``data.tfds_dir`` (``data.data_dir`` is the manual dir).
tensorflow-datasets is an extra, not a requirement: ``pip install 'implicit_jax[tfds]'``.

TensorFlow: TFDS's no-TF mode prepares and reads array_record files (``download_and_prepare``,
``as_data_source``, ``tfds.data_source``); these builders default to that format.  ``as_dataset`` (tf.data)
and the ``tfrecord`` format need TensorFlow.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import tensorflow_datasets as tfds
from etils import epath

from implicit_jax.tasks.mlc import files as mlc_datasets
from implicit_jax.tasks.mlc.arff import MultiLabelData

__all__ = ['BUILDERS', 'URLS', 'MlcBuilder', 'builder_for', 'load_tfds_arrays', 'load_tfds_parts']

# The project's own reader of a dataset's files, so that both sources read them identically.
_read_files = mlc_datasets._read_files  # pylint: disable=protected-access

_MULAN = 'https://sourceforge.net/projects/mulan/files/datasets/{}.rar/download'
_FUNCAT = 'https://raw.githubusercontent.com/EGiunchiglia/C-HMCNN/master/HMC_data/datasets_FUN/spo_FUN/{}'
# Download file name -> URL.  A file is matched to ``DATASETS`` by base name, case-insensitively (CAL500.rar
# holds CAL500.arff and CAL500.xml).
URLS = {
    'bibtex': {'bibtex.rar': _MULAN.format('bibtex')},
    'delicious': {'delicious.rar': _MULAN.format('delicious')},
    'genbase': {'genbase.rar': _MULAN.format('genbase')},
    'cal500': {'CAL500.rar': _MULAN.format('CAL500')},
    'spo_fun': {f: _FUNCAT.format(f) for f in ('spo_FUN.train.arff', 'spo_FUN.valid.arff', 'spo_FUN.test.arff')},
}
_MULAN_HOME = 'http://mulan.sourceforge.net/datasets-mlc.html'
# Tools that unpack RAR archives, with their arguments (archive, output directory).
_UNRAR = (('unrar', lambda a, o: ['x', '-o+', '-y', a, f'{o}/']), ('7z', lambda a, o: ['x', '-y', f'-o{o}', a]),
          ('bsdtar', lambda a, o: ['-xf', a, '-C', o]))


class MlcBuilder(tfds.core.GeneratorBasedBuilder, skip_registration=True):
  """Shared by the dataset builders: they differ only in the class attributes below."""

  VERSION = tfds.core.Version('1.0.0')
  RELEASE_NOTES = {'1.0.0': 'Official splits as read by implicit_jax.tasks.mlc.arff.'}
  DATASET = ''  # key of mlc_datasets.DATASETS
  NUM_FEATURES = 0
  NUM_LABELS = 0
  HOMEPAGE = _MULAN_HOME
  CITATION = ''
  # TFDS 4.9.10 infers this with the `importlib_resources` backport, which it installs only before Python 3.9.
  # It locates checksums.tsv beside this file (there is none: downloads are not checksum-pinned).
  code_path = epath.Path(__file__)
  MANUAL_DOWNLOAD_INSTRUCTIONS = """
  Optional (without it the files are downloaded): a folder laid out like the project's data directory,
  mulan/<name>/<name>-{train,test}.arff + mulan/<name>/<name>.xml for bibtex, delicious and genbase,
  mulan/cal500/cal500.arff + cal500.xml, funcat/spo_FUN.{train,valid,test}.arff. Pass it as
  tfds.download.DownloadConfig(manual_dir=...).
  """

  def __init__(self, *, file_format=None, **kwargs):
    # TFDS's default, tfrecord, needs TensorFlow to write; array_record also gives random access.
    super().__init__(file_format=file_format or tfds.core.FileFormat.ARRAY_RECORD, **kwargs)

  def _info(self) -> tfds.core.DatasetInfo:
    zlib = tfds.features.Encoding.ZLIB  # the 0/1 rows are mostly zeros
    return tfds.core.DatasetInfo(
        builder=self,
        description=f'{self.DATASET} as read by implicit_jax.tasks.mlc.arff, official splits, unscaled.',
        features=tfds.features.FeaturesDict({
            'x': tfds.features.Tensor(shape=(self.NUM_FEATURES,), dtype=np.float32, encoding=zlib),
            'y': tfds.features.Tensor(shape=(self.NUM_LABELS,), dtype=np.int8, encoding=zlib),
            'index': np.int64,
        }),
        supervised_keys=('x', 'y'),
        homepage=self.HOMEPAGE,
        citation=self.CITATION,
        metadata=tfds.core.MetadataDict(),
        disable_shuffling=True,  # record i = row i of the file, as the raw readers give it
    )

  def _split_generators(self, dl_manager: tfds.download.DownloadManager):
    parts = self._read_parts(dl_manager)
    first = parts['train']
    if (first.x.shape[1], first.y.shape[1]) != (self.NUM_FEATURES, self.NUM_LABELS):
      raise ValueError(f'{first.source}: {first.x.shape[1]} features and {first.y.shape[1]} labels, but {self.name} '
                       f'expects {self.NUM_FEATURES} and {self.NUM_LABELS}')
    self.info.metadata['feature_names'] = list(first.feature_names)
    self.info.metadata['label_names'] = list(first.label_names)
    return {split: self._generate_examples(part) for split, part in parts.items()}

  def _generate_examples(self, part: MultiLabelData):
    for i in range(part.num_examples):
      yield i, {'x': part.x[i], 'y': part.y[i], 'index': i}

  def _read_parts(self, dl_manager) -> dict[str, MultiLabelData]:
    """``{'train', 'valid'?, 'test'?: MultiLabelData}`` from the manual dir if it holds the dataset, else downloaded."""
    dataset = mlc_datasets.DATASETS[self.DATASET]
    manual = _manual_dir(dl_manager)
    if manual is not None and (manual / dataset.train).is_file():
      return _read_files(self.DATASET, dataset, manual)[0]
    try:
      found = _fetch(dl_manager, URLS[self.DATASET])
    except Exception as e:
      e.add_note(f'{self.name}: no {dataset.train} under the manual dir ({manual}), so it was downloaded; '
                 f'offline, pass tfds.download.DownloadConfig(manual_dir=...) with the files')
      raise
    local = {f: str(_find(found, getattr(dataset, f))) for f in ('train', 'test', 'valid', 'xml')
             if getattr(dataset, f)}
    return _read_files(self.DATASET, dataclasses.replace(dataset, **local), None)[0]


def _manual_dir(dl_manager) -> Path | None:
  try:
    return Path(dl_manager.manual_dir)
  except AssertionError:  # TFDS's way of saying: no manual dir, or an empty one
    return None


def _fetch(dl_manager, urls: dict[str, str]) -> dict[str, Path]:
  """Downloads ``urls``; returns every file obtained (archives unpacked), keyed by lower-case base name."""
  found = {}
  for name, path in dl_manager.download_and_extract(urls).items():
    path = Path(path)
    if name.lower().endswith('.rar') and path.is_file():
      path = _unrar(path)
    if path.is_dir():
      found.update({f.name.lower(): f for f in path.rglob('*') if f.is_file()})
    else:  # TFDS names downloads after the URL, so key a plain file by our name for it
      found[name.lower()] = path
  return found


def _unrar(archive: Path) -> Path:
  out = archive.parent / f'{archive.name}.unpacked'
  if out.is_dir():
    return out
  for tool, arguments in _UNRAR:
    if shutil.which(tool):
      tmp = archive.parent / f'{archive.name}.unpacking'
      shutil.rmtree(tmp, ignore_errors=True)
      tmp.mkdir(parents=True)
      subprocess.run([tool, *arguments(str(archive), str(tmp))], check=True, capture_output=True)
      os.replace(tmp, out)
      return out
  raise RuntimeError(f'{archive}: TFDS cannot extract RAR archives and none of {[t for t, _ in _UNRAR]} is on '
                     f'PATH; install one, or unpack it yourself into a manual dir (see MANUAL_DOWNLOAD_INSTRUCTIONS)')


def _find(found: dict[str, Path], relative: str) -> Path:
  name = Path(relative).name.lower()
  if name not in found:
    raise FileNotFoundError(f'{Path(relative).name}: not among the downloaded files {sorted(found)}')
  return found[name]


class ImplicitJaxBibtex(MlcBuilder):
  """MULAN bibtex (Katakis et al. 2008): bag-of-words of BibSonomy entries, their tags as labels."""

  name = 'implicit_jax_bibtex'
  DATASET, NUM_FEATURES, NUM_LABELS = 'bibtex', 1836, 159
  CITATION = ('Katakis, Tsoumakas, Vlahavas. Multilabel text classification for automated tag suggestion. '
              'ECML PKDD 2008 Discovery Challenge.')


class ImplicitJaxDelicious(MlcBuilder):
  """MULAN delicious (Tsoumakas et al. 2008): web page words, their del.icio.us tags as labels."""

  name = 'implicit_jax_delicious'
  DATASET, NUM_FEATURES, NUM_LABELS = 'delicious', 500, 983
  CITATION = ('Tsoumakas, Katakis, Vlahavas. Effective and efficient multilabel classification in domains with '
              'large number of labels. ECML PKDD 2008 Workshop on Mining Multidimensional Data.')


class ImplicitJaxGenbase(MlcBuilder):
  """MULAN genbase: protein motif (YES/NO) features, protein families as labels; the protein id is dropped."""

  name = 'implicit_jax_genbase'
  DATASET, NUM_FEATURES, NUM_LABELS = 'genbase', 1185, 27
  CITATION = 'Diplaris et al. Protein classification with multiple algorithms. PCI 2005.'


class ImplicitJaxCal500(MlcBuilder):
  """MULAN CAL500 (Turnbull et al. 2008): audio features of songs, semantic annotations as labels; one split."""

  name = 'implicit_jax_cal500'
  DATASET, NUM_FEATURES, NUM_LABELS = 'cal500', 68, 174
  CITATION = ('Turnbull, Barrington, Torres, Lanckriet. Semantic annotation and retrieval of music and sound '
              'effects. IEEE TASLP 16(2), 2008.')


class ImplicitJaxSpoFun(MlcBuilder):
  """FunCat spo_FUN (Clus HMC): yeast gene features, FunCat hierarchy nodes (ancestors positive) as labels."""

  name = 'implicit_jax_spo_fun'
  DATASET, NUM_FEATURES, NUM_LABELS = 'spo_fun', 86, 499
  HOMEPAGE = 'https://dtai.cs.kuleuven.be/clus/hmcdatasets/'
  CITATION = ('Vens, Struyf, Schietgat, Dzeroski, Blockeel. Decision trees for hierarchical multi-label '
              'classification. Machine Learning 73(2), 2008.')


BUILDERS = {b.DATASET: b for b in (ImplicitJaxBibtex, ImplicitJaxDelicious, ImplicitJaxGenbase, ImplicitJaxCal500,
                                   ImplicitJaxSpoFun)}


def builder_for(name: str, data_dir: str = '') -> MlcBuilder:
  """The builder of project dataset ``name``; ``data_dir=''`` is TFDS's default (``$TFDS_DATA_DIR`` or
  ``~/tensorflow_datasets``)."""
  if name not in BUILDERS:
    raise ValueError(f'no TFDS builder for dataset {name!r}; choose one of {sorted(BUILDERS)}')
  return BUILDERS[name](data_dir=os.path.expanduser(data_dir) if data_dir else None)


def load_tfds_parts(name: str, data_dir: str = '', manual_dir: str | None = None) -> dict[str, MultiLabelData]:
  """Prepares ``name`` if needed, then reads every split back as ``MultiLabelData`` (the raw readers' type)."""
  builder = builder_for(name, data_dir)
  builder.download_and_prepare(download_config=tfds.download.DownloadConfig(manual_dir=manual_dir or None))
  metadata = builder.info.metadata
  sources = builder.as_data_source()
  parts = {}
  for split in ('train', 'valid', 'test'):  # mlc_datasets' order
    if split not in sources:
      continue
    records = sources[split].__getitems__(range(len(sources[split])))
    order = np.argsort([r['index'] for r in records], kind='stable')
    parts[split] = MultiLabelData(
        x=np.stack([records[i]['x'] for i in order]), y=np.stack([records[i]['y'] for i in order]),
        feature_names=metadata['feature_names'], label_names=metadata['label_names'],
        source=f'{builder.data_dir}:{split}')
  return parts


def load_tfds_arrays(name: str, data_dir: str = '', manual_dir: str | None = None
                     ) -> dict[str, tuple[np.ndarray, np.ndarray]]:
  """``{split: (x float32 [n, D], y int8 [n, L])}``, the official splits as stored (see the module docstring)."""
  return {split: (part.x, part.y) for split, part in load_tfds_parts(name, data_dir, manual_dir).items()}
