r"""Builds ``bibtex.npz`` (next to this file) from the MULAN bibtex files, so bibtex runs with no data folder.

Run:  python -m implicit_jax.tasks.mlc.embedded.build_bibtex --data_dir=/work/shared/data

Reads ``mulan/bibtex/bibtex-{train,test}.arff`` and ``bibtex.xml`` under ``--data_dir``.  Features and labels
are all 0/1 and sparse (about 69 of 1836 features and 2.4 of 159 labels per row), so each split is stored as
CSR without values: ``{split}_x_indices`` (uint16 column of each 1) with ``{split}_x_indptr`` (int32 row
starts), and ``{split}_y_indices`` / ``{split}_y_indptr`` likewise, plus ``feature_names``, ``label_names``
and ``source`` (the files and their sha1).  ``mlc_datasets.load_embedded_bibtex`` reads it back.
"""

import argparse
import hashlib
from pathlib import Path

import numpy as np

from implicit_jax.tasks.mlc.arff import read_mulan

FORMAT_VERSION = 1
SPLITS = ('train', 'test')
OUTPUT = Path(__file__).resolve().parent / 'bibtex.npz'


def csr_pattern(a: np.ndarray, what: str) -> tuple[np.ndarray, np.ndarray]:
  """(indices uint16, indptr int32) of the ones of a 0/1 matrix; anything else is an error (no values kept)."""
  if not np.isin(a, (0, 1)).all():
    raise ValueError(f'{what}: not 0/1, cannot be stored as a sparsity pattern')
  if a.shape[1] > np.iinfo(np.uint16).max + 1:
    raise ValueError(f'{what}: {a.shape[1]} columns do not fit uint16 indices')
  rows, cols = np.nonzero(a)
  indptr = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=a.shape[0]))]).astype(np.int32)
  return cols.astype(np.uint16), indptr


def _sha1(path: Path) -> str:
  return hashlib.sha1(path.read_bytes()).hexdigest()


def build(data_dir: str, output: Path = OUTPUT) -> Path:
  root = Path(data_dir) / 'mulan' / 'bibtex'
  xml = root / 'bibtex.xml'
  arrays, names, sources = {'format_version': np.int32(FORMAT_VERSION)}, None, []
  for split in SPLITS:
    path = root / f'bibtex-{split}.arff'
    data = read_mulan(path, xml)
    if names is not None and names != (data.feature_names, data.label_names):
      raise ValueError(f'{path}: feature or label names differ from the train file')
    names = (data.feature_names, data.label_names)
    arrays[f'{split}_x_indices'], arrays[f'{split}_x_indptr'] = csr_pattern(data.x, f'{path} features')
    arrays[f'{split}_y_indices'], arrays[f'{split}_y_indptr'] = csr_pattern(data.y, f'{path} labels')
    sources.append(f'mulan/bibtex/{path.name} sha1 {_sha1(path)}')
  sources.append(f'mulan/bibtex/{xml.name} sha1 {_sha1(xml)}')
  arrays['feature_names'] = np.array(names[0], dtype=str)
  arrays['label_names'] = np.array(names[1], dtype=str)
  arrays['source'] = np.array('; '.join(sources))
  np.savez_compressed(output, **arrays)
  return output


def main():
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('--data_dir', required=True, help='folder holding mulan/bibtex/ (see module docstring)')
  parser.add_argument('--output', default=str(OUTPUT), help='where to write the .npz (default: the package copy)')
  args = parser.parse_args()
  path = build(args.data_dir, Path(args.output))
  print(f'wrote {path} ({path.stat().st_size / 1e6:.2f} MB)')


if __name__ == '__main__':
  main()
