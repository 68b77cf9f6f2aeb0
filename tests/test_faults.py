"""Bad input and faults, as a user meets them: nothing lost, nothing silently wrong, one line where one will do.

Each fault case of ``docs/faults.md`` is a test here (marker e2e): it is run as a user runs it, the command lines
(``python -m implicit_jax.main|evaluate|predict``) in a subprocess from the repository root, on the tiny config or
a one-epoch MBCE model of the embedded bibtex (made once per module), or the reader that ``main`` uses where the
fault is in a file; the test asserts its exit status and message, and records what it showed through the ``fault``
fixture. ``tests/fault_cases.py`` lists the cases in the page's order and names the test of each, and

  python -m pytest -m e2e tests/test_faults.py -n 2 --faults-page=docs/faults.md

writes the page from what they recorded. The tests without the marker check the engine's parts in-process.
"""

import contextlib
import errno
import inspect
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
import time
import types
import warnings

import jax
import numpy as np
import pytest
from PIL import Image

from implicit_jax import evaluate
from implicit_jax.engine import checkpoints, multihost, train, workdir as workdir_lib, writers
from implicit_jax.tasks.mlc.arff import read_mulan
from implicit_jax.tasks.mlc.datasets import load_embedded_bibtex
from implicit_jax.tasks.segmentation import horses
from implicit_jax.testing import MAIN_WITH_SIGINT, rewrite_arff
from tests import fault_cases
from tests import test_plugins as plugin_fixtures  # its FILES: the plug-ins the fault cases reuse
from tests.conftest import ROOT, full_opt_env, load_config
from tests.fault_cases import shown

TINY = ['--config=configs/tiny.py']
FIXTURES = ROOT / 'tests' / 'fixtures'


def _tiny(**fields):
  config = load_config('tiny')
  for key, value in fields.items():
    config.update_from_flattened_dict({key.replace('__', '.'): value})
  return config


def _comparable(metrics):
  """metrics.json but for the seconds and the config's provenance (config_file: the --config that made the run,
  which a run started in Python does not have)."""
  out = {k: v for k, v in metrics.items() if k != 'train_seconds'}
  out['config'] = {k: v for k, v in out.get('config', {}).items() if k not in ('config_file', 'overrides')}
  return out


def _metrics(workdir):
  return _comparable(json.loads((workdir / 'metrics.json').read_text()))


def _cli(module, *args, code=None, env=None):
  """A command line started in the background: ``python -m implicit_jax.<module>`` (a dotted ``module`` as it is),
  or ``python -c code``."""
  module = module if module is None or '.' in module else f'implicit_jax.{module}'
  cmd = [sys.executable, *(['-c', code] if code else ['-m', module]), *map(str, args)]
  return subprocess.Popen(cmd, cwd=ROOT, env=env or dict(os.environ, JAX_PLATFORMS='cpu'), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True)


def _finish(proc, timeout=600):
  out, err = proc.communicate(timeout=timeout)
  return proc.returncode, out, err


def _run(module, *args, code=None, env=None):
  """``(exit status, stdout, stderr)`` of a command line (``_cli``) run to its end."""
  return _finish(_cli(module, *args, code=code, env=env))


def _one_error(code, err, want_code=1) -> str:
  """The one line a command that refused its input printed, after asserting that it did so with ``want_code``."""
  lines = shown(err)
  assert code == want_code, (code, err[-2000:])
  assert len(lines) == 1 and lines[0].startswith('error: '), err[-2000:]
  return lines[0]


def _wait_for(proc, ready, timeout=300) -> bool:
  """Waits until ``ready()`` while ``proc`` runs; whether it still runs."""
  deadline = time.time() + timeout
  while proc.poll() is None and time.time() < deadline and not ready():
    time.sleep(0.05)
  return proc.poll() is None


def _steps(folder) -> list[int]:
  return sorted(int(d.name) for d in folder.iterdir() if d.name.isdigit()) if folder.is_dir() else []


def _arff(names, rows, relation='rows') -> str:
  """A dense ARFF of {0,1} attributes."""
  return (f'@relation {relation}\n' + ''.join(f'@attribute {n} {{0,1}}\n' for n in names) + '@data\n' +
          '\n'.join(','.join(map(str, r)) for r in rows) + '\n')


def _sparse_arff(names, rows) -> str:
  body = ['{' + ','.join(f'{j} 1' for j in np.flatnonzero(r)) + '}' for r in rows]
  return ('@relation rows\n' + ''.join(f"@attribute '{n}' {{0,1}}\n" for n in names) + '@data\n' + '\n'.join(body) +
          '\n')


def _copy(run, to):
  shutil.copytree(run, to)
  return to


@pytest.fixture(scope='module')
def reference(tmp_path_factory):
  """Uninterrupted tiny runs of 2 and 3 epochs (a checkpoint every 4 steps, 8 steps an epoch)."""
  out = {}
  for epochs in (2, 3):
    path = tmp_path_factory.mktemp(f'reference{epochs}')
    train.train_and_evaluate(_tiny(num_epochs=epochs, checkpoint_every=4), str(path))
    out[epochs] = path
  return out


def test_every_fault_case_names_tests_that_exist():
  """The case list names, for each case, a test of this module (the one that records it) and tests elsewhere; each
  test here that records cases is named by one."""
  for case in fault_cases.CASES:
    assert callable(globals().get(case.test)), f'{case.key}: no test {case.test} in tests/test_faults.py'
    for other in case.also:
      path, name = other.split('::')
      assert f'def {name}(' in (ROOT / path).read_text(), f'{case.key}: no test {other}'
  recording = {name for name, f in globals().items() if name.startswith('test_') and 'fault' in
               inspect.signature(f).parameters}
  assert recording == {case.test for case in fault_cases.CASES}


# ------------------------------------------------------------------------------------------ the workdir


@pytest.mark.e2e
def test_second_trainer_is_refused_and_readers_do_not_disturb_the_first(tmp_path, fault):
  """A trainer runs in a subprocess. Meanwhile a second trainer on its workdir is refused, naming the holder's
  process id, and ``evaluate`` reads the workdir again and again. The first run then ends exactly as the same run
  undisturbed: its metrics, history and metrics.jsonl."""
  busy, clean = tmp_path / 'busy', tmp_path / 'clean'
  epochs = 30
  first = _cli('main', *TINY, f'--workdir={busy}', f'--config.num_epochs={epochs}')
  # the first best-on-dev parameters are committed: readers have something to read
  assert _wait_for(first, lambda: bool(_steps(busy / 'best'))), 'the first run ended before the second started'
  code, _, err = _run('main', *TINY, f'--workdir={busy}', f'--config.num_epochs={epochs}')
  with fault('second_trainer', code, err):
    assert re.fullmatch(rf'error: {re.escape(str(busy))} is in use by another training run \(process {first.pid}'
                        r'( on [^)]+)?\); wait for it to end, or give another --workdir', _one_error(code, err))
  reads = 0
  while first.poll() is None:
    scores = evaluate.evaluate_run(str(busy), ('dev',))
    assert 0 <= scores['dev']['at_0.5']['example_f1'] <= 1
    reads += 1
  code, _, err = _finish(first)
  train.train_and_evaluate(_tiny(num_epochs=epochs), str(clean))
  with fault('readers_beside_a_trainer', code, err, reads=reads):
    assert code == 0, err[-2000:]
    assert reads >= 2, reads  # the reader ran beside the trainer more than once
    assert _metrics(busy) == _metrics(clean)
    assert (busy / 'metrics.jsonl').read_text() == (clean / 'metrics.jsonl').read_text()


@pytest.mark.e2e
def test_deleting_the_lock_file_does_not_admit_a_second_trainer(tmp_path, fault):
  """``workdir/lock`` looks stale in a finished workdir and may be deleted while a run trains: the lock is held on
  the folder, so a second trainer is still refused in one line naming the workdir and the holder (the kernel's
  table of locks names it); once the holder is gone, the next trainer gets the lock."""
  busy = tmp_path / 'lock_deleted'
  first = _cli('main', *TINY, f'--workdir={busy}', '--config.num_epochs=300')
  assert _wait_for(first, lambda: bool(_steps(busy / 'best'))), 'the first run ended before the second started'
  assert (busy / 'lock').read_text().startswith(f'{first.pid} on ')
  (busy / 'lock').unlink()
  code, _, err = _run('main', *TINY, f'--workdir={busy}', '--config.num_epochs=300')
  running = first.poll() is None
  first.kill()  # started here; its checkpoints are not needed
  first.communicate()
  with fault('lock_deleted', code, err):
    holder = str(first.pid) if os.path.exists('/proc/locks') else 'unknown'
    assert running and _one_error(code, err) == (f'error: {busy} is in use by another training run (process '
                                                 f'{holder}); wait for it to end, or give another --workdir')
  assert not (busy / 'lock').exists()  # the refused trainer wrote no record of its own
  with workdir_lib.Lock(str(busy)):  # released with its holder: the next trainer gets it
    pass


@pytest.mark.parametrize('race', [FileNotFoundError, NotADirectoryError])
def test_a_reader_lists_again_when_a_step_folder_vanishes_under_it(race):
  """Orbax lists a step folder that the trainer deletes meanwhile: FileNotFoundError, or NotADirectoryError when
  the folder goes between its exists() and is_dir() (seen in CI). The reader lists again; other errors pass."""
  calls = []

  def listing():
    calls.append(1)
    if len(calls) < 3:
      raise race(errno.ENOENT, 'vanished', 'best/8')
    return 'manager'

  assert checkpoints._beside_a_writer(listing) == 'manager'  # pylint: disable=protected-access
  assert len(calls) == 3
  with pytest.raises(PermissionError):
    checkpoints._beside_a_writer(lambda: (_ for _ in ()).throw(PermissionError('no')))  # pylint: disable=protected-access


@pytest.mark.e2e
def test_a_read_only_workdir_is_named_or_written_by_root(tmp_path, fault):
  """A workdir without write permission: one line naming it; root may write there, and trains."""
  workdir = tmp_path / 'ro'
  workdir.mkdir()
  workdir.chmod(0o500)
  try:
    code, _, err = _run('main', *TINY, f'--workdir={workdir}')
  finally:
    workdir.chmod(0o700)
  as_root = os.geteuid() == 0
  with fault('read_only_workdir', code, err, as_root=' (run as root: the folder is writable to it)' if as_root else ''):
    if as_root:
      assert code == 0 and (workdir / 'metrics.json').is_file(), err[-2000:]
    else:
      assert _one_error(code, err) == f"error: [Errno {errno.EACCES}] the workdir is not writable: '{workdir}'"


@pytest.mark.e2e
def test_a_failed_start_writes_nothing_and_leaves_no_record_in_the_way(tmp_path, fault):
  """A start refused by its checks (5 devices asked, 1 here) writes nothing. A config record left by a start that
  failed later (no checkpoint saved) does not block the corrected command: it is replaced with a notice."""
  workdir = tmp_path / 'failed'
  code, _, err = _run('main', *TINY, f'--workdir={workdir}', '--config.num_devices=5')
  untouched = not workdir.exists()  # validated before the workdir was touched
  workdir.mkdir()
  (workdir / 'config.json').write_text(json.dumps({**json.loads(json.dumps(_tiny().to_dict())), 'seed': 7}))
  code2, out2, err2 = _run('main', *TINY, f'--workdir={workdir}')
  with fault('failed_start', code, err):
    assert _one_error(code, err).startswith('error: config.num_devices=5: 1 devices available')
    assert untouched and code2 == 0, err2[-2000:]
  notice = [line for line in out2.splitlines() if 'replacing' in line]
  with fault('stale_record', code2, lines=notice + shown(err2)):
    assert code2 == 0, err2[-2000:]
    assert notice == [f'{workdir / "config.json"}: replacing the record of a run that saved no checkpoint']
    assert json.loads((workdir / 'config.json').read_text())['seed'] == 0
    assert json.loads((workdir / 'metrics.json').read_text())['steps'] == 16


@pytest.mark.e2e
def test_resuming_with_another_config_is_refused_naming_the_field(reference, tmp_path, fault):
  workdir = _copy(reference[2], tmp_path / 'other')
  code, _, err = _run('main', *TINY, f'--workdir={workdir}', '--config.seed=3')
  with fault('resume_other_config', code, err):
    assert _one_error(code, err) == (f'error: workdir {workdir} holds a run with a different config: seed (stored 0, '
                                     'now 3); resume with the same config or use a new workdir')


@pytest.mark.e2e
def test_a_shorter_resume_is_refused_and_keeps_the_record(reference, tmp_path, fault):
  workdir = _copy(reference[2], tmp_path / 'shorter')
  before = (workdir / 'metrics.json').read_text()
  code, _, err = _run('main', *TINY, f'--workdir={workdir}', '--config.num_epochs=1', '--config.checkpoint_every=4')
  with fault('resume_fewer_epochs', code, err):
    assert _one_error(code, err) == (
        f'error: workdir {workdir} holds a run trained to step 16 (epoch 2); config.num_epochs=1 ends at step 8. Give '
        'num_epochs >= 2 to continue it, or read it with implicit_jax.evaluate')
    assert (workdir / 'metrics.json').read_text() == before
    assert json.loads((workdir / 'config.json').read_text())['num_epochs'] == 2


# ------------------------------------------------------------------------------------------ data under a run


def _custom_data(path, x, y):
  """A custom multi-label file: 8 features, then 3 labels (MEKA's -C -3)."""
  path.write_text(_arff([f'f{j}' for j in range(8)] + [f'l{j}' for j in range(3)], np.concatenate([x, y], axis=1),
                        relation='r -C -3'))
  return path


@pytest.mark.e2e
def test_resuming_on_changed_data_is_refused_naming_the_files(tmp_path, fault):
  """A custom dataset whose file changes at the same path between two runs of one workdir."""
  rng = np.random.default_rng(0)
  x, y = rng.integers(0, 2, (60, 8)), rng.integers(0, 2, (60, 3))
  data, run = tmp_path / 'custom.arff', tmp_path / 'custom_run'
  custom = ['--config=configs/custom.py', f'--config.data.train_file={data}', '--config.data.protocol=resplit',
            '--config.batch_size=12', '--config.eval_batch_size=12', f'--workdir={run}']
  _custom_data(data, x, y)
  code, _, err = _run('main', *custom, '--config.num_epochs=1')
  assert code == 0, err[-2000:]
  x[5, 2] = 1 - x[5, 2]
  _custom_data(data, x, y)
  code, _, err = _run('main', *custom, '--config.num_epochs=2')
  with fault('data_changed', code, err):
    assert _one_error(code, err) == (f"error: workdir {run} was trained on other data: train.x differ from the run's "
                                     f'record ({run}/data.json); the data read now comes from {data}. Restore that '
                                     'data or start a new workdir')


@pytest.mark.e2e
def test_a_training_file_changed_after_the_run(tmp_path, fault):
  """A one-epoch MBCE run on a copy of the dense fixture scaled.arff, standardised and split 60/20/20. Its file then
  changes: one feature scaled by 3, and ``predict`` still scores with the run's recorded statistics (not refitted
  on today's file); its rows shuffled, and ``evaluate`` refuses in one line naming the splits that differ (the
  60/20/20 split now puts training rows into the test split), while the run's own data still evaluates."""
  data_dir, run = tmp_path / 'dense_data', tmp_path / 'dense_run'
  data_dir.mkdir()
  shutil.copy(FIXTURES / 'mlc' / 'scaled.arff', data_dir / 'train.arff')
  config = load_config('custom')
  config.method, config.num_epochs, config.batch_size, config.eval_batch_size = 'feedforward', 1, 10, 10
  config.data.data_dir, config.data.train_file = str(data_dir), 'train.arff'
  train.train_and_evaluate(config, str(run))
  assert json.loads((run / 'metrics.json').read_text())['task_info']['standardised']
  lines = (data_dir / 'train.arff').read_text().split('\n')
  start = lines.index('@data') + 1
  rows = [line for line in lines[start:] if line.strip()]

  def changed(name, new_rows):
    (tmp_path / name).mkdir()
    (tmp_path / name / 'train.arff').write_text('\n'.join(lines[:start] + new_rows) + '\n')
    return tmp_path / name

  new = tmp_path / 'dense_new.arff'
  new.write_text('\n'.join(lines[:start + 10]) + '\n')  # 10 rows to predict
  scaled = changed('dense_scaled', [','.join(v if j != 4 else f'{float(v) * 3:g}' for j, v in enumerate(r.split(',')))
                                    for r in rows])
  code, before, err = _run('predict', f'--workdir={run}', f'--input={new}', '--scores', f'--data_dir={data_dir}')
  assert code == 0, err[-2000:]
  code, after, err = _run('predict', f'--workdir={run}', f'--input={new}', '--scores', f'--data_dir={scaled}')
  with fault('predict_after_file_changed', code, err):
    assert code == 0, err[-2000:]
    assert after == before and len(before.split('\n')) == 11

  shuffled = changed('dense_shuffled', [rows[i] for i in np.random.default_rng(0).permutation(len(rows))])
  code, _, err = _run('evaluate', f'--workdir={run}', f'--data_dir={shuffled}', '--split=all')
  code2, _, err2 = _run('evaluate', f'--workdir={run}', f'--data_dir={data_dir}')
  with fault('evaluate_after_rows_shuffled', code, err):
    assert _one_error(code, err) == (
        f'error: workdir {run} was trained on other data: the train, dev, test splits read now from '
        f"{shuffled / 'train.arff'} differ from the run's record ({run}/data.json: train.x, train.y, dev.x, dev.y, "
        "test.x, test.y). Restore the run's data to evaluate it")
    assert code2 == 0, err2[-2000:]


@pytest.mark.e2e
def test_evaluate_warns_of_labels_never_positive_in_a_split(tmp_path, fault):
  """A custom dataset whose label 'l2' is 0 in every row: F1 cannot tell whether the model can predict it, so
  ``evaluate`` names it in a warning for each split it scores."""
  rng = np.random.default_rng(0)
  x, y = rng.integers(0, 2, (60, 8)), rng.integers(0, 2, (60, 3))
  y[:, 2] = 0
  config = load_config('custom')
  config.data.update(name='custom', train_file=str(_custom_data(tmp_path / 'data.arff', x, y)), protocol='resplit')
  config.update(method='feedforward', num_epochs=1, batch_size=12, eval_batch_size=12)
  train.train_and_evaluate(config, str(tmp_path / 'run'))
  code, _, err = _run('evaluate', f'--workdir={tmp_path / "run"}', '--split=all')
  with fault('label_never_positive', code, err):
    assert code == 0, err[-2000:]
    assert shown(err) == [f"warning: the {split} split has no positive example of 1 of 3 labels: 'l2'; its scores say "
                          'nothing about them' for split in ('train', 'dev', 'test')]


# ------------------------------------------------------------------------------------------ files a new user trains on

CUSTOM = ['--config=configs/custom.py', '--config.num_epochs=1', '--config.batch_size=8', '--config.eval_batch_size=8']
TAGGING = ['--config=configs/tiny_tagging.py', '--config.data.name=twitter_pos', '--config.method=feedforward',
           '--config.num_epochs=1', '--config.batch_size=2', '--config.eval_batch_size=4']


def _tagging_data(folder, dev_text=None):
  """A Twitter POS data folder of the fixture's 5 tweets as every split (``dev_text``: the dev file instead)."""
  tweets = (FIXTURES / 'tagging' / 'twitter_pos_oct27_train_cut.conll').read_text()
  (folder / 'twitter_pos').mkdir(parents=True)
  for name in ('oct27.traindev', 'oct27.test', 'daily547.conll'):
    (folder / 'twitter_pos' / name).write_text(dev_text if dev_text is not None and name == 'oct27.test' else tweets)
  return folder


@pytest.mark.e2e
def test_mulan_medical_layout_trains_on_the_xmls_labels(tmp_path, fault):
  """MULAN's medical files: '-C 45' in @relation (MEKA: the first 45 attributes) while the XML names the last 45.
  MULAN follows the XML; so does ``main``, warning of the disagreement."""
  rng = np.random.default_rng(1)
  words, labels = [f'w{j}' for j in range(20)], ['Class-0-593_70', 'Class-1-079_99', 'Class-2-786_09']
  arff, xml, run = tmp_path / 'medical-train.arff', tmp_path / 'medical.xml', tmp_path / 'medical_run'
  arff.write_text(_arff(words + labels, np.concatenate([rng.integers(0, 2, (40, 20)), rng.integers(0, 2, (40, 3))], 1),
                        relation="'MEDC: -C 3-weka.filters.unsupervised.instance.RemovePercentage-P70.0-V'"))
  xml.write_text('<labels xmlns="http://mulan.sourceforge.net/labels">' +
                 ''.join(f'<label name="{n}"/>' for n in labels) + '</labels>')
  code, _, err = _run('main', *CUSTOM, f'--config.data.train_file={arff}', f'--config.data.xml_file={xml}',
                      f'--workdir={run}')
  with fault('mulan_medical', code, err):
    assert code == 0, err[-2000:]
    assert shown(err) == [f"warning: {arff}: its @relation option -C 3 names the first 3 attributes ('w0', 'w1', ...) "
                          f"as labels, but {xml} names 3 ('Class-0-593_70', 'Class-1-079_99', ...); following the "
                          'XML, as MULAN does']
    assert json.loads((run / 'metrics.json').read_text())['task_info']['num_labels'] == 3


def _features_only(tmp_path):
  path = tmp_path / 'features.arff'
  path.write_text(_arff('abc', [[0, 1, 1], [1, 0, 0]] * 10, relation='r'))
  return [f'--config.data.train_file={path}'], (
      f'error: {path}: no label columns were found: its @relation has no -C option and no label list was given. Name '
      'the labels with a MULAN XML file (data.xml_file, or xml_path), the number of label attributes at the end '
      '(data.num_labels, or num_labels), or "-C -L" in @relation (MEKA: the last L attributes)')


def _no_rows(tmp_path):
  path = tmp_path / 'no.arff'
  path.write_text(_arff('abc', [], relation='r -C -1'))
  return [f'--config.data.train_file={path}'], (f'error: {path}: no data rows after @data: nothing to train or '
                                                'evaluate on')


def _one_row(tmp_path):
  path = tmp_path / 'one.arff'
  path.write_text(_arff('abc', [[0, 1, 1]], relation='r -C -1'))
  return [f'--config.data.train_file={path}', '--config.batch_size=1'], (
      f'error: the dev and test splits are empty: the 60/20/20 split of all rows needs more rows than the files hold '
      f'(rows: {path} 1); each of train, dev and test needs at least one (4 rows at least for a 60/20/20 split)')


def _empty_tagging_split(tmp_path):
  folder = _tagging_data(tmp_path / 'empty_split', dev_text='\n\n')
  return [*TAGGING, f'--config.data.data_dir={folder}'], (
      f'error: {folder}/twitter_pos/oct27.test: no sentences (one token per line, a blank line after each sentence): '
      "dataset 'twitter_pos' reads its dev split from this file")


def _glove_nan(tmp_path):
  glove = tmp_path / 'glove.4d.txt'
  glove.write_text('the 0.1 0.2 0.3 0.4\nrt 0.5 nan 0.1 0.2\n')
  data_dir = _tagging_data(tmp_path / 'glove_data')
  return [*TAGGING, f'--config.data.data_dir={data_dir}', '--config.model.embeddings=glove',
          f'--config.model.embeddings_path={glove}', '--config.model.embedding_dim=4'], (
              f"error: {glove}:2: the vector of 'rt' holds nan (number 2 of 4): every value must be finite; repair or "
              'remove the line')


def _cora_ref_unclosed(tmp_path):
  cora = tmp_path / 'cora'
  shutil.copytree(FIXTURES / 'cora' / 'cora_citation', cora / 'cora_citation')
  refs = cora / 'cora_citation' / 'tagged_references.txt'
  text = refs.read_text()
  refs.write_text(text.replace('</ref>', '', 1))
  line = text[:text.index('<ref>')].count('\n') + 1
  following = line + text[text.index('<ref>'):].split('<ref>', 2)[1].count('\n')
  return ['--config=configs/cora.py', f'--config.data.data_dir={cora}', '--config.model.embeddings=random'], (
      f'error: {refs}:{line}: <ref> is not closed before the next <ref> on line {following}: add </ref> at the end of '
      'the reference')


TRAINING_FILES = {'arff_features_only': _features_only, 'arff_no_rows': _no_rows, 'arff_one_row': _one_row,
                  'empty_tagging_split': _empty_tagging_split, 'glove_nan': _glove_nan,
                  'cora_ref_unclosed': _cora_ref_unclosed}


@pytest.mark.e2e
@pytest.mark.parametrize('key', TRAINING_FILES)
def test_a_file_that_cannot_be_trained_on_is_one_line_naming_it(tmp_path, fault, key):
  """Files a new user trains on: an ARFF without label columns, without rows or with one row, an empty tagging
  split, GloVe vectors with a NaN, a Cora reference without its end: one line naming the file (and line) and
  saying what to do, before the workdir is made."""
  args, message = TRAINING_FILES[key](tmp_path)
  workdir = tmp_path / 'run'
  code, _, err = _run('main', *(CUSTOM if key.startswith('arff') else []), *args, f'--workdir={workdir}')
  with fault(key, code, err):
    assert _one_error(code, err) == message
    assert not workdir.exists()


# ------------------------------------------------------------------------------------------ divergence

DIVERGING = {
    'adam_1e3': (['--config.optimizer.learning_rate=1e3'],
                 r'loss_aux diverged: \S+ \(mean of the \d+ steps up to step \d+\) exceeds '
                 r'config\.divergence\.max_loss=1e\+06'),
    'neumann_alpha_2': (['--config.implicit.solver.name=neumann', '--config.implicit.solver.alpha=2'],
                        r'residual diverged: \S+ \(mean of the \d+ steps up to step \d+\) exceeds '
                        r'config\.divergence\.max_residual=1000'),
    # the loss check off: the inner optimizer's NaN is what stops it
    'nan_loss': (['--config.implicit.inner_optimizer.name=sgd', '--config.implicit.inner_optimizer.learning_rate=1e3',
                  '--config.divergence.max_loss=0'],
                 r'non-finite \w+ \((nan|inf|-inf)\) in the \d+ steps up to step \d+'),
}


@pytest.mark.e2e
@pytest.mark.parametrize('key', DIVERGING)
def test_a_diverging_run_stops_naming_quantity_step_and_checkpoint(tmp_path, fault, key):
  extra, pattern = DIVERGING[key]
  workdir = tmp_path / 'run'
  code, _, err = _run('main', *TINY, f'--workdir={workdir}', '--config.log_every=1', *extra)
  with fault(key, code, err):
    assert re.fullmatch(rf'error: {pattern}; training stopped, last good checkpoint: (step \d+ in '
                        rf'{re.escape(str(workdir))}/checkpoints|none saved yet)', _one_error(code, err))


# ------------------------------------------------------------------------------------------ damage


@pytest.mark.e2e
def test_a_torn_last_metrics_line_is_dropped_with_a_warning(reference, tmp_path, fault):
  workdir = _copy(reference[2], tmp_path / 'torn')
  with open(workdir / 'metrics.jsonl', 'a') as f:
    f.write('{"step": 17, "train/loss_a')  # the process died while writing this line
  code, _, err = _run('main', *TINY, f'--workdir={workdir}', '--config.num_epochs=3', '--config.checkpoint_every=4')
  with fault('torn_metrics', code, err):
    assert code == 0, err[-2000:]
    assert [re.fullmatch(rf'warning: {workdir / "metrics.jsonl"}:\d+: dropped a torn last line \(26 characters\)',
                         line) is not None for line in shown(err)] == [True], err[-2000:]
    assert (workdir / 'metrics.jsonl').read_text() == (reference[3] / 'metrics.jsonl').read_text()


def test_a_torn_line_before_the_last_is_an_error_naming_it(tmp_path):
  path = tmp_path / 'metrics.jsonl'
  path.write_text('{"step": 1, "a": 1}\n{"step": 2, "a\n{"step": 3, "a": 3}\n')
  with pytest.raises(ValueError, match=rf'{path}:2: not a metrics record'):
    writers.read_metrics(str(path))
  path.write_text('{"step": 1, "a": 1}\n{"step": 2, "a')
  assert writers.read_metrics(str(path)) == [{'step': 1, 'a': 1}]


def _empty_files(folder):
  for f in folder.rglob('*'):
    if f.is_file():
      f.write_bytes(b'')


@pytest.mark.e2e
def test_a_damaged_latest_checkpoint_falls_back_to_the_previous_one(reference, tmp_path, fault):
  """The latest checkpoint's files are emptied; resuming warns naming it, moves it aside, continues from the
  one before and ends exactly as the uninterrupted run. ``evaluate`` falls back the same way for the best
  parameters, and moves nothing (a reader)."""
  workdir = _copy(reference[2], tmp_path / 'damaged')
  latest = workdir / 'checkpoints' / '16'
  _empty_files(latest)
  partial = workdir / 'checkpoints' / '20.orbax-checkpoint-tmp-1700000000'  # a save cut short by a kill
  (partial / 'state').mkdir(parents=True)
  code, _, err = _run('main', *TINY, f'--workdir={workdir}', '--config.num_epochs=3', '--config.checkpoint_every=4')
  with fault('checkpoint_emptied', code, err):
    assert code == 0, err[-2000:]
    assert [re.fullmatch(rf'warning: checkpoint {latest} is unreadable \(.+\); moved to '
                         rf'{workdir / "corrupt" / "checkpoints-16"}, using the one before it', line) is not None
            for line in shown(err)] == [True], err[-2000:]
    assert not partial.exists() and (workdir / 'corrupt' / 'checkpoints-16').is_dir()
    assert _metrics(workdir) == _metrics(reference[3])

  reader = _copy(reference[3], tmp_path / 'best_damaged')
  best = sorted((reader / 'best').iterdir(), key=lambda d: int(d.name))
  assert len(best) == 2
  _empty_files(best[-1])
  code, _, err = _run('evaluate', f'--workdir={reader}')
  with fault('best_emptied', code, err):
    assert code == 0, err[-2000:]
    lines = shown(err)
    assert len(lines) == 2, err[-2000:]
    assert re.fullmatch(rf'warning: checkpoint {best[-1]} is unreadable \(.+\); using the one before it', lines[0])
    assert lines[1].startswith(f'warning: {reader / "metrics.json"} is the result of the best-on-dev parameters of '
                               f'step {best[-1].name}; those read are of step {best[0].name} ({best[0]})')
    assert best[-1].is_dir()  # a reader moves nothing


@pytest.mark.e2e
def test_a_checkpoint_whose_loop_record_is_empty_is_set_aside_like_a_damaged_one(reference, tmp_path, fault):
  """The latest checkpoint's loop record reads ``{}`` (was: KeyError 'train_seconds'). Defaults would lose the
  history and the best epoch so far, so it is damage: warned, set aside, the one before used, and the run ends as
  the uninterrupted one."""
  workdir = _copy(reference[2], tmp_path / 'empty_loop')
  (workdir / 'checkpoints' / '16' / 'loop' / 'metadata').write_text('{}')
  code, _, err = _run('main', *TINY, f'--workdir={workdir}', '--config.num_epochs=3', '--config.checkpoint_every=4')
  with fault('empty_loop_record', code, err):
    assert code == 0, err[-2000:]
    assert shown(err) == [
        f'warning: checkpoint {workdir}/checkpoints/16 is unreadable (ValueError: its loop record lacks or mangles '
        f'history, train_log, best, train_seconds); moved to {workdir}/corrupt/checkpoints-16, using the one before it']
    assert _metrics(workdir) == _metrics(reference[3])


@pytest.mark.e2e
def test_a_config_record_cut_short_is_one_line_naming_it(reference, tmp_path, fault):
  workdir = _copy(reference[2], tmp_path / 'broken_config')
  (workdir / 'config.json').write_text('{"seed": 0, "task"')
  code, _, err = _run('evaluate', f'--workdir={workdir}')
  with fault('config_cut_short', code, err):
    assert _one_error(code, err) == (f"error: {workdir}/config.json: not valid JSON (Expecting ':' delimiter: line 1 "
                                     'column 19 (char 18))')


# ------------------------------------------------------------------------------------------ one line

FULL_DISK = '''
import errno, sys
from implicit_jax import main
from implicit_jax.engine import checkpoints, cli
def full(self, state, loop):
  raise OSError(errno.ENOSPC, 'No space left on device', self.directory)
checkpoints.Checkpointer.save = full
sys.argv = ['implicit_jax.main'] + sys.argv[1:]
cli.run(main.main)
'''


# `python -m implicit_jax.main` on a disk that fills at the third save of the training state (step 12): the write
# fails inside one of Orbax's worker threads, as a real full disk makes it fail, and every thread waiting on it
# fails too (on a real full disk, tensorstore's write reports errno 28 the same way).
ORBAX_FULL_DISK = '''
import errno, runpy, sys
from orbax.checkpoint._src.serialization import jax_array_handlers
spec = jax_array_handlers.ts_utils.get_sharding_tensorstore_spec
def full(directory, *args, **kwargs):
  if '/checkpoints/12.' in str(directory):
    raise OSError(errno.ENOSPC, 'No space left on device', str(directory))
  return spec(directory, *args, **kwargs)
jax_array_handlers.ts_utils.get_sharding_tensorstore_spec = full
sys.argv[0] = 'implicit_jax.main'
runpy.run_module('implicit_jax.main', run_name='__main__')
'''


@pytest.mark.e2e
def test_a_disk_full_in_orbaxs_writer_is_one_line_and_the_run_resumes_exactly(reference, tmp_path, fault):
  """Orbax's workers each printed the failure with a traceback (154 lines on main, one after the error line); now
  one line names the checkpoint, the cause and the checkpoint a rerun resumes from, and the rerun ends exactly as
  the uninterrupted run."""
  workdir = tmp_path / 'orbax_full'
  args = [*TINY, f'--workdir={workdir}', '--config.num_epochs=3', '--config.checkpoint_every=4']
  code, _, err = _run(None, *args, code=ORBAX_FULL_DISK)
  code2, out2, err2 = _run('main', *args)
  with fault('orbax_full_disk', code, err):
    assert _one_error(code, err) == (
        f'error: checkpoint at step 12 to {workdir}/checkpoints failed: No space left on device (errno 28); the last '
        f'good checkpoint is step 8 ({workdir}/checkpoints/8); free space and rerun the same command to resume from it')
    assert code2 == 0 and 'resuming from step 8' in out2, err2[-2000:]
    assert _metrics(workdir) == _metrics(reference[3])
    assert (workdir / 'metrics.jsonl').read_text() == (reference[3] / 'metrics.jsonl').read_text()


# `python -m implicit_jax.main` where no file may grow past 100 bytes: the lock's record fits, config.json does not.
# The kernel fails the write as a full disk does (EFBIG instead of ENOSPC), at whichever file comes first.
SMALL_FILES_ONLY = '''
import resource, runpy, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (100, 100))
sys.argv[0] = 'implicit_jax.main'
runpy.run_module('implicit_jax.main', run_name='__main__')
'''


@pytest.mark.e2e
def test_a_failed_write_at_the_start_names_the_file_and_leaves_no_temporary(tmp_path, fault):
  """Was '[Errno 27] File too large' (no path) and an empty config.json.tmp left behind."""
  workdir = tmp_path / 'small_files'
  env = {k: v for k, v in os.environ.items() if k != 'JAX_COMPILATION_CACHE_DIR'}  # its writes would fail too
  code, _, err = _run(None, *TINY, f'--workdir={workdir}', code=SMALL_FILES_ONLY, env=dict(env, JAX_PLATFORMS='cpu'))
  with fault('write_fails_at_start', code, err):
    assert _one_error(code, err) == f'error: cannot write {workdir}/config.json: File too large (errno {errno.EFBIG})'
    assert not list(workdir.rglob('*.tmp')) and not (workdir / 'lock').exists()
  assert workdir_lib.foreign_files(str(workdir)) == []  # nothing in the way of the same command, once it can write


@pytest.mark.e2e
def test_command_lines_end_bad_input_in_one_line(tmp_path, fault):
  """Each command is run as a user runs it; all are started at once and then read."""
  empty = tmp_path / 'empty'
  empty.mkdir()
  (empty / 'config.json').write_text((FIXTURES / 'workdir_v1' / 'config.json').read_text())
  a_file = tmp_path / 'a_file'
  a_file.write_text('')
  cases = {  # case: (exit status, the line, the command)
      'workdir_is_a_file': (1, rf"\[Errno 20\] --workdir names an existing file, not a folder: '{a_file}'",
                            _cli('main', *TINY, f'--workdir={a_file}')),
      'workdir_cannot_be_made': (1, rf"\[Errno 20\] cannot create the workdir \(Not a directory\): '{a_file}/sub'",
                                 _cli('main', *TINY, f'--workdir={a_file}/sub')),
      'full_disk': (1, rf"\[Errno 28\] No space left on device: '{tmp_path}/full/checkpoints'",
                    _cli(None, *TINY, f'--workdir={tmp_path / "full"}', code=FULL_DISK)),
      'misspelt_override': (2, r'--config.optimzer.learning_rate: the config has no field .optimzer.\. Did you mean '
                               r'"optimizer" instead of "optimzer"\?',
                            _cli('main', *TINY, f'--workdir={tmp_path / "w1"}', '--config.optimzer.learning_rate=1')),
      'config_missing': (2, r"--config=configs/nope.py: cannot load it: \[Errno 2\] No such file or directory: "
                            r"'configs/nope.py'",
                         _cli('main', '--config=configs/nope.py', f'--workdir={tmp_path / "w2"}')),
      'unknown_method': (1, r"config\.method: unknown method 'implicitt'; choose one of \[.*'implicit'.*\] or the "
                            r"import path of a plug-in \(no module named 'implicitt'.*\)",
                         _cli('main', *TINY, f'--workdir={tmp_path / "w3"}', '--config.method=implicitt')),
      'evaluate_no_checkpoint': (1, rf'no best-on-dev parameters under {empty}/best \(the run has not finished its '
                                    r'first epoch\)', _cli('evaluate', f'--workdir={empty}')),
      'predict_no_checkpoint': (1, rf'no best-on-dev parameters under {empty}/best \(the run has not finished its '
                                   r'first epoch\)', _cli('predict', f'--workdir={empty}', f'--input={a_file}')),
      'output_folder_missing': (1, rf'--output: the folder of {tmp_path}/no/such/out.txt does not exist',
                                _cli('predict', f'--workdir={empty}', f'--input={a_file}',
                                     f'--output={tmp_path}/no/such/out.txt')),
  }
  for key, (want_code, pattern, proc) in cases.items():
    code, _, err = _finish(proc)
    with fault(key, code, err):
      assert re.fullmatch(f'error: {pattern}', _one_error(code, err, want_code)), err[-2000:]


@pytest.mark.e2e
def test_a_misspelt_nested_override_and_a_broken_config_file_are_one_line(tmp_path, fault):
  """A misspelt field inside a section, and config files that do not parse, define no get_config(), whose
  get_config() raises or returns a dict: one line naming the field or the file (and line), exit 2, nothing
  written."""
  files = {'config_syntax': 'def get_config(:\n  pass\n', 'config_no_get': 'X = 1\n',
           'config_raises': 'def get_config():\n  raise RuntimeError("boom")\n',
           'config_dict': 'def get_config():\n  return {"seed": 0}\n',
           **{key: ('from implicit_jax.engine import config as config_lib\ndef get_config():\n'
                    f'  c = config_lib.base_config()\n  {line}\n  return c\n')
              for key, line in (('config_typo', 'c.optimizer.learning_rat = 0.5'),
                                ('config_unknown_field', 'c.no_such_field = 3'))}}
  for key, text in files.items():
    (tmp_path / f'{key}.py').write_text(text)
  workdir = tmp_path / 'w'
  procs = {'misspelt_nested': _cli('main', *TINY, f'--workdir={workdir}', '--config.optimizer.learning_rat=1',
                                   '--config.seed=1'),
           **{key: _cli('main', f'--config={tmp_path / key}.py', f'--workdir={workdir}') for key in files}}
  want = {
      'misspelt_nested': 'error: --config.optimizer.learning_rat: the config has no field \'learning_rat\'. Did you '
                         'mean "learning_rate" instead of "learning_rat"?',
      'config_syntax': f'error: --config={tmp_path}/config_syntax.py: cannot load it: SyntaxError at line 1: invalid '
                       'syntax',
      'config_no_get': f'error: --config={tmp_path}/config_no_get.py: cannot load it: the file defines no '
                       'get_config()',
      'config_raises': f'error: --config={tmp_path}/config_raises.py: get_config() failed at line 2: RuntimeError: '
                       'boom',
      'config_dict': f'error: --config={tmp_path}/config_dict.py: get_config() returned a dict, not an '
                     'ml_collections.ConfigDict (start from config_lib.from_file or base_config)',
      # base_config is locked: a field the file misspells or invents is refused at its line (it trained at the
      # default and recorded the typo)
      'config_typo': f'error: --config={tmp_path}/config_typo.py: line 4 sets \'learning_rat\', a field the config '
                     'does not have. Did you mean "learning_rate" instead of "learning_rat"?',
      'config_unknown_field': f'error: --config={tmp_path}/config_unknown_field.py: line 4 sets \'no_such_field\', a '
                              'field the config does not have',
  }
  for key, proc in procs.items():
    code, _, err = _finish(proc)
    with fault(key, code, err):
      assert _one_error(code, err, 2) == want[key]
      assert not workdir.exists()
  # The same raising file given by a relative path: its line was named only for an absolute one (the loader's frames
  # carry the relative name), leaving 'error: boom'.
  (tmp_path / 'cfg').mkdir()
  (tmp_path / 'cfg' / 'raises.py').write_text(files['config_raises'])
  proc = subprocess.run([sys.executable, '-m', 'implicit_jax.main', '--config=cfg/raises.py', f'--workdir={workdir}'],
                        cwd=tmp_path, env=dict(os.environ, JAX_PLATFORMS='cpu'), capture_output=True, text=True,
                        timeout=300, check=False)
  with fault('config_raises_relative', proc.returncode, proc.stderr):
    assert _one_error(proc.returncode, proc.stderr, 2) == ('error: --config=cfg/raises.py: get_config() failed at line '
                                                           '2: RuntimeError: boom')
    assert not workdir.exists()


@pytest.mark.e2e
def test_a_folder_of_the_users_own_files_is_refused_untouched(tmp_path, fault):
  """A --workdir holding the user's own config.json, metrics.json and data.json (not a run's records) is refused
  in one line naming them, before anything is written; so is a folder of other files, and ``/``."""
  mine = tmp_path / 'own_files'
  mine.mkdir()
  files = {'config.json': '{"lr": 0.1}', 'metrics.json': '{"accuracy": 0.9}', 'data.json': '[1, 2, 3]'}
  for name, text in files.items():
    (mine / name).write_text(text)
  code, _, err = _run('main', *TINY, f'--workdir={mine}')
  with fault('users_own_records', code, err):
    assert _one_error(code, err) == (f'error: --workdir {mine} holds files a training run did not write (config.json, '
                                     'data.json, metrics.json); nothing was changed: give a new or empty folder')
    assert sorted(p.name for p in mine.iterdir()) == sorted(files)
    assert all((mine / name).read_text() == text for name, text in files.items())
  with pytest.raises(ValueError, match=r'--workdir / holds files a training run did not write'):
    workdir_lib.prepare('/')
  # A run's own workdir, and one whose start failed after its lock, still pass.
  (tmp_path / 'started').mkdir()
  (tmp_path / 'started' / 'lock').write_text('')
  workdir_lib.prepare(str(tmp_path / 'started'))


@pytest.mark.e2e
def test_a_folder_of_run_file_names_without_a_run_record_is_refused_untouched(tmp_path, fault):
  """A folder holding the user's own metrics.jsonl, lock and checkpoints/readme.txt but no config.json was taken
  for a workdir: metrics.jsonl replaced, lock deleted. Without a run's config record, only a start's lock record
  (and the config record's temporary) may be there."""
  mine = tmp_path / 'users_files'
  (mine / 'checkpoints').mkdir(parents=True)
  files = {'metrics.jsonl': '{"step": 1, "loss": 0.5}\n', 'lock': 'my own lock\n', 'checkpoints/readme.txt': 'x'}
  for name, text in files.items():
    (mine / name).write_text(text)
  code, _, err = _run('main', *TINY, f'--workdir={mine}')
  with fault('users_run_file_names', code, err):
    assert _one_error(code, err) == (f'error: --workdir {mine} holds files a training run did not write (checkpoints, '
                                     'lock, metrics.jsonl); nothing was changed: give a new or empty folder')
    assert all((mine / name).read_text() == text for name, text in files.items())
    assert sorted(p.name for p in mine.iterdir()) == ['checkpoints', 'lock', 'metrics.jsonl']
  # A start killed after taking its lock (the lock's record, the config record's temporary) is not in the way.
  started = tmp_path / 'started'
  started.mkdir()
  (started / 'lock').write_text('1234 on somehost\n')
  (started / 'config.json.tmp').write_text('{"meth')
  (started / 'best').mkdir()
  assert workdir_lib.foreign_files(str(started)) == []


@pytest.mark.e2e
def test_predict_refuses_to_write_over_its_input(tmp_path, fault):
  """``--output`` naming the input file (or a link to it) is refused before any work; the input is untouched."""
  source = tmp_path / 'rows.arff'
  source.write_text('@relation r\n@attribute a numeric\n@data\n1\n')
  link = tmp_path / 'link.arff'
  link.symlink_to(source)
  empty = tmp_path / 'empty'
  empty.mkdir()
  message = 'error: --output={} is the input file: writing predictions there would replace it; give another path'
  code, _, err = _run('predict', f'--workdir={empty}', f'--input={source}', f'--output={source}')
  with fault('output_is_input', code, err):
    assert _one_error(code, err) == message.format(source)
    assert source.read_text() == '@relation r\n@attribute a numeric\n@data\n1\n'
  code, _, err = _run('predict', f'--workdir={empty}', f'--input={source}', f'--output={link}')
  assert _one_error(code, err) == message.format(link)
  assert source.read_text() == '@relation r\n@attribute a numeric\n@data\n1\n'


# ------------------------------------------------------------------------------------------ files given to predict


@pytest.fixture(scope='module')
def bibtex(tmp_path_factory):
  """A one-epoch MBCE model of the embedded bibtex (``workdir``), the first 6 rows of its test split as a sparse
  MULAN ARFF (``arff``), and predict's labels for them at threshold 0.2 (``original``)."""
  config = load_config('bibtex')
  config.method, config.num_epochs = 'feedforward', 1
  workdir = tmp_path_factory.mktemp('bibtex')
  train.train_and_evaluate(config, str(workdir))
  test = load_embedded_bibtex()['test']
  arff = tmp_path_factory.mktemp('input') / 'rows.arff'
  arff.write_text(_sparse_arff([*test.feature_names, *test.label_names], np.concatenate([test.x[:6], test.y[:6]], 1)))
  code, original, err = _run('predict', f'--workdir={workdir}', f'--input={arff}', '--threshold=0.2')
  assert code == 0 and original.strip(), err[-2000:]  # some labels: the comparisons below compare names
  return types.SimpleNamespace(workdir=workdir, arff=arff, test=test, original=original)


def _features_reordered(b, tmp_path):
  order = list(range(len(b.test.feature_names)))[::-1]
  path = tmp_path / 'permuted.arff'
  path.write_text(_sparse_arff([b.test.feature_names[j] for j in order] + list(b.test.label_names),
                               np.concatenate([b.test.x[:6][:, order], b.test.y[:6]], axis=1)))
  return path, [f"{path}: features reordered by name to the training data's order"]


def _labels_unknown(b, tmp_path):
  lines = b.arff.read_text().split('\n')
  start = lines.index('@data') + 1
  path = tmp_path / 'unknown_labels.arff'
  path.write_text('\n'.join(lines[:start] + [','.join([*map(str, r.astype(int)), *['?'] * 159])
                                             for r in read_mulan(b.arff, num_labels=159).x]) + '\n')
  return path, []


READ_AS_TRAINED = {
    'features_reordered': _features_reordered,
    'labels_unknown': _labels_unknown,
    'labels_reversed': lambda b, tmp_path: (rewrite_arff(b.arff, tmp_path / 'labels_reversed.arff',
                                                         label_order=np.arange(159)[::-1]), []),
    'nominal_swapped': lambda b, tmp_path: (rewrite_arff(b.arff, tmp_path / 'nominal_swapped.arff', nominal='{1,0}'),
                                            []),
}


@pytest.mark.e2e
@pytest.mark.parametrize('key', READ_AS_TRAINED)
def test_predict_reads_a_file_as_the_training_file_was_read(bibtex, tmp_path, fault, key):
  """The bibtex rows with their features in another order, '?' for their labels, the label columns reversed, the
  nominal values declared {1,0}: the same labels as the rows as written (features and labels matched by name,
  values by value, label columns ignored)."""
  path, notes = READ_AS_TRAINED[key](bibtex, tmp_path)
  code, out, err = _run('predict', f'--workdir={bibtex.workdir}', f'--input={path}', '--threshold=0.2')
  with fault(key, code, err):
    assert code == 0, err[-2000:]
    assert out == bibtex.original and shown(err) == notes


def _feature_renamed(b, tmp_path):
  path = tmp_path / 'renamed.arff'
  names = ['abstrakt' if n == 'abstract' else n for n in [*b.test.feature_names, *b.test.label_names]]
  path.write_text(_sparse_arff(names, np.concatenate([b.test.x[:6], b.test.y[:6]], axis=1)))
  return path, (f"error: {path}: its features are not the training data's: missing 1 of the training features: "
                "'abstract'; 1 features the model was not trained on: 'abstrakt'")


def _npy_inf(b, tmp_path):
  path = tmp_path / 'nan.npy'
  values = np.zeros((3, len(b.test.feature_names)), np.float32)
  values[1, 4] = np.inf
  np.save(path, values)
  return path, f'error: {path}: predict: x holds NaN or Inf (first at index (1, 4): example 1)'


def _label_renamed(b, tmp_path):
  path = rewrite_arff(b.arff, tmp_path / 'label_renamed.arff', rename_label=('TAG_apob', 'TAG_apoB'))
  return path, f"error: {path}: no attribute for 1 of the run's labels: 'TAG_apob' (labels are matched by name)"


def _nominal_unknown(b, tmp_path):
  path = tmp_path / 'nominal_unknown.arff'
  lines = rewrite_arff(b.arff, path, nominal='{0,1,2}').read_text().split('\n')
  header = lines.index('@data')
  first = lines[header + 1].split(',')
  first[0] = '2'  # the first feature, '0', takes a value the model never saw
  lines[header + 1] = ','.join(first)
  path.write_text('\n'.join(lines))
  return path, f"error: {path}:{header + 2}: feature '0': value '2' is not one the model was trained on {{0,1}}"


def _npy_objects(b, tmp_path):
  del b
  path = tmp_path / 'objects.npy'
  np.save(path, np.array([{'a': 1}, None], dtype=object), allow_pickle=True)
  return path, (f'error: {path}: an array of Python objects, which predict does not load (loading it could run code '
                'from the file): save numbers, e.g. numpy.save(path, x.astype(numpy.float32))')


def _npy_text(b, tmp_path):
  del b
  path = tmp_path / 'text.npy'
  np.save(path, np.array([['0', '1'], ['1', '0']]))
  return path, (f"error: {path}: holds text (dtype <U1), not numbers: predict reads the model's numeric inputs from "
                "a .npy; give the task's own file format for anything else")


def _arff_no_rows(b, tmp_path):
  path = tmp_path / 'no_rows.arff'
  path.write_text(b.arff.read_text().split('@data')[0] + '@data\n')
  return path, f'error: {path}: no data rows after @data: nothing to predict'


UNREADABLE = {'feature_renamed': _feature_renamed, 'npy_inf': _npy_inf, 'label_renamed': _label_renamed,
              'nominal_unknown': _nominal_unknown, 'npy_objects': _npy_objects, 'npy_text': _npy_text,
              'arff_no_rows_to_predict': _arff_no_rows}


@pytest.mark.e2e
@pytest.mark.parametrize('key', UNREADABLE)
def test_a_file_predict_cannot_read_is_one_line(bibtex, tmp_path, fault, key):
  """A renamed feature or label, Inf in a .npy, a nominal value the run never saw, a .npy of objects or of text, an
  ARFF without rows: one line naming the file and what is wrong with it."""
  path, message = UNREADABLE[key](bibtex, tmp_path)
  code, out, err = _run('predict', f'--workdir={bibtex.workdir}', f'--input={path}')
  with fault(key, code, err):
    assert _one_error(code, err) == message and not out


@pytest.mark.e2e
def test_predict_for_a_tagging_run_reads_text_and_conll_and_names_bad_input(tmp_path, fault):
  """A one-epoch Twitter POS run given new text: raw, a sentence per line, and as CoNLL columns (both sniffed):
  token<TAB>tag lines, the same for both. Raw text read as CoNLL (``--format=conll``) is refused naming the line,
  and a folder as ``--input`` is named a folder."""
  run = tmp_path / 'tagging_run'
  code, _, err = _run('main', *TAGGING, f'--config.data.data_dir={_tagging_data(tmp_path / "tagging_data")}',
                      f'--workdir={run}')
  assert code == 0, err[-2000:]
  sentences = [['I', 'love', 'the', 'Blorptastic', '!'], ['RT', 'zqxv', 'the']]
  raw, conll = tmp_path / 'new.txt', tmp_path / 'new.conll'
  raw.write_text('\n'.join(' '.join(s) for s in sentences) + '\n')
  conll.write_text('\n\n'.join('\n'.join(f'{w}\tN' for w in s) for s in sentences) + '\n')
  (c1, o1, e1), (c2, o2, e2) = (_run('predict', f'--workdir={run}', f'--input={path}') for path in (raw, conll))
  with fault('tagging_text_and_conll', c1 or c2, lines=shown(e1) + shown(e2)):
    assert c1 == c2 == 0, (e1[-2000:], e2[-2000:])
    assert o1 == o2 and [line.split('\t')[0] for line in o1.split('\n') if line] == [w for s in sentences for w in s]
    assert o1.split('\n\n')[0].count('\n') == len(sentences[0]) - 1  # a blank line between sentences
    assert shown(e1) + shown(e2) == [
        f'{raw}: read as raw text, one sentence per line (2 sentences; --format=conll reads it otherwise)',
        f'{conll}: read as CoNLL columns (2 sentences; --format=text reads it otherwise)']
  code, out, err = _run('predict', f'--workdir={run}', f'--input={raw}', '--format=conll')
  with fault('conll_format_on_text', code, err):
    assert _one_error(code, err).startswith(f'error: {raw}:2: 3 columns where line 1 has 5: a CoNLL file has one '
                                            'token per line and the same columns on every line') and not out
  code, _, err = _run('predict', f'--workdir={run}', f'--input={tmp_path}')
  with fault('input_is_a_folder', code, err):
    assert _one_error(code, err) == (f'error: --input={tmp_path} is a folder: give a file of examples (a .npy of '
                                     "inputs, or a file in the run's dataset format)")


# ------------------------------------------------------------------------------------------ files the readers take


@pytest.mark.e2e
@pytest.mark.parametrize('key', ['bom', 'xml_omits_3', 'xml_contradicts_meka', 'xml_omits_first'])
def test_mulan_files_are_read_as_mulan_reads_them(tmp_path, fault, key):
  """MULAN files as ``main`` reads them (``read_mulan``): a UTF-8 byte-order mark is read past; a label XML that
  omits labels (the last 3, or the first) warns naming the attributes then read as features; an XML contradicting
  the ARFF's -C header decides, with a warning naming both (MULAN's convention)."""
  cut, cut_xml = FIXTURES / 'mlc' / 'bibtex_cut.arff', FIXTURES / 'mlc' / 'bibtex_cut.xml'
  plain = read_mulan(cut, cut_xml)
  if key == 'bom':
    bom = tmp_path / 'bom.arff'
    bom.write_bytes(b'\xef\xbb\xbf' + cut.read_bytes())
    try:
      data, seen = read_mulan(bom, cut_xml), ['(read)']
    except ValueError as e:
      data, seen = None, [str(e)]
    with fault(key, lines=seen):
      assert data is not None and data.label_names == plain.label_names and data.x.shape[0] == 5
      assert np.array_equal(data.x, plain.x) and np.array_equal(data.y, plain.y)
    return
  if key == 'xml_contradicts_meka':
    path, xml = tmp_path / 'meka.arff', tmp_path / 'one.xml'
    path.write_text("@relation 'r: -C -2'\n@attribute a {0,1}\n@attribute b {0,1}\n@attribute L {0,1}\n@data\n{0 1}\n")
    xml.write_text('<labels><label name="L"/></labels>')
    want = [f"{path}: its @relation option -C -2 names the last 2 attributes ('b', 'L') as labels, but {xml} names 1 "
            "('L'); following the XML, as MULAN does"]
    labels = ('L',)
  else:
    path, xml = cut, tmp_path / 'short.xml'
    names = plain.label_names
    kept = names[:7] if key == 'xml_omits_3' else names[1:]
    xml.write_text('<labels>' + ''.join(f'<label name="{n}"/>' for n in kept) + '</labels>')
    want = ([f'{cut}: 3 attribute(s) among or after the labels of {xml} are not in it and are read as features: '
             f"{', '.join(map(repr, names[7:]))}. If they are labels, add them to the XML"] if key == 'xml_omits_3' else
            [f"{cut}: 1 attribute(s) just before the labels of {xml} look like labels (named like them ('TAG_'...)) "
             f'but are not in it and are read as features: {names[0]!r}. If they are labels, add them to the XML'])
    labels = tuple(kept)
  with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter('always')
    data = read_mulan(path, xml)
  with fault(key, lines=[f'warning: {w.message}' for w in caught]):
    assert [str(w.message) for w in caught] == want
    assert data.label_names == labels


def _horses_copy(folder):
  shutil.copytree(FIXTURES / 'horses' / 'weizmann_horse', folder / 'weizmann_horse')
  return folder / 'weizmann_horse'


@pytest.mark.e2e
@pytest.mark.parametrize('key,encoding', [('0_1', '0/1'), ('red_rgb', 'red on black RGB'), ('0_100', '0/100')])
def test_horse_masks_stored_otherwise_read_as_the_originals(tmp_path, fault, key, encoding):
  """The fixture's {0, 255} grey masks stored as 0/1, 0/100 grey or red on black RGB: the same splits."""
  original = horses.load(str(FIXTURES / 'horses'), 16, 6, 3, 0)[0]
  for path in (_horses_copy(tmp_path) / 'masks').iterdir():
    with Image.open(path) as m:
      horse = np.asarray(m) > 0
    if encoding.startswith('red'):
      Image.fromarray(np.stack([horse * 255, 0 * horse, 0 * horse], -1).astype(np.uint8), 'RGB').save(path)
    else:
      Image.fromarray((horse * int(encoding.split('/')[1])).astype(np.uint8), 'L').save(path)
  splits, info = horses.load(str(tmp_path), 16, 6, 3, 0)
  with fault(f'masks_{key}', lines=[f'(read: horse fraction {info["horse_fraction"]["train"]:.2f} in train)']):
    assert all(np.array_equal(splits[s]['y'], original[s]['y']) for s in original)


@pytest.mark.e2e
def test_horse_images_as_jpg_and_a_mask_of_three_values(tmp_path, fault):
  """Two images saved as .jpg beside a stray README.txt: the images read, the stray file named in a warning. A
  mask with a third value (an anti-aliased edge): an error naming the file."""
  images = _horses_copy(tmp_path / 'horses_jpg') / 'images'
  for i in (2, 5):
    with Image.open(images / f'image-{i}.png') as im:
      im.save(images / f'image-{i}.jpg', quality=95)
    (images / f'image-{i}.png').unlink()
  (images / 'README.txt').write_text('where the horses came from')
  with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter('always')
    _, info = horses.load(str(tmp_path / 'horses_jpg'), 16, 6, 3, 0)
  with fault('horses_jpg', lines=[f'warning: {w.message}' for w in caught] + [f'(read: {info["num_pairs"]} pairs)']):
    assert info['num_pairs'] == 12
    assert [str(w.message) for w in caught] == [
        f'{images}: 1 file(s) not named image-<id>.<png|jpg|jpeg|bmp|gif|tif|tiff|webp> are skipped: README.txt']

  mask = _horses_copy(tmp_path / 'horses_grey') / 'masks' / 'mask-0.png'
  with Image.open(mask) as m:
    values = np.asarray(m).copy()
  values[0, :3] = 128  # an anti-aliased edge
  Image.fromarray(values, 'L').save(mask)
  try:
    horses.load(str(tmp_path / 'horses_grey'), 16, 6, 3, 0)
    seen = ['(read)']
  except ValueError as e:
    seen = [str(e)]
  with fault('horse_mask_three_values', lines=seen):
    assert seen[0].startswith(f'{mask}: 3 distinct values (0, 128, 255); a mask holds two, 0 for background and one '
                              'other for the horse')


@pytest.mark.e2e
def test_inf_or_a_missing_value_in_a_training_file_names_file_line_and_attribute(tmp_path, fault):
  holes = tmp_path / 'holes.arff'
  holes.write_text('@relation r -C -1\n@attribute a numeric\n@attribute b numeric\n@attribute L {0,1}\n@data\n' +
                   ''.join(f'{i},{i % 3},{i % 2}\n' for i in range(30)) + '5,inf,1\n')
  custom = ['--config=configs/custom.py', f'--config.data.train_file={holes}', '--config.data.protocol=resplit']
  code, _, err = _run('main', *custom, f'--workdir={tmp_path / "holes_run"}')
  with fault('inf_feature', code, err):
    assert _one_error(code, err) == f"error: {holes}:36: feature 'b' is inf"
  holes.write_text(holes.read_text().replace('5,inf,1', '5,?,1'))
  # data.standardise='auto' imputes a missing value (mean of the train split) since it exists: 'never' is the
  # dataset that does not impute, and the batch fits the file's 19 training rows so that reading is what fails
  code, _, err = _run('main', *custom, '--config.data.standardise=never', '--config.batch_size=8',
                      f'--workdir={tmp_path / "holes_run"}')
  with fault('missing_feature', code, err):
    assert _one_error(code, err) == (f"error: {holes}:36: feature 'b' is missing (? or NaN) and features are not "
                                     'standardised, which is where missing values are imputed: set '
                                     "data.standardise='always' to impute them")


# ------------------------------------------------------------------------------------------ the engine after training


@pytest.mark.e2e
def test_an_extension_killed_part_way_never_pairs_the_old_threshold_with_new_parameters(reference, tmp_path,
                                                                                         monkeypatch, capsys, fault):
  """A finished 2-epoch run (best epoch 1) extended to 6 epochs and killed once it saved a best epoch of its own:
  its metrics.json held the old best epoch and threshold, and ``evaluate`` applied that threshold to the new
  parameters. Now the old result is moved aside when the extension starts, and a stale metrics.json left in place
  (by older code) is refused for parameters of another step; the threshold is chosen on dev for those read."""
  workdir = _copy(reference[2], tmp_path / 'extension')
  old_text = (workdir / 'metrics.json').read_text()
  old = json.loads(old_text)
  save_best = checkpoints.Checkpointer.save_best

  def killed_after_a_new_best(self, step, params):
    save_best(self, step, params)
    if step > 16:
      raise KeyboardInterrupt  # the extension is killed once it has a best epoch of its own

  monkeypatch.setattr(checkpoints.Checkpointer, 'save_best', killed_after_a_new_best)
  with pytest.raises(KeyboardInterrupt):
    train.train_and_evaluate(_tiny(num_epochs=6, checkpoint_every=4), str(workdir))
  monkeypatch.undo()
  moved = [line for line in capsys.readouterr().out.splitlines() if 'metrics.previous.json' in line]
  run = checkpoints.load_trained(str(workdir))
  dev = run.task.splits['dev']
  chosen_now = run.task.evaluator.calibrate(run.predict(dev), dev)['threshold']
  code, out, err = _run('evaluate', f'--workdir={workdir}', '--json')
  used = json.loads(out)['test']['threshold'] if code == 0 else None
  with fault('extension_killed', code, lines=moved + shown(err), used=used, old=old['threshold'], chosen=chosen_now):
    assert moved and moved[0].startswith(f'{workdir / "metrics.json"}: the result of the run as it ended at step 16 '
                                         f'moved to {workdir / "metrics.previous.json"}'), moved
    assert not (workdir / 'metrics.json').exists() and (workdir / 'metrics.previous.json').read_text() == old_text
    assert chosen_now != old['threshold'], 'the case needs a new best whose threshold differs'
    assert code == 0 and used == chosen_now, err[-2000:]

  (workdir / 'metrics.json').write_text(old_text)  # what the extension left in place before this change
  capsys.readouterr()
  assert evaluate.evaluate_run(str(workdir))['test']['threshold'] == chosen_now
  assert (f'warning: {workdir / "metrics.json"} is the result of the best-on-dev parameters of step 8; those read '
          'are of step') in capsys.readouterr().err

  result = train.train_and_evaluate(_tiny(num_epochs=6, checkpoint_every=4), str(workdir))  # the extension ends
  assert checkpoints.load_trained(str(workdir)).metrics['best_step'] == result['best_step']
  assert evaluate.evaluate_run(str(workdir))['test']['threshold'] == result['threshold']


def test_the_data_record_takes_the_fingerprint_the_processes_compared(tmp_path, monkeypatch):
  """A multi-host run's processes compare the data's fingerprint before training (multihost.agree_on_data); the
  workdir's data record takes that one instead of hashing the data a second time."""
  from implicit_jax import tasks  # pylint: disable=import-outside-toplevel
  task = tasks.get_task(load_config('tiny'))
  digests = workdir_lib.fingerprint(task)
  monkeypatch.setattr(workdir_lib, 'fingerprint', lambda task: pytest.fail('the data was hashed again'))
  workdir_lib.check_data(str(tmp_path), task, resuming=False, digests=digests)
  assert json.loads((tmp_path / 'data.json').read_text())['fingerprint'] == digests
  workdir_lib.check_data(str(tmp_path), task, resuming=True, digests=digests)  # a resumed run compares them


@pytest.mark.e2e
def test_evaluate_on_grown_data_names_the_data_not_damaged_checkpoints(tmp_path, capsys, fault):
  """A Cora run evaluated with a data folder that gained references: the vocabulary grew, the model built from it
  no longer fits the saved parameters, and every intact checkpoint was called unreadable. ``evaluate`` now checks
  the data's fingerprint first and names the splits and the file; a reader that does not (``load_trained``, as
  predict and notebooks use it) says the parameters do not fit data of another vocabulary, and sets nothing aside."""
  from tests.test_citations import FIXTURE, fixture_config  # pylint: disable=import-outside-toplevel
  config = fixture_config('feedforward', unlabeled=False)
  config.num_epochs = 1
  run = tmp_path / 'cora_run'
  train.train_and_evaluate(config, str(run))
  text = (FIXTURE / 'cora_citation' / 'tagged_references.txt').read_text()
  refs = text[text.index('<ref>'):text.rindex('</data>')]
  grown = tmp_path / 'cora_grown' / 'cora_citation' / 'tagged_references.txt'
  grown.parent.mkdir(parents=True)
  grown.write_text(text.replace('</data>', refs.replace('Chen', 'Zorblax') + '</data>'))
  code, _, err = _run('evaluate', f'--workdir={run}', f'--data_dir={tmp_path / "cora_grown"}')
  with fault('grown_cora', code, err):
    assert _one_error(code, err).startswith(
        f"error: workdir {run} was trained on other data: the train, dev, test splits read now from {grown} differ "
        f"from the run's record ({run}/data.json: train.")
  capsys.readouterr()
  with pytest.raises(ValueError, match=rf'^the best-on-dev parameters in {run}/best/\d+ do not fit the model built '
                     r'from the data and config read now \(theta\.params\.encoder\.embed\.embedding: '
                     r'saved \((\d+), 50\), now \((?!\1)\d+, 50\)\): the data differ'):
    checkpoints.load_trained(str(run), {'data.data_dir': str(tmp_path / 'cora_grown')})
  assert 'unreadable' not in capsys.readouterr().err
  assert checkpoints.load_trained(str(run)).params is not None  # nothing was set aside


@pytest.mark.e2e
@pytest.mark.parametrize('key,override,message', [
    # was numpy's 'expected non-negative integer', from the training loop, after the workdir's files were written
    ('seed_negative', '--config.seed=-1', 'config.seed must be an integer in [0, 2**63), got -1'),
    ('num_train_zero', '--config.data.num_train=0', 'config.data.num_train must be a positive integer, got 0'),  # was
    # a reshape message
])
def test_an_out_of_range_field_is_named_before_anything_is_written(tmp_path, fault, key, override, message):
  code, _, err = _run('main', *TINY, f'--workdir={tmp_path / "run"}', override)
  with fault(key, code, err):
    assert _one_error(code, err) == f'error: {message}'
    assert not (tmp_path / 'run').exists()


@pytest.mark.e2e
def test_train_accuracy_of_a_semi_supervised_run_counts_its_labeled_tokens_only(tmp_path, fault):
  """A semi-supervised Cora run (implicit, its unlabeled references' tokens with gold -1): ``evaluate``'s train
  accuracy is that of the labeled tokens, computed here by hand; the unlabeled ones are not errors."""
  from tests.test_citations import fixture_config  # pylint: disable=import-outside-toplevel
  config = fixture_config('implicit')
  config.num_epochs = 1
  run = tmp_path / 'cora_semi'
  train.train_and_evaluate(config, str(run))
  code, out, err = _run('evaluate', f'--workdir={run}', '--split=all', '--json')
  shown_accuracy = json.loads(out)['train']['accuracy'] if code == 0 else None
  loaded = checkpoints.load_trained(str(run))
  train_split = loaded.task.splits['train']
  tags, gold = np.argmax(np.asarray(loaded.predict(train_split)), -1), np.asarray(train_split['y'])
  real = np.asarray(train_split['mask']) > 0
  labeled, unlabeled = real & (gold >= 0), real & (gold < 0)
  by_hand, all_tokens = float(np.mean(tags[labeled] == gold[labeled])), float(np.mean(tags[real] == gold[real]))
  with fault('cora_unlabeled_tokens', code, err, shown=shown_accuracy, labeled=int(labeled.sum()),
             by_hand=f'{by_hand:.4f}', tokens=int(real.sum()), all_tokens=f'{all_tokens:.4f}'):
    assert code == 0, err[-2000:]
    assert unlabeled.any() and by_hand != all_tokens
    assert shown_accuracy == pytest.approx(by_hand, abs=1e-6)


@pytest.mark.e2e
def test_ctrl_c_while_training_is_one_line_and_the_run_resumes(tmp_path, fault):
  """SIGINT once the first checkpoint is saved: one line saying the run resumes, exit 130; the same command then
  resumes from that checkpoint and finishes."""
  workdir = tmp_path / 'ctrl_c'
  args = [*TINY, f'--workdir={workdir}', '--config.num_epochs=200', '--config.checkpoint_every=4']
  proc = _cli(None, *args, code=MAIN_WITH_SIGINT)
  assert _wait_for(proc, lambda: bool(_steps(workdir / 'checkpoints'))), 'the run ended before it was interrupted'
  proc.send_signal(signal.SIGINT)
  code, _, err = _finish(proc)
  code2, out2, err2 = _run('main', *args[:2], '--config.num_epochs=2', '--config.checkpoint_every=4')
  with fault('ctrl_c', code, err):
    assert code == 130, err[-2000:]
    assert [line for line in err.splitlines() if line.strip()] == [
        f'interrupted: {workdir} keeps its last checkpoint; the same command resumes from it'], err[-3000:]
    assert code2 == 0 and 'resuming from step' in out2, (out2[-1000:], err2[-2000:])


@pytest.mark.e2e
def test_ctrl_c_while_a_checkpoint_is_written_leaves_no_temporary_folder(tmp_path, fault):
  """SIGINT to a run that saves a checkpoint every step, and so is almost always inside a save, at three delays
  after its first: each ends in one line and exit 130, and leaves no temporary checkpoint folder (Orbax's, which
  a save cut short left, with now and then a traceback of its worker threads)."""
  results = []
  for k, delay in enumerate((0.3, 0.9, 1.7)):
    run = tmp_path / f'ctrl_c_saving{k}'
    proc = _cli(None, *TINY, f'--workdir={run}', '--config.num_epochs=400', '--config.checkpoint_every=1',
                code=MAIN_WITH_SIGINT)
    running = _wait_for(proc, lambda run=run: bool(_steps(run / 'checkpoints')))
    time.sleep(delay)
    proc.send_signal(signal.SIGINT)
    code, _, err = _finish(proc)
    left = sorted(str(p.relative_to(run)) for p in run.rglob('*') if p.name.endswith('orbax-checkpoint-tmp'))
    results.append((running, code, shown(err), left))
  with fault('ctrl_c_saving', results[0][1], lines=results[0][2]):
    for running, code, lines, left in results:
      assert running and code == 130, (code, lines)
      assert len(lines) == 1 and lines[0].startswith('interrupted: '), lines
      assert not left, left


# `python -m implicit_jax.tune` as a terminal starts it (MAIN_WITH_SIGINT), sent SIGINT 0.2 s into the first compile
# of a training step (jit(<lambda>), seconds for implicit CD; the tiny jit(<lambda>) that probes XLA's options, done
# before 0.2 s, is let pass) once the file named by $SIGINT_ONCE_EXISTS exists: Ctrl-C inside a compile, the moment
# that crashed the process at its exit (issue 65).
TUNE_SIGINT_IN_COMPILE = textwrap.dedent("""
    import os, signal, threading
    from jax import monitoring
    arm, timer, COMPILE = os.environ['SIGINT_ONCE_EXISTS'], [], '/jax/core/compile/backend_compile_duration'
    def started(event, value, fun_name=None, **_):
      if event == COMPILE and fun_name == 'jit(<lambda>)' and not timer and os.path.exists(arm):
        timer.append(threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGINT)))
        timer[0].start()
    def ended(event, seconds, **_):
      if event == COMPILE and timer and not timer[0].finished.is_set():
        timer.pop().cancel()
    monitoring.register_scalar_listener(started)
    monitoring.register_event_duration_secs_listener(ended)
    """) + MAIN_WITH_SIGINT.replace('implicit_jax.main', 'implicit_jax.tune')


@pytest.mark.e2e
def test_ctrl_c_during_a_tunes_trial_is_one_line_and_the_same_command_resumes(tmp_path, fault):
  """Ctrl-C during a tune's trial printed the right line, then 'Fatal Python error: Segmentation fault' and a thread
  dump, exit 139: the interrupt left an XLA compile running while the process ended (engine/interrupts.py). SIGINT
  while the first trial compiles its step, then (the same command) while the trial made again compiles its step:
  each one line and exit 130; the same command then ends the tune, the trial cut short made again. As a user's
  command runs: no compilation cache (a cached program is not compiled: no window) and XLA's own optimisation
  (under the suite's cheaper one the step compiles faster, often before the interrupted process ends, which the
  crash needed)."""
  workdir = tmp_path / 'tune'
  args = ['--config=configs/custom.py', f'--config.data.train_file={FIXTURES / "mlc" / "scaled.arff"}',
          '--config.log_every=1000', f'--workdir={workdir}', '--budget_minutes=30', '--max_trials=2']
  env = {k: v for k, v in full_opt_env(JAX_PLATFORMS='cpu').items()
         if not k.startswith(('JAX_COMPILATION_CACHE', 'JAX_PERSISTENT_CACHE'))}
  line = (f'interrupted: {workdir} keeps the finished trials and the last checkpoint of the one cut short; the same '
          'command resumes')
  armed = workdir / 'trials' / 'default' / 'config.json'
  runs = [_finish(_cli(None, *args, code=TUNE_SIGINT_IN_COMPILE, env=dict(env, SIGINT_ONCE_EXISTS=str(armed))))
          for _ in range(2)]
  (code, _, err), (code2, out2, err2) = runs
  code3, out3, err3 = _run('tune', *args, env=env)
  with fault('tune_ctrl_c_probe', code, err):
    assert code == 130 and shown(err) == [line], (code, err[-3000:])
  with fault('tune_ctrl_c_trial', code2, err2):
    assert code2 == 130 and shown(err2) == [line], (code2, err2[-3000:])
    assert '1 cut short by a kill, made again' in out2, out2[-2000:]
    assert code3 == 0, err3[-3000:]
    assert 'tune: resuming' in out3 and 'tune: chosen' in out3, out3[-2000:]
    plan = json.loads((workdir / 'tune.json').read_text())
    assert [t['killed'] for t in plan['trials']] == [True, True, False, False], plan['trials']
    assert {t['name'] for t in plan['trials'][:3]} == {'default'}


def test_ctrl_c_during_a_save_takes_effect_once_the_save_is_complete(tmp_path, monkeypatch):
  """Ctrl-C that came while Orbax wrote left its temporary folder (7 of 8 tries at a checkpoint per step) and, now
  and then, a 40-line traceback of its worker threads. The interrupt now waits for the save: here it arrives as
  the save starts, and the step is saved whole before KeyboardInterrupt is raised."""
  import flax.struct  # pylint: disable=import-outside-toplevel

  @flax.struct.dataclass
  class State:
    step: int
    params: dict

  host = checkpoints._host  # pylint: disable=protected-access

  def interrupted_host(tree):
    signal.raise_signal(signal.SIGINT)  # Python's default handler: KeyboardInterrupt at the next bytecode
    return host(tree)

  monkeypatch.setattr(checkpoints, '_host', interrupted_host)
  # Python's default handler, as a user's command has: a pytest-xdist worker may inherit SIGINT ignored (it then
  # did not raise, now and then, by the order tests ran in), and another test may leave its own.
  previous = signal.signal(signal.SIGINT, signal.default_int_handler)
  ckpt = checkpoints.Checkpointer(str(tmp_path))
  try:
    with pytest.raises(KeyboardInterrupt):
      ckpt.save(State(step=np.int32(3), params={'w': np.ones(4, np.float32)}), {'history': []})
    assert ckpt.latest_step() == 3
  finally:
    ckpt.close()
    signal.signal(signal.SIGINT, previous)
  assert not [p for p in tmp_path.rglob('*') if 'tmp' in p.name]


@pytest.mark.e2e
def test_a_record_of_a_newer_version_is_refused_untouched(reference, tmp_path, fault):
  """config.json holding a field this version does not know (a newer version's): resuming and ``evaluate`` are
  refused in one line naming the file and field, and the record is not rewritten without it."""
  workdir = _copy(reference[2], tmp_path / 'newer')
  record = json.loads((workdir / 'config.json').read_text())
  record['optimizer']['momentum_schedule'] = 'cosine'
  text = json.dumps(record)
  (workdir / 'config.json').write_text(text)
  code, _, err = _run('main', *TINY, f'--workdir={workdir}', '--config.num_epochs=3')
  code2, _, err2 = _run('evaluate', f'--workdir={workdir}')
  with fault('record_of_newer_version', code, lines=shown(err) + shown(err2)):
    want = (f'error: {workdir}/config.json holds fields this version of implicit_jax does not know '
            '(optimizer.momentum_schedule): a newer version wrote it, or it was edited; read or resume it with the '
            'version that wrote it')
    assert _one_error(code, err) == want and _one_error(code2, err2) == want
    assert (workdir / 'config.json').read_text() == text


@pytest.mark.e2e
def test_a_first_format_record_with_a_field_no_version_knew_is_refused_untouched(tmp_path, fault):
  """A run of the first record format (tests/fixtures/workdir_v1) given a top-level field no version had: it was
  evaluated, and resumed rewritten without it. Both are refused in one line naming the file and field."""
  workdir = _copy(FIXTURES / 'workdir_v1', tmp_path / 'v1')
  record = json.loads((workdir / 'config.json').read_text())
  record['momentum_schedule'] = 'cosine'
  text = json.dumps(record)
  (workdir / 'config.json').write_text(text)
  code, _, err = _run('main', *TINY, f'--workdir={workdir}', '--config.num_epochs=2', '--config.checkpoint_every=4')
  code2, _, err2 = _run('evaluate', f'--workdir={workdir}')
  with fault('first_format_unknown_field', code, lines=shown(err) + shown(err2)):
    want = (f'error: {workdir}/config.json holds fields this version of implicit_jax does not know '
            '(momentum_schedule): a newer version wrote it, or it was edited; read or resume it with the version '
            'that wrote it')
    assert _one_error(code, err) == want and _one_error(code2, err2) == want
    assert (workdir / 'config.json').read_text() == text and _steps(workdir / 'checkpoints') == [8]


@pytest.mark.e2e
def test_evaluate_on_a_config_that_builds_another_network_does_not_call_the_checkpoint_unreadable(tiny_run, tmp_path,
                                                                                                   fault):
  """config.json given a layer more after the run (or another method): evaluate called the intact best-on-dev
  checkpoint 'unreadable', tried the one before it and failed. Now one error names the array that differs and the
  config, and the checkpoint stays where it is."""
  workdir = _copy(tiny_run[0], tmp_path / 'edited_config')  # a finished run of configs/tiny.py
  path = workdir / 'config.json'
  record = json.loads(path.read_text())
  best = sorted(p.name for p in (workdir / 'best').iterdir())
  for field, value, named in (('energy_feature_hidden', [16, 16], 'the model built now has phi.params.MLP_0.Dense_2'),
                              ('linear_skip', True, 'the model built now has theta.params.linear')):
    edited = json.loads(json.dumps(record))
    edited['model'][field] = value
    path.write_text(json.dumps(edited))
    code, _, err = _run('evaluate', f'--workdir={workdir}')
    recorded = field == 'energy_feature_hidden'  # the case of the page; the other as it is
    with fault('config_of_another_network', code, err) if recorded else contextlib.nullcontext():
      assert re.fullmatch(rf'error: the best-on-dev parameters in {workdir}/best/\d+ do not fit the model built from '
                          rf'the data and config read now \(.*{re.escape(named)}.*\): .*config\.json was changed.*',
                          _one_error(code, err))
      assert sorted(p.name for p in (workdir / 'best').iterdir()) == best and not (workdir / 'corrupt').exists()


@pytest.mark.e2e
def test_a_run_records_its_config_file_and_every_override(tmp_path, fault):
  """A row of a config file run with another method and learning rate: config.json records the config file and
  every override, the command that makes the run again."""
  run = tmp_path / 'row_and_override'
  given = ['--config.method=feedforward', '--config.optimizer.learning_rate=0.02']
  code, _, err = _run('main', *TINY, f'--workdir={run}', *given)
  with fault('overrides_recorded', code, err):
    assert code == 0, err[-2000:]
    record = json.loads((run / 'config.json').read_text())
    assert record['config_file'] == 'configs/tiny.py' and record['overrides'] == given
    assert record['method'] == 'feedforward' and record['optimizer']['learning_rate'] == 0.02


@pytest.mark.e2e
def test_rescore_given_a_file_as_data_dir_is_one_line(fault):
  record = ROOT / 'docs' / 'tagging' / 'runs' / 'pos-crf-seed0.json'
  code, _, err = _run('experiments.rescore', record, f'--data_dir={ROOT / "README.md"}')
  with fault('rescore_bad_data_dir', code, err):
    assert _one_error(code, err) == (f'error: --data_dir {ROOT / "README.md"}: not a folder (the folder holding the '
                                     "datasets' folders)")


@pytest.mark.e2e
def test_rescore_given_a_runs_config_names_it_and_the_record_to_give(reference, fault):
  """A workdir's config.json given to experiments/rescore.py was 'no predictions (made before records kept
  them)'."""
  workdir = reference[2]
  code, out, err = _run('experiments.rescore', workdir / 'config.json')
  with fault('rescore_run_config', code, lines=shown(out) + shown(err)):
    assert code == 1 and not shown(err), err[-2000:]
    assert shown(out) == [f"{workdir}/config.json: failed: a run's config (what the run was given), not a run "
                          f"record: give {workdir}/metrics.json, the run's record",
                          '0 record(s) rescored, 0 matching; 0 without predictions; 1 failing']


@pytest.mark.e2e
def test_claims_with_a_truncated_record_names_the_file(tmp_path, fault):
  """experiments/claims.py, on a copy of the checkout where one record of its first claim is cut short: it named the
  claim and json's line and column, not the file."""
  copy = tmp_path / 'repo'
  for folder in ('configs', 'experiments', 'docs'):
    shutil.copytree(ROOT / folder, copy / folder, ignore=shutil.ignore_patterns('__pycache__'))
  cut = copy / 'docs' / 'mlc' / 'runs' / 'bibtex-mbce-h400-seed0.json'
  cut.write_text(cut.read_text()[:100])
  ledger = (copy / 'docs' / 'results.md').read_text()
  env = dict(os.environ, JAX_PLATFORMS='cpu', PYTHONPATH=str(ROOT))
  proc = subprocess.run([sys.executable, '-m', 'experiments.claims', f'--data_dir={tmp_path}'], cwd=copy,
                        capture_output=True, text=True, timeout=300, env=env, check=False)
  with fault('claims_truncated_record', proc.returncode, proc.stderr):
    assert proc.returncode == 1 and len(shown(proc.stderr)) == 1, proc.stderr[-2000:]
    assert shown(proc.stderr)[0].startswith(f'implicit T1 bibtex implicit-cd-h400 over mbce-h400: {cut}: not valid '
                                            'JSON (truncated?): ')
    assert shown(proc.stderr)[0].endswith('; the ledger is not rewritten')
    assert (copy / 'docs' / 'results.md').read_text() == ledger


@pytest.mark.e2e
def test_a_typo_in_a_scripts_list_flag_is_refused_before_any_work(fault):
  """A typo in a list flag of the experiments' scripts ran nothing and rebuilt the table (exit 0), or ended in
  'invalid literal for int()'; --threshold of predict was read after the run. Each is refused by the flag parser,
  naming the flag (tests/test_command_flags.py tries every such flag of every command)."""
  tried = [('experiments.compare_methods', '--datasets=genbas', "argument --datasets: unknown 'genbas'; choose from "
            'bibtex, delicious, genbase, cal500, spo_fun'),
           ('experiments.ablation_mlc', '--rows=nonesuch', "argument --rows: unknown 'nonesuch'; choose from mbce,"),
           ('experiments.reproduce_tagging', '--seeds=0,x', "argument --seeds: a comma-separated list of integers, "
            "got '0,x'")]
  runs = [_run(module, flag, '--data_dir=no/such/folder') for module, flag, _ in tried]
  runs.append(_run('predict', '--workdir=no/such/run', '--input=x.npy', '--threshold=O.5'))
  lines = [shown(err)[-1] if shown(err) else '' for _, _, err in runs]
  with fault('script_flag_typo', ', '.join(str(code) for code, _, _ in runs), lines=lines):
    assert [code for code, _, _ in runs] == [2] * 4, lines
    for line, (module, _, message) in zip(lines, tried):
      assert line.startswith(f'{module.split(".")[1]}.py: error: {message}'), line
    assert lines[3] == 'error: flag --threshold=O.5: --threshold: "tuned" or a number in (0, 1)'


def test_a_save_whose_collective_loses_the_other_process_is_not_called_a_disk_failure(tmp_path, monkeypatch):
  """Another process of a multi-host run killed while this one saved: Orbax's collective fails with a ValueError
  naming Gloo's socket. It was reported as a failed write ('fix that and rerun'); it goes on as the lost process it
  is, which main's one line names. A write that fails, or a settings error naming the heartbeat, stays what it is."""
  # Two processes, as multihost sees it (Orbax, which reads the count too, stays on this one)
  monkeypatch.setattr(multihost, 'jax', types.SimpleNamespace(process_count=lambda: 2, errors=jax.errors))
  ckpt = checkpoints.Checkpointer(str(tmp_path))
  lost = ValueError('UNKNOWN: Gloo AllGather failed: [pair.cc:538] Read error [127.0.0.1]:64218: Connection reset '
                    'by peer')
  assert multihost.lost_peer(lost)
  assert not multihost.lost_peer(ValueError('--heartbeat_timeout=0: give a positive number of seconds'))
  assert not multihost.lost_peer(OSError(28, 'No space left on device'))
  try:
    with pytest.raises(ValueError, match='Gloo AllGather failed'):
      with ckpt._writing('best-on-dev parameters at step 24'):  # pylint: disable=protected-access
        raise lost
    with pytest.raises(OSError, match='step 24 failed'):
      with ckpt._writing('best-on-dev parameters at step 24'):  # pylint: disable=protected-access
        raise ValueError('tensorstore: write failed')
  finally:
    ckpt.close()


# ------------------------------------------------------------------------------------------ the processes of a run


def _free_port() -> int:
  with socket.socket() as s:
    s.bind(('localhost', 0))
    return s.getsockname()[1]


def _served(port: int) -> bool:
  with socket.socket() as s:
    return s.connect_ex(('localhost', port)) == 0


def _distributed(port, process_id, *args, cwd=ROOT):
  """One process of a two-process ``--distributed`` run on this machine (a coordinator on localhost, Gloo)."""
  cmd = [sys.executable, '-m', 'implicit_jax.main', '--distributed', f'--coordinator_address=localhost:{port}',
         '--num_processes=2', f'--process_id={process_id}', '--heartbeat_timeout=10', *map(str, args)]
  return subprocess.Popen(cmd, cwd=cwd, env=dict(os.environ, JAX_PLATFORMS='cpu', PYTHONPATH=str(ROOT)),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _stderr_of(proc, timeout=300) -> list[str]:
  try:
    return shown(proc.communicate(timeout=timeout)[1])
  except subprocess.TimeoutExpired:
    proc.kill()
    return shown(proc.communicate()[1]) + [f'(hung: killed after {timeout} s)']


@pytest.mark.e2e
@pytest.mark.parametrize('key', ['processes_learning_rate', 'processes_seed', 'processes_num_epochs',
                                 'processes_workdir', 'processes_data'])
def test_processes_of_a_run_that_disagree_stop_before_training(tmp_path, fault, key):
  """Two processes of a ``--distributed`` run given different settings (a learning rate, a seed, a number of
  epochs, a workdir) or reading different copies of the data: both stop before training, each with one line
  naming what differs; nothing is written. (Before the check: another learning rate trained a silently wrong run,
  another seed failed in a traceback, other epochs hung in the last collective.)"""
  work, args, cwds = tmp_path / 'work', [*TINY], (ROOT, ROOT)
  same = 'give every process the same command (config, overrides and --workdir)'
  each, named = {
      'processes_learning_rate': (((), ('--config.optimizer.learning_rate=0.5',)),
                                  f'config.optimizer.learning_rate (process 0: 0.01, process 1: 0.5); {same}'),
      'processes_seed': (((), ('--config.seed=1',)), f'config.seed (process 0: 0, process 1: 1); {same}'),
      'processes_num_epochs': (((), ('--config.num_epochs=3',)),
                               f'config.num_epochs (process 0: 2, process 1: 3); {same}'),
      'processes_workdir': (((), (f'--workdir={tmp_path / "other"}',)),
                            f'--workdir (process 0: {work}, process 1: {tmp_path / "other"}); {same}'),
      'processes_data': (((), ()), None),
  }[key]
  if key == 'processes_data':  # the same command in two folders whose rows.arff differ in one value
    rng = np.random.default_rng(0)
    x, y = rng.integers(0, 2, (60, 8)), rng.integers(0, 2, (60, 3))
    cwds = (tmp_path / 'host0', tmp_path / 'host1')
    for host in cwds:
      host.mkdir()
      _custom_data(host / 'rows.arff', x, y)
      x[5, 2] = 1 - x[5, 2]
    args = [f'--config={ROOT}/configs/custom.py', '--config.data.train_file=rows.arff',
            '--config.data.protocol=resplit', '--config.method=feedforward', '--config.batch_size=12',
            '--config.eval_batch_size=12']
  port = _free_port()
  procs = [_distributed(port, i, *args, f'--workdir={work}', *each[i], cwd=cwds[i]) for i in range(2)]
  errs = [_stderr_of(p) for p in procs]
  codes = [p.returncode for p in procs]
  with fault(key, ', '.join(map(str, codes)), lines=errs[0] + errs[1]):
    assert codes == [1, 1] and [len(e) for e in errs] == [1, 1], (codes, errs)
    for i, (line,) in enumerate(errs):
      prefix = f'error: process {i} of 2: the processes of this run disagree: '
      if named:
        assert line == prefix + named
      else:
        assert re.fullmatch(re.escape(prefix) + r'data train\.x \(process 0: [0-9a-f]+, process 1: [0-9a-f]+\); every '
                            r'host must read the same data \(rows\.arff\): copy it from one host to the others', line)
    assert not work.exists()


@pytest.mark.e2e
def test_two_processes_given_process_id_0_are_named(tmp_path, fault):
  """The second process given --process_id=0 is refused at once, naming the port its coordinator could not take;
  the first stops at --initialization_timeout, naming what each process needs."""
  port, work = _free_port(), tmp_path / 'same_id'
  args = [*TINY, f'--workdir={work}', '--initialization_timeout=10']
  first = _distributed(port, 0, *args)
  deadline = time.time() + 300
  while first.poll() is None and not _served(port) and time.time() < deadline:
    time.sleep(0.1)
  second = _distributed(port, 0, *args)
  second_err, first_err = _stderr_of(second), _stderr_of(first)
  codes = [first.returncode, second.returncode]
  with fault('processes_same_id', f'{codes[0]}, {codes[1]}', lines=first_err + second_err):
    assert codes == [1, 1] and [len(first_err), len(second_err)] == [1, 1], (codes, first_err, second_err)
    assert second_err[0].startswith(f'error: --coordinator_address localhost:{port} is already in use, before this '
                                    'process (--process_id=0) started the run\'s coordinator there')
    assert first_err[0].startswith(f'error: process 0 of 2: the processes of the run did not all join at '
                                   f'localhost:{port} within 10 s (--initialization_timeout)')
    assert not work.exists()


# ------------------------------------------------------------------------------------------ plug-ins (issue 44)

PLUGINS = 'faults_plugins'
# A package of plug-ins that break the contract, on the subprocess's PYTHONPATH: tests/test_plugins.py's multi-class
# task (config.data.variant breaks one part of the task contract at a time), its method whose predict keeps 7 of the
# 10 classes, and its solvers that return NaN or a non-numeric iteration count; and a config of the task.
PLUGIN_FILES = {
    '__init__.py': '',
    **{name: textwrap.dedent(plugin_fixtures.FILES[name]) for name in ('multiclass.py', 'seven.py', 'solver.py')},
    'config.py': f'''
from implicit_jax.engine import config as config_lib
def get_config():
  c = config_lib.base_config('{PLUGINS}.multiclass', 'feedforward')
  c.batch_size = c.eval_batch_size = 16
  c.num_epochs = 1
  return c
''',
}


@pytest.fixture(scope='module')
def plugins(tmp_path_factory):
  """The environment with the plug-in package on PYTHONPATH, and the arguments of its multi-class task's config."""
  root = tmp_path_factory.mktemp('plugins')
  (root / PLUGINS).mkdir()
  for name, text in PLUGIN_FILES.items():
    (root / PLUGINS / name).write_text(text)
  path = os.pathsep.join(p for p in (str(root), os.environ.get('PYTHONPATH', '')) if p)
  return dict(os.environ, JAX_PLATFORMS='cpu', PYTHONPATH=path), [f'--config={root / PLUGINS / "config.py"}'], root


BREAKING_PLUGINS = {
    'plugin_labels_outside': ('--config.data.variant=shifted',
                              "error: task multiclass: the train split's y holds values outside the 10 classes of the "
                              'multiclass output space: 10, 11, 12, 13, 14 (first at index (1,)); store class ids '
                              '0..9'),
    'plugin_one_hot': ('--config.data.variant=one_hot',
                       "error: task multiclass: the train split's y has shape (96, 10); the multiclass output space "
                       'wants (96,), class ids (one-hot rows? store np.argmax(y, axis=-1))'),
    'plugin_make_task_none': ('--config.data.variant=none',
                              f"error: config.task: make_task of '{PLUGINS}.multiclass' returned None, not an "
                              'implicit_jax.tasks.Task'),
    'plugin_net_width': ('--config.model.outputs=7',
                         "error: task multiclass: make_inference_net()'s output has shape (1, 7); the multiclass "
                         'output space wants (1, 10)'),
    'plugin_predict_width': (f'--config.method={PLUGINS}.seven',
                             f"error: config.method: '{PLUGINS}.seven': predict(params, batch) returned shape (1, 7); "
                             'the multiclass output space wants (1, 10)'),
    'plugin_make_task_field': ('--config.data.variant=misread',
                               f"error: config.task: make_task of '{PLUGINS}.multiclass' reads config.model.output at "
                               f'$ROOT/{PLUGINS}/multiclass.py:'
                               f"{plugin_fixtures.line_of('multiclass.py', 'model.output ')}, a field the config does "
                               "not have: declare it in the task's default_config() or "
                               'correct the name (Did you mean "outputs" instead of "output"?)'),
}


@pytest.mark.e2e
@pytest.mark.parametrize('key', BREAKING_PLUGINS)
def test_a_plugin_that_breaks_the_contract_is_refused_before_training(plugins, tmp_path, fault, key):
  """A plug-in task whose labels fall outside its space, or are one-hot where it wants class ids, whose make_task
  returns None, reads a config field its defaults lack, or whose inference net has the wrong width; a plug-in method
  whose predict misses classes: one line naming the plug-in, the cause and the fix, before the workdir is made."""
  env, config, root = plugins
  flag, message = BREAKING_PLUGINS[key]
  workdir = tmp_path / 'run'
  code, _, err = _run('main', *config, f'--workdir={workdir}', flag, env=env)
  with fault(key, code, err):
    assert _one_error(code, err).startswith(message.replace('$ROOT', str(root)))
    assert not workdir.exists()


@pytest.mark.e2e
@pytest.mark.parametrize('key', ['plugin_nan_metric', 'plugin_solver_nan', 'plugin_solver_info',
                                 'plugin_solver_branch'])
def test_a_plugin_that_fails_while_training_is_one_line(plugins, tmp_path, fault, key):
  """A plug-in evaluator whose select metric is NaN, a plug-in solver returning a NaN u or a word for a count, or
  branching in Python on a traced value: one line naming the plug-in and the value or its line, where it shows (the
  first evaluation, the first log, the first trace)."""
  env, config, root = plugins
  workdir = tmp_path / 'run'
  args, wanted = {
      'plugin_nan_metric': ([*config, '--config.data.variant=nan_metric'],
                            "error: task multiclass: NaNAccuracy.metrics() gave the dev 'accuracy' nan at epoch 1; its "
                            'select metric picks the best epoch and must be a finite number'),
      'plugin_solver_nan': ([*TINY, '--config.log_every=1', f'--config.implicit.solver.name={PLUGINS}.solver.nan_u'],
                            f"the implicit term comes from the inverse-HVP solver implicit.solver.name='{PLUGINS}."
                            "solver.nan_u', non-finite at step 1 while the losses were finite"),
      'plugin_solver_info': ([*TINY, f'--config.implicit.solver.name={PLUGINS}.solver.words'],
                             f"error: implicit.solver.name: '{PLUGINS}.solver.words' returned info['iterations'] = "
                             "'many', a str, not a number"),
      'plugin_solver_branch': ([*TINY, f'--config.implicit.solver.name={PLUGINS}.solver.branches'],
                               f"error: implicit.solver.name: '{PLUGINS}.solver.branches' branches in Python on a "
                               f"traced value at {root / PLUGINS / 'solver.py'}:"
                               f"{plugin_fixtures.line_of('solver.py', 'if jnp.linalg.norm')} (if jnp.linalg.norm("
                               'ravel_pytree(v)[0]) > 0:); it runs inside jax.jit: use jnp.where or jax.lax.cond'),
  }[key]
  code, _, err = _run('main', *args, f'--workdir={workdir}', env=env)
  with fault(key, code, err):
    line = _one_error(code, err)
    if key == 'plugin_solver_nan':  # stopped at the first log, naming the quantity, the step and the checkpoint
      assert line.startswith('error: non-finite ') and ' in the 1 steps up to step 1; training stopped' in line
      assert wanted in line
    else:
      assert line.startswith(wanted)
    assert not (workdir / 'metrics.json').exists()
