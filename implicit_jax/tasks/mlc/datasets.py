"""Known multi-label datasets and ``load_mlc``: train/dev/test arrays under an explicit, recorded protocol.

Datasets (``DATASETS``; paths relative to a data directory laid out like the project's shared data)::

  bibtex     mulan/bibtex/bibtex-{train,test}.arff + bibtex.xml          (also embedded in the package)
  delicious  mulan/delicious/delicious-{train,test}.arff + delicious.xml
  genbase    mulan/genbase/genbase-{train,test}.arff + genbase.xml
  cal500     mulan/cal500/cal500.arff + cal500.xml                      (no official split)
  spo_fun    funcat/spo_FUN.{train,valid,test}.arff                       (Clus HMC)
  custom     your own files: ``train_file``, optional ``test_file``, ``xml_file``, ``num_labels``, ``format``

Protocols:
  * ``official``: the dataset's own train/test; dev is a seeded ``dev_fraction`` hold-out of train, except
    for spo_fun, whose own valid split is the dev split.  A dataset without a split (cal500, a custom dataset
    without ``test_file``) gets a seeded stratified 60/20/20 split instead, and ``info['note']`` says so.
  * ``resplit``: all rows pooled (train, then valid, then test) and split 60/20/20 by iterative stratification
    (``splits.stratified_split``) with ``split_seed``, as SEAL and the implicit paper do for bibtex.

k-fold cross-validation (``dev_fold`` >= 0, ``data.dev_fold``; -1, the default, is the hold-out above): dev is fold
``dev_fold`` of ``round(1 / dev_fraction)`` folds (``splits.kfold_split`` with ``split_seed``) of the training rows,
train the other folds, test as above. The training rows are the official train split; where the rows are split
60/20/20 (``resplit``, or no official split) they are that split's train and dev rows together (its test part stays
the test split). A dataset whose own valid split is the dev split (spo_fun) has no hold-out to cut in folds: refused.

Preprocessing (``standardise``, the ``data.standardise`` setting), always fitted on training rows only:
  * ``'auto'`` (default): mean-impute and z-score every feature (``impute_and_standardise``) unless the training
    features are binary (every value 0 or 1) or sparse (at least ``SPARSE_ZEROS`` of them exactly 0), which are
    used as read. So cal500 (numeric audio features on different scales) and FunCat are standardised; bibtex,
    delicious and genbase (0/1) are not; a custom file is treated by what it holds.
  * ``'always'`` / ``'never'``: whatever the features are.  Missing values (``?``) need standardising (they are
    mean-imputed); with none, a missing feature is an error naming its file and line.
  * FunCat's statistics come from train and valid pooled under ``official``, as C-HMCNN does (valid is the dev
    split here, so dev rows inform the scaling, never the test ones); everything else from the train split.
  ``info['preprocessing']`` says what was done and why, ``info['standardised']`` whether; both are recorded in
  the run's ``metrics.json``; the statistics themselves are recorded in the workdir's ``data.json`` at the run's
  start, and ``read_for_prediction`` applies them to new inputs (not statistics refitted on today's files).

``data_dir=''``: bibtex is read from the embedded copy; any other dataset uses the ``IMPLICIT_JAX_DATA_DIR``
environment variable, or fails with a message saying what to set.  ``info`` pins the run's data: dataset,
protocol, sizes, seed, files (with the data directory) or ``'embedded'``, and ``train_sha1``, a short hash
of the train row numbers (numbered in the pooled order above for ``resplit``, else within the train file).

Sources (``source``): ``'raw'`` reads the files above with ``implicit_jax.tasks.mlc.arff``; ``'tfds'`` reads the
same official splits from the TFDS builders of ``tfds_builders`` (prepared under ``tfds_dir``, from ``data_dir``
as their manual dir, or downloaded).  Both feed the same splitting and scaling, so they give identical arrays.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import sys
from pathlib import Path
from typing import Sequence

import numpy as np

from implicit_jax.tasks.mlc import splits as splitlib
from implicit_jax.tasks.mlc.arff import MultiLabelData, read_clus_hmc, read_mulan, standardisation
from implicit_jax.tasks.mlc.arff import standardise as standardise_with
from implicit_jax.tasks.mlc.files import (  # noqa: F401  (the names this module's users read here)
    DATASETS, EMBEDDED_BIBTEX, FORMATS, Dataset, _custom, _read_files, _resolve_data_dir, load_embedded_bibtex)

__all__ = ['DATASETS', 'DATA_DIR_ENV', 'PROTOCOLS', 'SOURCES', 'Dataset', 'load_embedded_bibtex', 'load_mlc']

from implicit_jax.tasks import DATA_DIR_ENV  # pylint: disable=wrong-import-position
PROTOCOLS = ('official', 'resplit')
SOURCES = ('raw', 'tfds')  # where the official splits' arrays come from (see the module docstring)
STANDARDISE = ('auto', 'always', 'never')
SPARSE_ZEROS = 0.9  # 'auto': training features at least this share exactly zero count as sparse (kept as read)
RESPLIT_FRACTIONS = (0.6, 0.2, 0.2)




def _check_missing(parts, standardised: bool) -> None:
  """Missing features are mean-imputed when standardising; otherwise the first one is an error naming its file."""
  if not standardised:
    for part in parts:
      part.check_finite(allow_missing=False, why=' and features are not standardised, which is where missing '
                        "values are imputed: set data.standardise='always' to impute them")


def scaling_decision(standardise: str, dataset: Dataset, fit_x: np.ndarray) -> tuple[bool, str]:
  """Whether to standardise (``data.standardise`` applied to the training features ``fit_x``), and why."""
  if standardise not in STANDARDISE:
    raise ValueError(f'data.standardise: unknown setting {standardise!r}; choose one of {list(STANDARDISE)}')
  if standardise != 'auto':
    return standardise == 'always', f"data.standardise='{standardise}'"
  if dataset.format == 'clus':
    return True, 'auto: Clus (FunCat) features are imputed and standardised, as C-HMCNN does'
  finite = fit_x[np.isfinite(fit_x)]
  if finite.size and np.all((finite == 0) | (finite == 1)):
    return False, 'auto: binary features'
  zeros = float(np.mean(finite == 0)) if finite.size else 1.0
  if zeros >= SPARSE_ZEROS:
    return False, f'auto: sparse features ({zeros:.0%} zeros)'
  return True, f'auto: dense numeric features ({zeros:.0%} zeros)'


# --------------------------------------------------------------------------------------------------------------
# Splitting and scaling


def _sha1(indices: np.ndarray) -> str:
  return hashlib.sha1(np.asarray(indices, dtype=np.int64).tobytes()).hexdigest()[:12]


def _pool(parts: dict) -> tuple[np.ndarray, np.ndarray]:
  order = [s for s in ('train', 'valid', 'test') if s in parts]
  return (np.concatenate([parts[s].x for s in order]), np.concatenate([parts[s].y for s in order]))


def num_folds(dev_fraction: float) -> int:
  """The folds of k-fold cross-validation (``data.dev_fold``) at ``dev_fraction``: ``round(1 / dev_fraction)``."""
  return int(round(1.0 / dev_fraction))


def check_dev_fold(dev_fold, dev_fraction: float) -> None:
  """``data.dev_fold``: -1 (the seeded ``dev_fraction`` hold-out) or a fold in ``[0, num_folds(dev_fraction))``."""
  if dev_fold == -1 and not isinstance(dev_fold, bool):
    return
  if isinstance(dev_fold, bool) or not isinstance(dev_fold, (int, np.integer)):
    raise ValueError(f'data.dev_fold: must be -1 (the dev_fraction hold-out) or a fold number, got {dev_fold!r}')
  folds = num_folds(dev_fraction)
  if folds < 2:
    raise ValueError(f'data.dev_fold={dev_fold}: k-fold cross-validation needs round(1 / data.dev_fraction) >= 2 '
                     f'folds, got data.dev_fraction={dev_fraction}')
  if not 0 <= dev_fold < folds:
    raise ValueError(f'data.dev_fold must be -1 (the dev_fraction hold-out) or a fold in [0, {folds}) (round(1 / '
                     f'data.dev_fraction) folds at data.dev_fraction={dev_fraction}), got {dev_fold}')


def _kfold(n, dev_fraction, split_seed, dev_fold):
  """``(train, dev)`` positions of fold ``dev_fold`` among ``n`` training rows, and the note's words for it."""
  folds = num_folds(dev_fraction)
  train_idx, dev_idx = splitlib.kfold_split(n, folds, dev_fold, split_seed)
  return train_idx, dev_idx, f'dev = fold {dev_fold} of {folds}-fold cross-validation (data.dev_fold, split_seed)'


def _official(parts, dev_fraction, split_seed, dev_fold=-1):
  """``(rows {split: (x, y)}, train row numbers, note, features to fit the scaling on or None = train)``."""
  if 'test' not in parts:
    return _stratified(parts, split_seed, 'no official split: stratified 60/20/20 of all rows by split_seed',
                       dev_fraction, dev_fold)
  train, test = parts['train'], parts['test']
  if 'valid' in parts:
    if dev_fold >= 0:
      raise ValueError(f'data.dev_fold={dev_fold}: this dataset\'s dev split is its official valid split, not a '
                       'hold-out of train to cut in folds: leave data.dev_fold at -1')
    valid = parts['valid']
    rows = {'train': (train.x, train.y), 'dev': (valid.x, valid.y), 'test': (test.x, test.y)}
    fit_x = np.concatenate([train.x, valid.x])  # C-HMCNN fits its imputer and scaler on train+valid
    return rows, np.arange(train.num_examples), 'dev = the official valid split', fit_x
  if dev_fold >= 0:
    train_idx, dev_idx, note = _kfold(train.num_examples, dev_fraction, split_seed, dev_fold)
    note += ' of the official train split'
  else:
    train_idx, dev_idx = splitlib.dev_split(train.num_examples, dev_fraction, split_seed)
    note = 'dev = seeded dev_fraction hold-out of the official train split'
  rows = {'train': (train.x[train_idx], train.y[train_idx]), 'dev': (train.x[dev_idx], train.y[dev_idx]),
          'test': (test.x, test.y)}
  return rows, train_idx, note, None


def _stratified(parts, split_seed, note, dev_fraction=0.1, dev_fold=-1):
  x, y = _pool(parts)
  folds = splitlib.stratified_split(y, RESPLIT_FRACTIONS, split_seed)
  if dev_fold >= 0:  # the 60/20/20 split's train and dev rows, cut in folds; its test rows stay the test split
    rest = np.sort(np.concatenate(folds[:2]))
    train_pos, dev_pos, how = _kfold(len(rest), dev_fraction, split_seed, dev_fold)
    folds = (rest[train_pos], rest[dev_pos], folds[2])
    note += f'; {how} of its train and dev rows'
  rows = {s: (x[idx], y[idx]) for s, idx in zip(('train', 'dev', 'test'), folds)}
  return rows, folds[0], note, None


def _scale(rows: dict, dataset: Dataset, fit_x: np.ndarray | None, standardise: str,
           parts) -> tuple[dict, dict | None, str]:
  """``(rows, statistics or None, what was done)``: the rows scaled as ``standardise`` decides on the training
  rows; ``statistics`` (``{'mean', 'std'}``, lists) is what predict applies to new inputs."""
  fit = rows['train'][0] if fit_x is None else fit_x
  standardised, why = scaling_decision(standardise, dataset, fit)
  _check_missing(parts.values(), standardised)
  if not standardised:
    return rows, None, f'none, features as read ({why})'
  mean, std = standardisation(fit)
  what = 'train+valid' if fit_x is not None else 'train'
  return ({s: (standardise_with(x, mean, std), y) for s, (x, y) in rows.items()},
          {'mean': mean.tolist(), 'std': std.tolist()},
          f'mean-impute and standardise with {what} statistics ({why})')


# --------------------------------------------------------------------------------------------------------------
# Entry point


def load_mlc(name: str, data_dir: str = '', protocol: str = 'official', dev_fraction: float = 0.1,
             split_seed: int = 0, *, dev_fold: int = -1, train_file: str = '', test_file: str = '', xml_file: str = '',
             num_labels: int = 0, file_format: str = 'mulan', source: str = 'raw',
             tfds_dir: str = '', standardise: str = 'auto') -> tuple[dict, dict]:
  """Loads a dataset as ``({'train'|'dev'|'test': (x float32 [N, D], y float32 [N, L])}, info)``.

  See the module docstring for the datasets, protocols, preprocessing and ``info``.  ``custom`` paths may be
  absolute or relative to ``data_dir`` (to the working directory when ``data_dir`` is empty).  Errors name
  the config field at fault (``data.name``, ``data.protocol``, ``data.data_dir``, ...).  ``source='tfds'`` reads
  the official splits from the TFDS builders prepared under ``tfds_dir`` ('' = TFDS's default) instead.
  ``dev_fold`` >= 0: dev is that fold of k-fold cross-validation on the training rows (the module docstring).
  """
  if name != 'custom' and name not in DATASETS:
    raise ValueError(f'data.name: unknown dataset {name!r}; choose one of {sorted(DATASETS) + ["custom"]}')
  if protocol not in PROTOCOLS:
    raise ValueError(f'data.protocol: unknown protocol {protocol!r}; choose one of {list(PROTOCOLS)}')
  if not 0.0 < dev_fraction < 1.0:
    raise ValueError(f'data.dev_fraction: must be in (0, 1), got {dev_fraction}')
  check_dev_fold(dev_fold, dev_fraction)
  given = [f for f, v in (('data.train_file', train_file), ('data.test_file', test_file), ('data.xml_file', xml_file))
           if v]
  if name != 'custom' and given:
    raise ValueError(f'{", ".join(given)} given with data.name={name!r}, which reads its own files: give '
                     "data.name='custom' (configs/custom.py) to train on a file of your own, or drop "
                     f'{"them" if len(given) > 1 else "it"}')
  if source not in SOURCES:
    raise ValueError(f'data.source: unknown source {source!r}; choose one of {list(SOURCES)}')
  if standardise not in STANDARDISE:
    raise ValueError(f'data.standardise: unknown setting {standardise!r}; choose one of {list(STANDARDISE)}')
  if source == 'tfds':
    parts, files, dataset = _load_tfds_parts(name, data_dir, tfds_dir)
  else:
    parts, files, dataset = _load_parts(name, data_dir, train_file, test_file, xml_file, num_labels, file_format)
  if protocol == 'official':
    rows, train_idx, note, fit_x = _official(parts, dev_fraction, split_seed, dev_fold)
  else:
    note = 'train(+valid)+test rows pooled, stratified 60/20/20 by split_seed'
    rows, train_idx, note, fit_x = _stratified(parts, split_seed, note, dev_fraction, dev_fold)
  _check_sizes(rows, parts, protocol)
  _check_labels(rows, parts)
  rows, statistics, scaling = _scale(rows, dataset, fit_x, standardise, parts)
  splits = {s: (np.asarray(x, np.float32), np.asarray(y, np.float32)) for s, (x, y) in rows.items()}
  first = parts['train']
  info = {
      'dataset': name, 'protocol': protocol, 'split_seed': int(split_seed), 'dev_fraction': float(dev_fraction),
      'sizes': {s: int(x.shape[0]) for s, (x, _) in splits.items()},
      'num_features': len(first.feature_names), 'num_labels': len(first.label_names),
      'source': source, 'files': files, 'train_sha1': _sha1(train_idx), 'split_note': note, 'preprocessing': scaling,
      'standardised': statistics is not None,
      **({'dev_fold': int(dev_fold)} if dev_fold >= 0 else {}),  # absent at -1: the info of a run as before the field
      'names': {'x': list(first.feature_names), 'y': list(first.label_names)},  # make_task moves it to Task.names
      # make_task moves it to Task.preprocess (recorded in the workdir's data.json, what predict repeats)
      'preprocess': {'nominal': dict(first.nominal or {}), 'standardisation': statistics},
  }
  return splits, info


def _check_sizes(rows: dict, parts: dict, protocol: str) -> None:
  """Every split needs a row: dev picks the best epoch and the threshold, test is scored. An empty one would
  otherwise be found after the run's files were written, as 'predict: no examples'."""
  empty = [s for s in ('train', 'dev', 'test') if len(rows[s][0]) == 0]
  if not empty:
    return
  sizes = ', '.join(f'{p.source} {p.num_examples}' for p in parts.values())
  how = ('60/20/20 split of all rows' if protocol == 'resplit' or 'test' not in parts else
         'official split with a dev_fraction hold-out of train')
  raise ValueError(f'the {" and ".join(empty)} split{"s are" if len(empty) > 1 else " is"} empty: the {how} needs '
                   f'more rows than the files hold (rows: {sizes}); each of train, dev and test needs at least one '
                   '(4 rows at least for a 60/20/20 split)')


def _check_labels(rows: dict, parts: dict) -> None:
  """Every split needs a positive label somewhere: with none (a label column read as features, the wrong label
  count, a file of all-zero labels) training learns to predict nothing, and example F1, which scores an example with
  no true and no predicted label as 1, reads 100 on dev and test."""
  empty = [s for s in ('train', 'dev', 'test') if not np.asarray(rows[s][1]).any()]
  if empty:
    files = ', '.join(p.source for p in parts.values())
    raise ValueError(f'{files}: the {" and ".join(empty)} split{"s hold" if len(empty) > 1 else " holds"} no positive '
                     f'label in any row ({len(parts["train"].label_names)} labels read): nothing to learn or score. '
                     'Check which columns are the labels (data.xml_file, data.num_labels, or "-C" in @relation)')


def _load_parts(name, data_dir, train_file, test_file, xml_file, num_labels, file_format):
  """``({'train', 'test'?, 'valid'?: MultiLabelData}, files for info, Dataset)``."""
  if name == 'bibtex' and not data_dir:
    return load_embedded_bibtex(), ['embedded'], DATASETS['bibtex']
  if name == 'custom':
    dataset = _custom(train_file, test_file, xml_file, num_labels, file_format)
    root = Path(data_dir) if data_dir else None
  else:
    dataset, root = DATASETS[name], _resolve_data_dir(name, data_dir)
  parts, files = _read_files(name, dataset, root)
  return parts, files, dataset


def _load_tfds_parts(name, data_dir, tfds_dir):
  """As ``_load_parts``, from the TFDS builders; files for ``info`` are the prepared splits."""
  if name == 'custom':
    raise ValueError("data.source: 'tfds' has builders for the known datasets only; use data.source='raw' for "
                     "data.name='custom'")
  # TFDS only when asked for: tensorflow-datasets is an extra, not a requirement
  try:
    from implicit_jax.tasks.mlc import tfds_builders  # pylint: disable=import-outside-toplevel
  except ModuleNotFoundError as e:
    if e.name != 'tensorflow_datasets':
      raise
    raise ValueError("data.source: 'tfds' needs tensorflow-datasets, which is not installed: "
                     "pip install 'implicit_jax[tfds]', or use data.source='raw'") from None
  manual_dir = data_dir or os.environ.get(DATA_DIR_ENV, '')
  parts = tfds_builders.load_tfds_parts(name, tfds_dir, manual_dir=manual_dir or None)
  return parts, [p.source for p in parts.values()], DATASETS[name]


def align_features(data: MultiLabelData, names: Sequence[str]) -> MultiLabelData:
  """``data`` with its feature columns in the order of ``names`` (the training data's). The same names in another
  order are reordered; any name missing or unknown is an error naming them."""
  names = tuple(names)
  if data.feature_names == names:
    return data
  have = set(data.feature_names)
  missing, unknown = [n for n in names if n not in have], [n for n in data.feature_names if n not in set(names)]
  if missing or unknown:
    def show(xs):
      return ', '.join(repr(x) for x in xs[:5]) + (f' (+{len(xs) - 5} more)' if len(xs) > 5 else '')
    parts = ([f'missing {len(missing)} of the training features: {show(missing)}'] if missing else []) + \
            ([f'{len(unknown)} features the model was not trained on: {show(unknown)}'] if unknown else [])
    raise ValueError(f'{data.source}: its features are not the training data\'s: {"; ".join(parts)}')
  position = {n: j for j, n in enumerate(data.feature_names)}
  order = np.array([position[n] for n in names])
  print(f'{data.source}: features reordered by name to the training data\'s order', file=sys.stderr)
  return dataclasses.replace(data, x=data.x[:, order], feature_names=names)


def read_for_prediction(path: str, file_format: str = 'mulan', *, label_names: Sequence[str],
                        feature_names: Sequence[str], nominal: dict | None = None,
                        statistics: dict | None = None) -> MultiLabelData:
  """A new file in a run's format (``file_format``), its features transformed exactly as the run's training
  features were, from what the run recorded of its training data (never the training files as they are now).

  ``label_names``: the run's labels, found in the file by name (the file may order them otherwise; one missing,
  or a Clus hierarchy with other nodes, is an error naming it). ``feature_names``: the file's features are matched
  to them by name (``align_features``). ``nominal``: the training file's codes of its nominal features, so values
  are read by value, not by their declared position. ``statistics``: the run's standardisation (``{'mean',
  'std'}``), or None when the run used the features as read.
  """
  source = Path(path)
  if not source.is_file():
    raise FileNotFoundError(f'{path}: no such file')
  if file_format == 'clus':
    data = read_clus_hmc(source)
    if set(data.label_names) != set(label_names):
      missing = [n for n in label_names if n not in set(data.label_names)]
      unknown = [n for n in data.label_names if n not in set(label_names)]
      raise ValueError(f'{path}: its class hierarchy is not the run\'s (missing {missing[:5]}, unknown '
                       f'{unknown[:5]})')
  else:
    data = read_mulan(source, label_names=list(label_names), nominal=nominal)
  if not data.num_examples:
    raise ValueError(f'{path}: no data rows after @data: nothing to predict')
  data.check_finite(allow_missing=True)
  _check_missing([data], statistics is not None)
  data = align_features(data, feature_names)
  if statistics is None:
    return data
  return dataclasses.replace(data, x=standardise_with(data.x, statistics['mean'], statistics['std'], str(path)))
