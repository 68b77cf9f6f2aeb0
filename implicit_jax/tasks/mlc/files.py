"""The multi-label datasets' files: where each lies under a data directory (``DATASETS``), how it is read (MULAN or
Clus ARFF, ``arff``), the embedded bibtex, and a file of your own (``data.name='custom'``). ``datasets`` splits and
scales what is read here; ``tfds_builders`` packs it as TFDS datasets."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import numpy as np

from implicit_jax.tasks import DATA_DIR_ENV
from implicit_jax.tasks.mlc.arff import MultiLabelData, read_clus_hmc, read_mulan

FORMATS = ('mulan', 'clus')
EMBEDDED_BIBTEX = Path(__file__).resolve().parent / 'embedded' / 'bibtex.npz'


@dataclasses.dataclass(frozen=True)
class Dataset:
  """Where a dataset's files live under a data directory, and how to read and scale them."""

  format: str  # 'mulan' or 'clus'
  train: str
  test: str = ''  # '' = no official split
  valid: str = ''  # an official dev split (FunCat)
  xml: str = ''
  num_labels: int = 0  # labels = last num_labels attributes when there is no XML and no MEKA -C


DATASETS = {
    'bibtex': Dataset('mulan', 'mulan/bibtex/bibtex-train.arff', 'mulan/bibtex/bibtex-test.arff',
                      xml='mulan/bibtex/bibtex.xml'),
    'delicious': Dataset('mulan', 'mulan/delicious/delicious-train.arff', 'mulan/delicious/delicious-test.arff',
                         xml='mulan/delicious/delicious.xml'),
    'genbase': Dataset('mulan', 'mulan/genbase/genbase-train.arff', 'mulan/genbase/genbase-test.arff',
                       xml='mulan/genbase/genbase.xml'),
    'cal500': Dataset('mulan', 'mulan/cal500/cal500.arff', xml='mulan/cal500/cal500.xml'),
    'spo_fun': Dataset('clus', 'funcat/spo_FUN.train.arff', 'funcat/spo_FUN.test.arff',
                       valid='funcat/spo_FUN.valid.arff'),
}


# --------------------------------------------------------------------------------------------------------------
# Embedded bibtex


def _from_pattern(indices: np.ndarray, indptr: np.ndarray, num_columns: int) -> np.ndarray:
  """Dense 0/1 int8 matrix from a CSR sparsity pattern (the inverse of ``build_bibtex.csr_pattern``)."""
  a = np.zeros((len(indptr) - 1, num_columns), dtype=np.int8)
  a[np.repeat(np.arange(len(indptr) - 1), np.diff(indptr)), indices.astype(np.int64)] = 1
  return a


def load_embedded_bibtex() -> dict[str, MultiLabelData]:
  """The MULAN bibtex train (4880 rows) and test (2515) splits from the package's ``bibtex.npz``."""
  with np.load(EMBEDDED_BIBTEX, allow_pickle=False) as z:
    feature_names, label_names = tuple(z['feature_names'].tolist()), tuple(z['label_names'].tolist())
    out = {}
    for split in ('train', 'test'):
      out[split] = MultiLabelData(
          x=_from_pattern(z[f'{split}_x_indices'], z[f'{split}_x_indptr'], len(feature_names)),
          y=_from_pattern(z[f'{split}_y_indices'], z[f'{split}_y_indptr'], len(label_names)),
          feature_names=feature_names, label_names=label_names, source=f'{EMBEDDED_BIBTEX}:{split}',
          nominal={n: {'0': 0.0, '1': 1.0} for n in feature_names})  # MULAN's bibtex declares every feature {0,1}
  return out


# --------------------------------------------------------------------------------------------------------------
# Reading files


def _resolve_data_dir(name: str, data_dir: str) -> Path:
  data_dir = data_dir or os.environ.get(DATA_DIR_ENV, '')
  if not data_dir:
    raise ValueError(
        f"data.data_dir is empty and ${DATA_DIR_ENV} is not set, but dataset {name!r} needs its files (only "
        f"bibtex is embedded): set data.data_dir (e.g. --config.data.data_dir=/path/to/data) or "
        f"${DATA_DIR_ENV} to a folder holding {DATASETS[name].train}")
  return Path(data_dir)


def _custom(train_file, test_file, xml_file, num_labels, file_format) -> Dataset:
  if not train_file:
    raise ValueError("data.train_file: required when data.name is 'custom'")
  if file_format not in FORMATS:
    raise ValueError(f'data.format: unknown format {file_format!r}; choose one of {list(FORMATS)}')
  return Dataset(file_format, train_file, test_file, xml=xml_file, num_labels=num_labels)


def _path(root: Path | None, relative: str, name: str) -> Path:
  path = Path(relative) if root is None else root / relative
  if not path.is_file():
    where = 'as given' if root is None else f'under data.data_dir {str(root)!r}'
    raise FileNotFoundError(f'{path}: no such file (dataset {name!r} expects {relative!r} {where})')
  return path


def _read_files(name: str, dataset: Dataset, root: Path | None) -> tuple[dict, list[str]]:
  """Every file of the dataset as ``{'train'|'valid'|'test': MultiLabelData}``, and their paths for ``info``."""
  paths = {s: _path(root, f, name) for s, f in (('train', dataset.train), ('valid', dataset.valid),
                                                ('test', dataset.test)) if f}
  if dataset.xml:
    xml = _path(root, dataset.xml, name)
    dataset = dataclasses.replace(dataset, xml=str(xml))
  parts = {s: _read(dataset, p) for s, p in paths.items()}
  for part in parts.values():
    if not part.num_examples:  # else the run starts and fails on 'batch_size exceeds 0 examples'
      raise ValueError(f'{part.source}: no data rows after @data: nothing to train or evaluate on')
  first = parts['train']
  for part in parts.values():
    if (part.feature_names, part.label_names) != (first.feature_names, first.label_names):
      raise ValueError(f'{part.source}: features or labels differ from those of {first.source}')
  files = [str(p) for p in paths.values()] + ([dataset.xml] if dataset.xml else [])
  return parts, files


def _read(dataset: Dataset, path: Path) -> MultiLabelData:
  data = read_clus_hmc(path) if dataset.format == 'clus' else read_mulan(path, dataset.xml or None,
                                                                          dataset.num_labels or None)
  data.check_finite(allow_missing=True)  # infinite values are errors now; missing ones once scaling is decided
  return data


def file_format(name: str, custom_format: str = 'mulan') -> str:
  """The file format of dataset ``name`` ('mulan' or 'clus'; ``custom_format`` is data.format of a custom one)."""
  if name == 'custom':
    return custom_format
  if name not in DATASETS:
    raise ValueError(f'data.name: unknown dataset {name!r}; choose one of {sorted(DATASETS) + ["custom"]}')
  return DATASETS[name].format
