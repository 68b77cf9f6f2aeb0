"""The predict CLI: a bibtex model's predictions for a MULAN file of bibtex test rows."""

import os
import subprocess
import sys

import numpy as np
import pytest

from implicit_jax.engine import checkpoints, train
from implicit_jax.tasks.mlc.arff import read_mulan
from implicit_jax.tasks.mlc.datasets import load_embedded_bibtex
from tests.conftest import ROOT, load_config



@pytest.fixture(scope='module')
def arff(tmp_path_factory):
  """The first 6 rows of the embedded bibtex test split, written as a sparse MULAN ARFF."""
  test = load_embedded_bibtex()['test']
  names = [*test.feature_names, *test.label_names]
  rows = np.concatenate([test.x[:6], test.y[:6]], axis=1)
  body = ['{' + ','.join(f'{j} 1' for j in np.flatnonzero(r)) + '}' for r in rows]
  path = tmp_path_factory.mktemp('input') / 'bibtex_rows.arff'
  path.write_text('@relation bibtex_rows\n' + ''.join(f"@attribute '{n}' {{0,1}}\n" for n in names) +
                  '@data\n' + '\n'.join(body) + '\n')
  return path


@pytest.fixture(scope='module')
def workdir(tmp_path_factory):
  config = load_config('bibtex')  # the embedded bibtex; the MBCE baseline for one epoch keeps this test short
  config.method, config.num_epochs = 'feedforward', 1
  path = tmp_path_factory.mktemp('bibtex')
  train.train_and_evaluate(config, str(path))
  return path


def _predict(*args):
  return subprocess.run([sys.executable, '-m', 'implicit_jax.predict', *args], cwd=ROOT, capture_output=True,
                        text=True, timeout=300, env=dict(os.environ, JAX_PLATFORMS='cpu'))


def test_predict_writes_label_names_of_the_saved_model(workdir, arff, tmp_path):
  out = tmp_path / 'pred.txt'
  proc = _predict(f'--workdir={workdir}', f'--input={arff}', f'--output={out}', '--threshold=0.2')
  assert proc.returncode == 0, proc.stderr[-2000:]
  data = read_mulan(arff, num_labels=159)
  assert data.x.shape == (6, 1836)
  expected = checkpoints.load_trained(str(workdir)).predict(data.x.astype(np.float32)) >= 0.2
  lines = out.read_text().split('\n')[:-1]
  assert len(lines) == data.num_examples
  for line, row in zip(lines, expected):
    assert (line.split(',') if line else []) == [data.label_names[j] for j in np.flatnonzero(row)]
  assert expected.any()  # the check above compared some names, not only empty lines


def test_predict_errors_name_the_input(workdir, arff, tmp_path):
  bad = tmp_path / 'bad.npy'
  np.save(bad, np.zeros((2, 7), np.float32))
  proc = _predict(f'--workdir={workdir}', f'--input={bad}')
  assert proc.returncode == 1
  assert f'error: {bad}: predict: x has shape (2, 7), the model expects [N, 1836]' in proc.stderr
  proc = _predict(f'--workdir={workdir}', f'--input={tmp_path / "missing.arff"}')
  assert proc.returncode == 1 and 'missing.arff: no such file' in proc.stderr
  proc = _predict(f'--workdir={workdir}', f'--input={arff}', '--threshold=high')
  assert proc.returncode == 1 and '--threshold: expected "tuned" or a number' in proc.stderr
  assert 'Traceback' not in proc.stderr


def _permuted_arff(source, path, rename=None):
  """``source`` with its feature attributes in reverse order (labels last, as before), data rows to match;
  ``rename``: (old, new) renames one feature."""
  data = read_mulan(source, num_labels=159)
  order = np.arange(data.x.shape[1])[::-1]
  names = [data.feature_names[j] for j in order] + list(data.label_names)
  if rename:
    names = [rename[1] if n == rename[0] else n for n in names]
  rows = np.concatenate([data.x[:, order], data.y], axis=1)
  body = ['{' + ','.join(f'{j} 1' for j in np.flatnonzero(r)) + '}' for r in rows]
  path.write_text('@relation permuted\n' + ''.join(f"@attribute '{n}' {{0,1}}\n" for n in names) + '@data\n' +
                  '\n'.join(body) + '\n')
  return path


def test_predict_matches_features_by_name(workdir, arff, tmp_path):
  """Columns in another order give the same labels as the original file; a renamed feature is one error line."""
  original = _predict(f'--workdir={workdir}', f'--input={arff}', '--threshold=0.2')
  permuted = _predict(f'--workdir={workdir}', f'--input={_permuted_arff(arff, tmp_path / "perm.arff")}',
                      '--threshold=0.2')
  assert original.returncode == permuted.returncode == 0, permuted.stderr[-2000:]
  assert permuted.stdout == original.stdout and original.stdout.strip()
  assert 'features reordered by name' in permuted.stderr
  renamed = _permuted_arff(arff, tmp_path / 'renamed.arff', rename=('abstract', 'abstrakt'))
  proc = _predict(f'--workdir={workdir}', f'--input={renamed}')
  assert proc.returncode == 1 and 'Traceback' not in proc.stderr
  assert (f"error: {renamed}: its features are not the training data's: missing 1 of the training features: "
          "'abstract'; 1 features the model was not trained on: 'abstrakt'") in proc.stderr


def test_predict_names_a_non_finite_input(workdir, tmp_path):
  bad = tmp_path / 'nan.npy'
  x = np.zeros((3, 1836), np.float32)
  x[2, 5] = np.nan
  np.save(bad, x)
  proc = _predict(f'--workdir={workdir}', f'--input={bad}')
  assert proc.returncode == 1
  assert f'error: {bad}: predict: x holds NaN or Inf (first at index (2, 5): example 2)' in proc.stderr
