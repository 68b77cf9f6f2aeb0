"""The predict CLI: a bibtex model's predictions for a MULAN file of bibtex test rows."""

import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from implicit_jax.engine import checkpoints, train
from implicit_jax.tasks.mlc.arff import read_mulan
from implicit_jax.tasks.mlc.datasets import load_embedded_bibtex
from implicit_jax.testing import rewrite_arff
from tests.conftest import ROOT, load_config

FIXTURES = ROOT / 'tests' / 'fixtures' / 'mlc'

# Every test here runs the predict or evaluate command line on a trained run: the e2e suite (setup.cfg), after the
# fast one.
pytestmark = pytest.mark.e2e



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
  # a flag's value is the flag parser's to refuse, before any work (exit 2, as every command's flags)
  assert proc.returncode == 2 and '--threshold: "tuned" or a number in (0, 1)' in proc.stderr, proc.stderr
  assert 'Traceback' not in proc.stderr
  # --format takes the formats the task names (its FORMATS), and the multi-label task names none.
  proc = _predict(f'--workdir={workdir}', f'--input={arff}', '--format=conll')
  assert proc.returncode == 1 and proc.stderr.strip() == (
      "error: --format=conll: task 'mlc' names no file formats (its module defines no FORMATS; see "
      'implicit_jax/plugins.py): leave --format out'), proc.stderr


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


def test_predict_matches_labels_by_name(workdir, arff, tmp_path):
  """Label columns in another order give the same label names as the original file (the run's labels, not the
  file's order); a renamed label is one error line naming the file and the label."""
  original = _predict(f'--workdir={workdir}', f'--input={arff}', '--threshold=0.2').stdout
  reversed_labels = rewrite_arff(arff, tmp_path / 'labels_reversed.arff', label_order=np.arange(159)[::-1])
  proc = _predict(f'--workdir={workdir}', f'--input={reversed_labels}', '--threshold=0.2')
  assert proc.returncode == 0, proc.stderr[-2000:]
  assert proc.stdout == original and original.strip()
  renamed = rewrite_arff(arff, tmp_path / 'label_renamed.arff', rename_label=('TAG_apob', 'TAG_apoB'))
  proc = _predict(f'--workdir={workdir}', f'--input={renamed}')
  assert proc.returncode == 1 and 'Traceback' not in proc.stderr
  assert (f"error: {renamed}: no attribute for 1 of the run's labels: 'TAG_apob' (labels are matched by name)"
          in proc.stderr)


def test_predict_reads_nominal_values_by_value(workdir, arff, tmp_path):
  """Every attribute declared {1,0} instead of the training file's {0,1}: the same predictions; a value the
  training file never declared is one error line naming the file, line, feature and value."""
  original = _predict(f'--workdir={workdir}', f'--input={arff}', '--threshold=0.2').stdout
  swapped = rewrite_arff(arff, tmp_path / 'swapped.arff', nominal='{1,0}')
  proc = _predict(f'--workdir={workdir}', f'--input={swapped}', '--threshold=0.2')
  assert proc.returncode == 0, proc.stderr[-2000:]
  assert proc.stdout == original and original.strip()
  text = rewrite_arff(arff, tmp_path / 'unknown.arff', nominal='{0,1,2}').read_text().split('\n')
  header = text.index('@data')
  first = text[header + 1].split(',')
  first[0] = '2'  # the first feature, '0', takes a value the model never saw
  text[header + 1] = ','.join(first)
  unknown = tmp_path / 'unknown.arff'
  unknown.write_text('\n'.join(text))
  proc = _predict(f'--workdir={workdir}', f'--input={unknown}')
  assert proc.returncode == 1 and 'Traceback' not in proc.stderr
  assert (f"error: {unknown}:{header + 2}: feature '0': value '2' is not one the model was trained on {{0,1}}"
          in proc.stderr)


def _evaluate(*args):
  return subprocess.run([sys.executable, '-m', 'implicit_jax.evaluate', *args], cwd=ROOT, capture_output=True,
                        text=True, timeout=300, env=dict(os.environ, JAX_PLATFORMS='cpu'))


@pytest.fixture(scope='module')
def dense_run(tmp_path_factory):
  """A one-epoch MBCE run on a copy of the dense, standardised fixture ``scaled.arff`` (``data_dir``/train.arff,
  split 60/20/20), and ``(workdir, data_dir, the file's lines)``."""
  data_dir = tmp_path_factory.mktemp('dense_data')
  shutil.copy(FIXTURES / 'scaled.arff', data_dir / 'train.arff')
  config = load_config('custom')
  config.method, config.num_epochs, config.batch_size, config.eval_batch_size = 'feedforward', 1, 10, 10
  config.data.data_dir, config.data.train_file = str(data_dir), 'train.arff'
  workdir = tmp_path_factory.mktemp('dense_run')
  train.train_and_evaluate(config, str(workdir))
  assert json.loads((workdir / 'metrics.json').read_text())['task_info']['standardised']
  return workdir, data_dir, (data_dir / 'train.arff').read_text().split('\n')


def _changed_copy(lines, folder, change):
  """The training file with ``change(data rows) -> rows`` applied, as ``folder``/train.arff."""
  start = lines.index('@data') + 1
  rows = [line for line in lines[start:] if line.strip()]
  folder.mkdir()
  (folder / 'train.arff').write_text('\n'.join(lines[:start] + change(rows)) + '\n')
  return folder


def test_predict_applies_the_runs_own_standardisation_after_the_training_file_changed(dense_run, tmp_path):
  """The training file's last feature scaled by 3 after training: predictions (scores) are those made with the
  run's own statistics, recorded at its start, not refitted on today's file. A run older than that record, with
  its data changed, is refused in one line; with its data unchanged it predicts as before."""
  workdir, data_dir, lines = dense_run
  new = tmp_path / 'new.arff'
  new.write_text('\n'.join(lines[:lines.index('@data') + 11]) + '\n')  # 10 rows to predict
  before = _predict(f'--workdir={workdir}', f'--input={new}', '--scores', f'--data_dir={data_dir}')
  assert before.returncode == 0, before.stderr[-2000:]

  def scale_last_feature(rows):
    return [','.join(v if j != 4 else f'{float(v) * 3:g}' for j, v in enumerate(r.split(','))) for r in rows]

  changed = _changed_copy(lines, tmp_path / 'changed', scale_last_feature)
  after = _predict(f'--workdir={workdir}', f'--input={new}', '--scores', f'--data_dir={changed}')
  assert after.returncode == 0, after.stderr[-2000:]
  assert after.stdout == before.stdout and len(before.stdout.split('\n')) == 11

  old = tmp_path / 'old_run'
  shutil.copytree(workdir, old)
  record = json.loads((old / 'data.json').read_text())
  (old / 'data.json').write_text(json.dumps({k: record[k] for k in ('fingerprint', 'files')}))
  proc = _predict(f'--workdir={old}', f'--input={new}', '--scores', f'--data_dir={changed}')
  assert proc.returncode == 1 and 'Traceback' not in proc.stderr
  assert (f'error: workdir {old}: the training data changed since the run (train.x, dev.x, test.x differ from '
          f'{old / "data.json"})') in proc.stderr
  proc = _predict(f'--workdir={old}', f'--input={new}', '--scores', f'--data_dir={data_dir}')
  assert proc.returncode == 0 and proc.stdout == before.stdout, proc.stderr[-2000:]


def test_evaluate_refuses_data_that_differs_from_the_runs(dense_run, tmp_path):
  """The rows of the training file shuffled after training: the 60/20/20 split now puts training rows into the
  test split, so ``evaluate`` refuses in one line naming the splits that differ; the run's data still evaluates."""
  workdir, data_dir, lines = dense_run
  shuffled = _changed_copy(lines, tmp_path / 'shuffled',
                           lambda rows: [rows[i] for i in np.random.default_rng(0).permutation(len(rows))])
  proc = _evaluate(f'--workdir={workdir}', f'--data_dir={shuffled}', '--split=all')
  assert proc.returncode == 1 and 'Traceback' not in proc.stderr, proc.stderr[-2000:]
  error = [line for line in proc.stderr.splitlines() if line.strip()]
  assert len(error) == 1 and error[0].startswith(f'error: workdir {workdir} was trained on other data: the train, '
                                                 f'dev, test splits read now from {shuffled / "train.arff"} differ')
  proc = _evaluate(f'--workdir={workdir}', f'--data_dir={data_dir}')
  assert proc.returncode == 0, proc.stderr[-2000:]


def test_predict_ignores_what_the_label_columns_hold(workdir, arff, tmp_path):
  """The label columns of a file to predict hold '?' (unknown: what predict is for), or are left out: the same
  predictions as the file with its gold labels. It was an error naming the '?' as a label that must be 0 or 1."""
  original = _predict(f'--workdir={workdir}', f'--input={arff}', '--threshold=0.2').stdout
  lines = arff.read_text().split('\n')
  start = lines.index('@data') + 1
  data = read_mulan(arff, num_labels=159)
  unknown = tmp_path / 'unknown_labels.arff'
  unknown.write_text('\n'.join(lines[:start] + [','.join([*map(str, row.astype(int)), *['?'] * 159])
                                                for row in data.x]) + '\n')
  proc = _predict(f'--workdir={workdir}', f'--input={unknown}', '--threshold=0.2')
  assert proc.returncode == 0, proc.stderr[-2000:]
  assert proc.stdout == original and original.strip()
  features_only = tmp_path / 'features_only.arff'
  features_only.write_text('\n'.join([lines[0], *lines[1:1 + 1836], '@data'] +
                                     [','.join(map(str, row.astype(int))) for row in data.x]) + '\n')
  proc = _predict(f'--workdir={workdir}', f'--input={features_only}', '--threshold=0.2')
  assert proc.returncode == 0, proc.stderr[-2000:]
  assert proc.stdout == original


def test_predict_names_what_a_npy_or_an_empty_file_holds(workdir, arff, tmp_path):
  """An object or text .npy, a text file named .npy and an ARFF without rows: one line each, saying what the file
  holds and what predict reads (before: numpy's 'Object arrays cannot be loaded...', a shape error for text, and
  'predict: no examples')."""
  objects, text, fake = tmp_path / 'objects.npy', tmp_path / 'text.npy', tmp_path / 'fake.npy'
  np.save(objects, np.array([{'a': 1}, None], dtype=object), allow_pickle=True)
  np.save(text, np.array([['0', '1'], ['1', '0']]))
  fake.write_text('0,1,0\n1,0,1\n')
  empty = tmp_path / 'empty.arff'
  empty.write_text(arff.read_text().split('@data')[0] + '@data\n')
  expected = {
      objects: f'error: {objects}: an array of Python objects, which predict does not load',
      text: f'error: {text}: holds text (dtype <U1), not numbers: predict reads the model\'s numeric inputs',
      fake: f'error: {fake}: not a .npy file (no NumPy header; a text file?)',
      empty: f'error: {empty}: no data rows after @data: nothing to predict',
  }
  for path, message in expected.items():
    proc = _predict(f'--workdir={workdir}', f'--input={path}')
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 1 and len(lines) == 1 and lines[0].startswith(message), proc.stderr[-2000:]


def test_a_finished_run_whose_best_folder_was_deleted_says_so(tiny_run, tmp_path):
  """evaluate and predict read best/; deleted from a finished run, the message said 'the run has not finished its
  first epoch', which sent the user the wrong way. Now it says the run finished and best/ went since; a workdir that
  never finished an epoch keeps the first message."""
  from implicit_jax import evaluate  # pylint: disable=import-outside-toplevel
  finished = tmp_path / 'finished'
  shutil.copytree(tiny_run[0], finished)
  shutil.rmtree(finished / 'best')
  with pytest.raises(FileNotFoundError, match=r'best \(the run has finished, so best/ was emptied or deleted since'):
    evaluate.evaluate_run(str(finished))
  started = tmp_path / 'started'
  shutil.copytree(tiny_run[0], started)
  shutil.rmtree(started / 'best')
  shutil.rmtree(started / 'checkpoints')
  os.remove(started / 'metrics.json')
  with pytest.raises(FileNotFoundError, match=r'the run has not finished its first epoch'):
    evaluate.evaluate_run(str(started))
