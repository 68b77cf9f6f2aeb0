"""Bad input and faults, as a user meets them: nothing lost, nothing silently wrong, one line where one will do.

One test per fault (``docs/faults.md`` is the table of what a user sees, made by ``experiments/faults.py``):
two trainers on one workdir, a reader beside a live trainer, data changed under a run, a shorter resume, a
diverging run, a damaged checkpoint or metrics log, a failed start, and the command lines' one-line errors.
Prediction inputs (column order, names) are checked in ``test_predict.py``, ARFF contents in ``test_arff.py``.
"""

import errno
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import types

import jax
import numpy as np
import pytest

from implicit_jax import evaluate
from implicit_jax.engine import checkpoints, multihost, train, workdir as workdir_lib, writers
from implicit_jax.testing import MAIN_WITH_SIGINT
from tests.conftest import ROOT, load_config


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


def _cli(module, *args, code=None):
  """A command line started in the background: ``python -m implicit_jax.<module>`` (or ``-c code``)."""
  cmd = [sys.executable, *(['-c', code] if code else ['-m', f'implicit_jax.{module}']), *args]
  return subprocess.Popen(cmd, cwd=ROOT, env=dict(os.environ, JAX_PLATFORMS='cpu'), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True)


def _finish(proc, timeout=300):
  out, err = proc.communicate(timeout=timeout)
  return proc.returncode, out, err


@pytest.fixture(scope='module')
def reference(tmp_path_factory):
  """Uninterrupted tiny runs of 2 and 3 epochs (a checkpoint every 4 steps, 8 steps an epoch)."""
  out = {}
  for epochs in (2, 3):
    path = tmp_path_factory.mktemp(f'reference{epochs}')
    train.train_and_evaluate(_tiny(num_epochs=epochs, checkpoint_every=4), str(path))
    out[epochs] = path
  return out


# ------------------------------------------------------------------------------------------ the workdir


@pytest.mark.e2e
def test_second_trainer_is_refused_and_readers_do_not_disturb_the_first(tmp_path):
  """A trainer runs in a subprocess. Meanwhile a second trainer on its workdir is refused, naming the holder's
  process id, and ``evaluate`` reads the workdir again and again. The first run then ends exactly as the same run
  undisturbed: its metrics, history and metrics.jsonl."""
  busy, clean = tmp_path / 'busy', tmp_path / 'clean'
  epochs = 30
  first = _cli('main', '--config=configs/tiny.py', f'--workdir={busy}', f'--config.num_epochs={epochs}')
  deadline = time.time() + 240
  while time.time() < deadline and first.poll() is None and not (busy / 'best').is_dir():
    time.sleep(0.05)
  while (time.time() < deadline and first.poll() is None and
         not any(d.name.isdigit() for d in (busy / 'best').iterdir())):
    time.sleep(0.05)  # the first best-on-dev parameters are committed: readers have something to read
  assert first.poll() is None, 'the first run ended before the second started'
  with pytest.raises(workdir_lib.WorkdirBusy, match=rf'in use by another training run \(process {first.pid} '):
    train.train_and_evaluate(_tiny(num_epochs=epochs), str(busy))
  reads = 0
  while first.poll() is None:
    scores = evaluate.evaluate_run(str(busy), ('dev',))
    assert 0 <= scores['dev']['at_0.5']['example_f1'] <= 1
    reads += 1
  code, _, err = _finish(first)
  assert code == 0, err[-2000:]
  assert reads >= 2, reads  # the reader ran beside the trainer more than once

  train.train_and_evaluate(_tiny(num_epochs=epochs), str(clean))
  a, b = (json.loads((d / 'metrics.json').read_text()) for d in (busy, clean))
  assert _comparable(a) == _comparable(b)
  assert (busy / 'metrics.jsonl').read_text() == (clean / 'metrics.jsonl').read_text()


def test_deleting_the_lock_file_does_not_admit_a_second_trainer(tmp_path):
  """``workdir/lock`` looks stale in a finished workdir and may be deleted while a run trains: the lock is held on
  the folder, so a second trainer is still refused in one line naming the workdir and the holder (this process,
  which holds the lock here; a second open of the folder is a separate lock, as another process's would be)."""
  workdir = tmp_path / 'run'
  workdir_lib.prepare(str(workdir))
  with workdir_lib.Lock(str(workdir)):
    assert (workdir / 'lock').read_text().startswith(f'{os.getpid()} on ')
    (workdir / 'lock').unlink()
    holder = str(os.getpid()) if os.path.exists('/proc/locks') else 'unknown'  # the kernel's table names it
    with pytest.raises(workdir_lib.WorkdirBusy, match=rf'^{workdir} is in use by another training run \(process '
                       rf'{holder}\); wait for it to end, or give another --workdir$'):
      train.train_and_evaluate(_tiny(), str(workdir))
  assert not (workdir / 'lock').exists()  # the record goes with the run that wrote it
  with workdir_lib.Lock(str(workdir)):  # released: the next trainer gets it
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
def test_a_failed_start_writes_nothing_and_leaves_no_record_in_the_way(tmp_path):
  workdir = tmp_path / 'run'
  with pytest.raises(ValueError, match='num_devices=5'):
    train.train_and_evaluate(_tiny(num_devices=5), str(workdir))  # one CPU device here
  assert not workdir.exists()  # validated before the workdir was touched
  # A record left by a start that failed later (no checkpoint saved) does not block the corrected command.
  workdir.mkdir()
  (workdir / 'config.json').write_text(json.dumps({**json.loads(json.dumps(_tiny().to_dict())), 'seed': 7}))
  result = train.train_and_evaluate(_tiny(), str(workdir))
  assert json.loads((workdir / 'config.json').read_text())['seed'] == 0 and result['steps'] == 16


@pytest.mark.parametrize('field,value,message', [
    ('seed', -1, r'config\.seed must be an integer in \[0, 2\*\*63\), got -1'),  # was numpy's 'expected
    # non-negative integer', from the training loop, after the workdir's files were written
    ('data__num_train', 0, r'config\.data\.num_train must be a positive integer, got 0'),  # was a reshape message
])
def test_an_out_of_range_field_is_named_before_anything_is_written(tmp_path, field, value, message):
  with pytest.raises(ValueError, match=rf'^{message}$'):
    train.train_and_evaluate(_tiny(**{field: value}), str(tmp_path / 'run'))
  assert not (tmp_path / 'run').exists()


def test_a_folder_of_the_users_own_files_is_refused_untouched(tmp_path):
  """A --workdir holding the user's own config.json, metrics.json and data.json (not a run's records) is refused
  in one line naming them, before anything is written; so is a folder of other files, and ``/``."""
  mine = tmp_path / 'mine'
  mine.mkdir()
  files = {'config.json': '{"lr": 0.1}', 'metrics.json': '{"accuracy": 0.9}', 'data.json': '[1, 2, 3]'}
  for name, text in files.items():
    (mine / name).write_text(text)
  with pytest.raises(ValueError, match=rf'--workdir {mine} holds files a training run did not write \(config.json, '
                     r'data.json, metrics.json\); nothing was changed'):
    train.train_and_evaluate(_tiny(), str(mine))
  assert sorted(p.name for p in mine.iterdir()) == sorted(files)
  assert all((mine / name).read_text() == text for name, text in files.items())
  with pytest.raises(ValueError, match=r'--workdir / holds files a training run did not write'):
    workdir_lib.prepare('/')
  # A run's own workdir, and one whose start failed after its lock, still pass.
  (tmp_path / 'started').mkdir()
  (tmp_path / 'started' / 'lock').write_text('')
  workdir_lib.prepare(str(tmp_path / 'started'))


@pytest.mark.e2e
def test_resuming_on_changed_data_is_refused_naming_the_files(tmp_path):
  """A custom dataset whose file changes at the same path between two runs of one workdir."""
  rng = np.random.default_rng(0)
  x, y = rng.integers(0, 2, (60, 8)), rng.integers(0, 2, (60, 3))
  path = tmp_path / 'data.arff'

  def write(x):
    names = [f'f{j}' for j in range(8)] + [f'l{j}' for j in range(3)]
    rows = [','.join(map(str, r)) for r in np.concatenate([x, y], axis=1)]
    path.write_text('@relation r -C -3\n' + ''.join(f'@attribute {n} {{0,1}}\n' for n in names) + '@data\n' +
                    '\n'.join(rows) + '\n')

  config = load_config('bibtex')
  config.data.update(name='custom', train_file=str(path), protocol='resplit')
  config.model.update(inference_hidden=(8,), energy_feature_hidden=(8,), energy_feature_dim=8, global_hidden=2)
  config.update(num_epochs=1, batch_size=12, eval_batch_size=12)
  config.implicit.update(inner_steps=1)
  write(x)
  train.train_and_evaluate(config, str(tmp_path / 'run'))
  x[5, 2] = 1 - x[5, 2]
  write(x)
  config.num_epochs = 2
  with pytest.raises(ValueError, match=rf'trained on other data: .*differ.*{path}'):
    train.train_and_evaluate(config, str(tmp_path / 'run'))


@pytest.mark.e2e
def test_a_shorter_resume_is_refused_and_keeps_the_record(reference, tmp_path):
  workdir = tmp_path / 'run'
  shutil.copytree(reference[3], workdir)
  before = (workdir / 'metrics.json').read_text()
  with pytest.raises(ValueError, match=r'trained to step 24 \(epoch 3\); config.num_epochs=2 ends at step 16'):
    train.train_and_evaluate(_tiny(num_epochs=2, checkpoint_every=4), str(workdir))
  assert (workdir / 'metrics.json').read_text() == before
  assert json.loads((workdir / 'config.json').read_text())['num_epochs'] == 3


@pytest.mark.e2e
def test_an_extension_killed_part_way_never_pairs_the_old_threshold_with_new_parameters(reference, tmp_path,
                                                                                         monkeypatch, capsys):
  """A finished 2-epoch run (best epoch 1) extended to 6 epochs and killed once it saved a best epoch of its own:
  its metrics.json held the old best epoch and threshold, and ``evaluate`` applied that threshold to the new
  parameters. Now the old result is moved aside when the extension starts, and a stale metrics.json left in place
  (by older code) is refused for parameters of another step; the threshold is chosen on dev for those read."""
  workdir = tmp_path / 'run'
  shutil.copytree(reference[2], workdir)
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
  assert f'moved to {workdir / "metrics.previous.json"}' in capsys.readouterr().out
  assert not (workdir / 'metrics.json').exists() and (workdir / 'metrics.previous.json').read_text() == old_text

  run = checkpoints.load_trained(str(workdir))
  dev = run.task.splits['dev']
  chosen_now = run.task.evaluator.calibrate(run.predict(dev), dev)['threshold']
  assert chosen_now != old['threshold'], 'the case needs a new best whose threshold differs'
  assert evaluate.evaluate_run(str(workdir))['test']['threshold'] == chosen_now

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
def test_evaluate_on_grown_data_names_the_data_not_damaged_checkpoints(tmp_path, capsys):
  """A Cora run evaluated with a data folder that gained references: the vocabulary grew, the model built from it
  no longer fits the saved parameters, and every intact checkpoint was called unreadable. ``evaluate`` now checks
  the data's fingerprint first and names the splits and the file; a reader that does not (``load_trained``, as
  predict and notebooks use it) says the parameters do not fit data of another vocabulary, and sets nothing aside."""
  from tests.test_citations import FIXTURE, fixture_config  # pylint: disable=import-outside-toplevel
  config = fixture_config('feedforward', unlabeled=False)
  config.num_epochs = 1
  run = tmp_path / 'run'
  train.train_and_evaluate(config, str(run))
  text = (FIXTURE / 'cora_citation' / 'tagged_references.txt').read_text()
  refs = text[text.index('<ref>'):text.rindex('</data>')]
  grown = tmp_path / 'grown' / 'cora_citation' / 'tagged_references.txt'
  grown.parent.mkdir(parents=True)
  grown.write_text(text.replace('</data>', refs.replace('Chen', 'Zorblax') + '</data>'))
  capsys.readouterr()
  with pytest.raises(ValueError, match=rf'^workdir {run} was trained on other data: the train, dev, test splits read '
                     rf'now from {grown} differ from the run\'s record \({run}/data.json: train\.'):
    evaluate.evaluate_run(str(run), data_dir=str(tmp_path / 'grown'))
  with pytest.raises(ValueError, match=rf'^the best-on-dev parameters in {run}/best/\d+ do not fit the model built '
                     r'from the data and config read now \(theta\.params\.encoder\.embed\.embedding: '
                     r'saved \((\d+), 50\), now \((?!\1)\d+, 50\)\): the data differ'):
    checkpoints.load_trained(str(run), {'data.data_dir': str(tmp_path / 'grown')})
  assert 'unreadable' not in capsys.readouterr().err
  assert checkpoints.load_trained(str(run)).params is not None  # nothing was set aside


# ------------------------------------------------------------------------------------------ divergence


@pytest.mark.parametrize('fields,quantity,limit', [
    ({'optimizer__learning_rate': 1e3}, 'loss_aux', 'max_loss=1e+06'),
    ({'implicit__solver__name': 'neumann', 'implicit__solver__alpha': 2.0, 'implicit__solver__iterations': 10},
     'residual', 'max_residual=1000'),
])
@pytest.mark.e2e
def test_a_diverging_run_stops_naming_quantity_step_and_checkpoint(tmp_path, fields, quantity, limit):
  config = _tiny(log_every=1, checkpoint_every=1, **fields)
  with pytest.raises(FloatingPointError, match=rf'{quantity} diverged: .* up to step \d+\) exceeds '
                                               rf'config.divergence.{re.escape(limit)}; training stopped, last good '
                                               r'checkpoint: (step \d+|none saved yet)'):
    train.train_and_evaluate(config, str(tmp_path / 'run'))
  config.divergence.update(max_loss=0, max_residual=0)  # the checks off: the same run goes on (until NaN, maybe)
  config.num_epochs = 1
  try:
    train.train_and_evaluate(config, str(tmp_path / 'off'))
  except FloatingPointError as e:
    assert 'non-finite' in str(e)


# ------------------------------------------------------------------------------------------ damage


@pytest.mark.e2e
def test_a_torn_last_metrics_line_is_dropped_with_a_warning(reference, tmp_path, capsys):
  workdir = tmp_path / 'run'
  shutil.copytree(reference[2], workdir)
  with open(workdir / 'metrics.jsonl', 'a') as f:
    f.write('{"step": 17, "train/loss_a')  # the process died while writing this line
  train.train_and_evaluate(_tiny(num_epochs=3, checkpoint_every=4), str(workdir))
  assert f'{workdir / "metrics.jsonl"}:' in capsys.readouterr().err.split('dropped a torn last line')[0]
  assert (workdir / 'metrics.jsonl').read_text() == (reference[3] / 'metrics.jsonl').read_text()


def test_a_torn_line_before_the_last_is_an_error_naming_it(tmp_path):
  path = tmp_path / 'metrics.jsonl'
  path.write_text('{"step": 1, "a": 1}\n{"step": 2, "a\n{"step": 3, "a": 3}\n')
  with pytest.raises(ValueError, match=rf'{path}:2: not a metrics record'):
    writers.read_metrics(str(path))
  path.write_text('{"step": 1, "a": 1}\n{"step": 2, "a')
  assert writers.read_metrics(str(path)) == [{'step': 1, 'a': 1}]


@pytest.mark.e2e
def test_a_damaged_latest_checkpoint_falls_back_to_the_previous_one(reference, tmp_path, capsys):
  """The latest checkpoint's files are emptied; resuming warns naming it, moves it aside, continues from the
  one before and ends exactly as the uninterrupted run. ``load_trained`` falls back the same way for the best
  parameters."""
  workdir = tmp_path / 'run'
  shutil.copytree(reference[2], workdir)
  latest = workdir / 'checkpoints' / '16'
  for f in latest.rglob('*'):
    if f.is_file():
      f.write_bytes(b'')
  partial = workdir / 'checkpoints' / '20.orbax-checkpoint-tmp-1700000000'  # a save cut short by a kill
  (partial / 'state').mkdir(parents=True)
  result = train.train_and_evaluate(_tiny(num_epochs=3, checkpoint_every=4), str(workdir))
  assert not partial.exists()
  err = capsys.readouterr().err
  assert f'checkpoint {latest} is unreadable' in err and 'using the one before it' in err
  assert (workdir / 'corrupt' / 'checkpoints-16').is_dir()
  assert _comparable(result) == _comparable(json.loads((reference[3] / 'metrics.json').read_text()))

  reader = tmp_path / 'reader'
  shutil.copytree(reference[3], reader)
  best = sorted((reader / 'best').iterdir(), key=lambda d: int(d.name))
  assert len(best) == 2
  for f in best[-1].rglob('*'):
    if f.is_file():
      f.write_bytes(b'')
  run = checkpoints.load_trained(str(reader))  # read-only: warns, uses the earlier best, moves nothing
  assert f'checkpoint {best[-1]} is unreadable' in capsys.readouterr().err
  assert best[-1].is_dir()
  assert run.predict(run.task.splits['dev']).shape == run.task.splits['dev']['y'].shape


@pytest.mark.e2e
def test_a_checkpoint_whose_loop_record_is_empty_is_set_aside_like_a_damaged_one(reference, tmp_path, capsys):
  """The latest checkpoint's loop record reads ``{}`` (was: KeyError 'train_seconds'). Defaults would lose the
  history and the best epoch so far, so it is damage: warned, set aside, the one before used, and the run ends as
  the uninterrupted one."""
  workdir = tmp_path / 'run'
  shutil.copytree(reference[2], workdir)
  (workdir / 'checkpoints' / '16' / 'loop' / 'metadata').write_text('{}')
  result = train.train_and_evaluate(_tiny(num_epochs=3, checkpoint_every=4), str(workdir))
  err = capsys.readouterr().err
  assert (f'warning: checkpoint {workdir}/checkpoints/16 is unreadable (ValueError: its loop record lacks or mangles '
          'history, train_log, best, train_seconds); moved to') in err, err
  assert _comparable(result) == _comparable(json.loads((reference[3] / 'metrics.json').read_text()))


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
def test_a_disk_full_in_orbaxs_writer_is_one_line_and_the_run_resumes_exactly(reference, tmp_path):
  """Orbax's workers each printed the failure with a traceback (154 lines on main, one after the error line); now
  one line names the checkpoint, the cause and the checkpoint a rerun resumes from, and the rerun ends exactly as
  the uninterrupted run."""
  workdir = tmp_path / 'run'
  args = ['--config=configs/tiny.py', f'--workdir={workdir}', '--config.num_epochs=3', '--config.checkpoint_every=4']
  line = _one_error_line(_cli(None, *args, code=ORBAX_FULL_DISK), 1)
  assert line == (f'error: checkpoint at step 12 to {workdir}/checkpoints failed: No space left on device (errno 28); '
                  f'the last good checkpoint is step 8 ({workdir}/checkpoints/8); free space and rerun the same '
                  'command to resume from it')
  code, out, err = _finish(_cli('main', *args))
  assert code == 0 and 'resuming from step 8' in out, err[-2000:]
  assert _comparable(json.loads((workdir / 'metrics.json').read_text())) == _comparable(
      json.loads((reference[3] / 'metrics.json').read_text()))
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
def test_a_failed_write_at_the_start_names_the_file_and_leaves_no_temporary(tmp_path):
  """Was '[Errno 27] File too large' (no path) and an empty config.json.tmp left behind."""
  workdir = tmp_path / 'run'
  env = {k: v for k, v in os.environ.items() if k != 'JAX_COMPILATION_CACHE_DIR'}  # its writes would fail too
  proc = subprocess.Popen([sys.executable, '-c', SMALL_FILES_ONLY, '--config=configs/tiny.py', f'--workdir={workdir}'],
                          cwd=ROOT, env=dict(env, JAX_PLATFORMS='cpu'), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True)
  line = _one_error_line(proc, 1)
  assert line == f'error: cannot write {workdir}/config.json: File too large (errno {errno.EFBIG})'
  assert not list(workdir.rglob('*.tmp')) and not (workdir / 'lock').exists()
  assert workdir_lib.foreign_files(str(workdir)) == []  # nothing in the way of the same command, once it can write


@pytest.mark.e2e
def test_command_lines_end_bad_input_in_one_line(tmp_path):
  """Each command is run as a user runs it; all are started at once and then read."""
  empty = tmp_path / 'empty'
  empty.mkdir()
  (empty / 'config.json').write_text((ROOT / 'tests' / 'fixtures' / 'workdir_v1' / 'config.json').read_text())
  a_file = tmp_path / 'a_file'
  a_file.write_text('')
  tiny = ['--config=configs/tiny.py']
  cases = {
      'misspelt override': (2, r'--config.optimzer.learning_rate: the config has no field .optimzer.\. Did you '
                               r'mean "optimizer"', _cli('main', *tiny, f'--workdir={tmp_path / "w1"}',
                                                         '--config.optimzer.learning_rate=1')),
      'missing config': (2, r'--config=configs/nope.py: cannot load it: \[Errno 2\] No such file',
                         _cli('main', '--config=configs/nope.py', f'--workdir={tmp_path / "w2"}')),
      'workdir is a file': (1, rf'--workdir names an existing file, not a folder: .{a_file}.',
                            _cli('main', *tiny, f'--workdir={a_file}')),
      'unwritable workdir': (1, r'cannot create the workdir', _cli('main', *tiny, f'--workdir={a_file}/sub')),
      'full disk': (1, r'No space left on device', _cli(None, *tiny, f'--workdir={tmp_path / "w3"}',
                                                        code=FULL_DISK)),
      'diverged run': (1, r'loss_aux diverged: .* exceeds config.divergence.max_loss',
                       _cli('main', *tiny, f'--workdir={tmp_path / "w4"}', '--config.optimizer.learning_rate=1e3',
                            '--config.log_every=1')),
      'evaluate, no checkpoint': (1, rf'no best-on-dev parameters under {empty}/best',
                                  _cli('evaluate', f'--workdir={empty}')),
      'predict, no checkpoint': (1, rf'no best-on-dev parameters under {empty}/best',
                                 _cli('predict', f'--workdir={empty}', f'--input={a_file}')),
      'predict, output folder missing': (1, r'--output: the folder of .* does not exist',
                                         _cli('predict', f'--workdir={empty}', f'--input={a_file}',
                                              f'--output={tmp_path}/no/such/out.txt')),
  }
  for name, (want_code, pattern, proc) in cases.items():
    code, _, err = _finish(proc)
    lines = [line for line in err.splitlines() if line.strip() and not line.startswith('(run ')]
    assert code == want_code, (name, code, err[-2000:])
    assert len(lines) == 1 and lines[0].startswith('error: '), (name, err[-2000:])
    assert re.search(pattern, lines[0]), (name, lines[0])


@pytest.mark.skipif(os.geteuid() == 0, reason='root writes into read-only folders')
def test_a_read_only_workdir_is_named(tmp_path):
  workdir = tmp_path / 'ro'
  workdir.mkdir()
  workdir.chmod(0o500)
  try:
    with pytest.raises(PermissionError, match='the workdir is not writable') as err:
      train.train_and_evaluate(_tiny(), str(workdir))
    assert err.value.errno == errno.EACCES and err.value.filename == str(workdir)
  finally:
    workdir.chmod(0o700)


def _one_error_line(proc, want_code):
  code, _, err = _finish(proc)
  lines = [line for line in err.splitlines() if line.strip() and not line.startswith('(run ')]
  assert code == want_code, (code, err[-2000:])
  assert len(lines) == 1 and lines[0].startswith('error: '), err[-2000:]
  return lines[0]


@pytest.mark.e2e
def test_a_misspelt_nested_override_and_a_broken_config_file_are_one_line(tmp_path):
  """A misspelt field inside a section, and config files that do not parse, define no get_config(), whose
  get_config() raises or returns a dict: one line naming the field or the file (and line), exit 2, nothing
  written."""
  files = {'syntax.py': 'def get_config(:\n  pass\n', 'no_get.py': 'X = 1\n',
           'raises.py': 'def get_config():\n  raise RuntimeError("boom")\n',
           'a_dict.py': 'def get_config():\n  return {"seed": 0}\n'}
  for name, text in files.items():
    (tmp_path / name).write_text(text)
  workdir = tmp_path / 'w'
  procs = {'nested': _cli('main', '--config=configs/tiny.py', f'--workdir={workdir}',
                          '--config.optimizer.learning_rat=1', '--config.seed=1'),
           **{name: _cli('main', f'--config={tmp_path / name}', f'--workdir={workdir}') for name in files}}
  want = {
      'nested': 'error: --config.optimizer.learning_rat: the config has no field \'learning_rat\'. Did you mean '
                '"learning_rate" instead of "learning_rat"?',
      'syntax.py': f'error: --config={tmp_path / "syntax.py"}: cannot load it: SyntaxError at line 1: invalid syntax',
      'no_get.py': f'error: --config={tmp_path / "no_get.py"}: cannot load it: the file defines no get_config()',
      'raises.py': f'error: --config={tmp_path / "raises.py"}: get_config() failed at line 2: RuntimeError: boom',
      'a_dict.py': f'error: --config={tmp_path / "a_dict.py"}: get_config() returned a dict, not an '
                   'ml_collections.ConfigDict',
  }
  for name, proc in procs.items():
    assert _one_error_line(proc, 2).startswith(want[name]), name
  assert not workdir.exists()


@pytest.mark.e2e
def test_predict_refuses_to_write_over_its_input(tmp_path):
  """``--output`` naming the input file (or a link to it) is refused before any work; the input is untouched."""
  source = tmp_path / 'rows.arff'
  source.write_text('@relation r\n@attribute a numeric\n@data\n1\n')
  link = tmp_path / 'link.arff'
  link.symlink_to(source)
  empty = tmp_path / 'empty'
  empty.mkdir()
  for output in (source, link):
    line = _one_error_line(_cli('predict', f'--workdir={empty}', f'--input={source}', f'--output={output}'), 1)
    assert line == (f'error: --output={output} is the input file: writing predictions there would replace it; give '
                    'another path')
  assert source.read_text() == '@relation r\n@attribute a numeric\n@data\n1\n'


@pytest.mark.e2e
def test_ctrl_c_while_training_is_one_line_and_the_run_resumes(tmp_path):
  """SIGINT once the first checkpoint is saved: one line saying the run resumes, exit 130; the same command then
  resumes from that checkpoint and finishes."""
  workdir = tmp_path / 'run'
  args = ['--config=configs/tiny.py', f'--workdir={workdir}', '--config.num_epochs=200', '--config.checkpoint_every=4']
  proc = _cli('main', *args, code=MAIN_WITH_SIGINT)
  deadline = time.time() + 240
  while time.time() < deadline and proc.poll() is None and not (
      (workdir / 'checkpoints').is_dir() and any(d.name.isdigit() for d in (workdir / 'checkpoints').iterdir())):
    time.sleep(0.05)
  assert proc.poll() is None, 'the run ended before it was interrupted'
  proc.send_signal(signal.SIGINT)
  code, _, err = _finish(proc)
  lines = [line for line in err.splitlines() if line.strip()]
  assert code == 130, err[-2000:]
  assert lines == [f'interrupted: {workdir} keeps its last checkpoint; the same command resumes from it'], err[-3000:]
  code, out, err = _finish(_cli('main', *args[:2], '--config.num_epochs=2', '--config.checkpoint_every=4'))
  assert code == 0 and 'resuming from step' in out, (out[-1000:], err[-2000:])


@pytest.mark.e2e
def test_evaluate_warns_of_labels_never_positive_in_a_split(tmp_path):
  """A custom dataset whose label 'l2' is 0 in every row: F1 cannot tell whether the model can predict it, so
  ``evaluate`` names it in a warning for each split it scores."""
  rng = np.random.default_rng(0)
  x, y = rng.integers(0, 2, (60, 8)), rng.integers(0, 2, (60, 3))
  y[:, 2] = 0
  path = tmp_path / 'data.arff'
  names = [f'f{j}' for j in range(8)] + [f'l{j}' for j in range(3)]
  path.write_text('@relation r -C -3\n' + ''.join(f'@attribute {n} {{0,1}}\n' for n in names) + '@data\n' +
                  '\n'.join(','.join(map(str, r)) for r in np.concatenate([x, y], axis=1)) + '\n')
  config = load_config('bibtex')
  config.data.update(name='custom', train_file=str(path), protocol='resplit')
  config.update(method='feedforward', num_epochs=1, batch_size=12, eval_batch_size=12)
  train.train_and_evaluate(config, str(tmp_path / 'run'))
  code, _, err = _finish(_cli('evaluate', f'--workdir={tmp_path / "run"}', '--split=all'))
  assert code == 0, err[-2000:]
  assert [line for line in err.splitlines() if line.strip()] == [
      f"warning: the {split} split has no positive example of 1 of 3 labels: 'l2'; its scores say nothing about them"
      for split in ('train', 'dev', 'test')]


def test_a_folder_of_run_file_names_without_a_run_record_is_refused_untouched(tmp_path):
  """A folder holding the user's own metrics.jsonl, lock and checkpoints/readme.txt but no config.json was taken
  for a workdir: metrics.jsonl replaced, lock deleted. Without a run's config record, only a start's lock record
  (and the config record's temporary) may be there."""
  mine = tmp_path / 'mine'
  (mine / 'checkpoints').mkdir(parents=True)
  files = {'metrics.jsonl': '{"step": 1, "loss": 0.5}\n', 'lock': 'my own lock\n', 'checkpoints/readme.txt': 'x'}
  for name, text in files.items():
    (mine / name).write_text(text)
  with pytest.raises(ValueError, match=rf'^--workdir {mine} holds files a training run did not write \(checkpoints, '
                     r'lock, metrics.jsonl\); nothing was changed: give a new or empty folder$'):
    train.train_and_evaluate(_tiny(), str(mine))
  assert all((mine / name).read_text() == text for name, text in files.items())
  assert sorted(p.name for p in mine.iterdir()) == ['checkpoints', 'lock', 'metrics.jsonl']
  # A start killed after taking its lock (the lock's record, the config record's temporary) is not in the way.
  started = tmp_path / 'started'
  started.mkdir()
  (started / 'lock').write_text('1234 on somehost\n')
  (started / 'config.json.tmp').write_text('{"meth')
  (started / 'best').mkdir()
  assert workdir_lib.foreign_files(str(started)) == []


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


def test_evaluate_on_a_config_that_builds_another_network_does_not_call_the_checkpoint_unreadable(tiny_run, tmp_path):
  """config.json given a layer more after the run (or another method): evaluate called the intact best-on-dev
  checkpoint 'unreadable', tried the one before it and failed. Now one error names the array that differs and the
  config, and the checkpoint stays where it is."""
  workdir = tmp_path / 'run'
  shutil.copytree(tiny_run[0], workdir)  # a finished run of configs/tiny.py
  path = workdir / 'config.json'
  record = json.loads(path.read_text())
  best = sorted(p.name for p in (workdir / 'best').iterdir())
  for field, value, named in (('energy_feature_hidden', [16, 16], 'the model built now has phi.params.MLP_0.Dense_2'),
                              ('linear_skip', True, 'the model built now has theta.params.linear')):
    edited = json.loads(json.dumps(record))
    edited['model'][field] = value
    path.write_text(json.dumps(edited))
    with pytest.raises(checkpoints.OtherShapes, match=rf'^the best-on-dev parameters in {workdir}/best/\d+ do not '
                       rf'fit the model built from the data and config read now \(.*{named}.*\): .*config.json was '
                       'changed'):
      evaluate.evaluate_run(str(workdir))
    assert sorted(p.name for p in (workdir / 'best').iterdir()) == best and not (workdir / 'corrupt').exists()


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
