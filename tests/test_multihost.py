"""Multi-host training: two processes on this machine run ``python -m implicit_jax.main --distributed`` as two
hosts of a cluster would (a coordinator on localhost, one CPU device each, collectives over Gloo; see
docs/multihost.md). They train the steps of one process, only process 0 writes to the workdir, and a process that
is killed ends the other with an error within seconds.

Each process runs under a Python audit hook that logs every file it creates, writes, renames or deletes under the
workdir (``SHIM``), so "only process 0 writes" is observed, not inferred. Array data that Orbax writes through
TensorStore (C++) passes no hook: for those, the check is that no per-process output of process 1 exists.
"""

import json
import os
import signal
import socket
import subprocess
import sys
import time

import jax
import numpy as np
import pytest

from implicit_jax.engine import checkpoints, writers
from tests.conftest import ROOT

# argv: AUDIT_LOG WORKDIR then implicit_jax.main's flags. The log is opened before the hook is installed, and
# writing to an open file raises no audit event, so the hook does not see itself.
SHIM = r'''
import os, runpy, sys
log = open(sys.argv.pop(1), 'w', buffering=1)
root = os.path.realpath(sys.argv.pop(1))
WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
CHANGES = {'os.mkdir', 'os.rename', 'os.remove', 'os.rmdir', 'shutil.rmtree', 'os.truncate', 'os.chmod',
           'os.link', 'os.symlink', 'os.utime'}

def inside(path):
  if isinstance(path, (str, bytes, os.PathLike)):
    path = os.path.realpath(os.fsdecode(path))
    return path == root or path.startswith(root + os.sep)
  return False

def hook(event, args):
  if event == 'open' and args[2] & WRITE_FLAGS and inside(args[0]) or event in CHANGES and any(map(inside, args)):
    log.write(f'{event} {args[0]}\n')

sys.addaudithook(hook)
sys.argv[0] = 'implicit_jax.main'
runpy.run_module('implicit_jax.main', run_name='__main__', alter_sys=True)
'''
# About 60 s in all (2 cores): a suite of its own, which .ci/run runs after the default one (pytest -m multihost).
pytestmark = pytest.mark.multihost
HEARTBEAT = 10  # seconds (--heartbeat_timeout): the longest a survivor may wait to learn that a peer is gone


def free_port() -> int:
  with socket.socket() as s:
    s.bind(('localhost', 0))
    return s.getsockname()[1]


def environment() -> dict:
  # A test run inside a cluster job must not pick up the job's own coordinates.
  env = {k: v for k, v in os.environ.items() if not k.startswith(('SLURM_', 'JAX_COORDINATOR', 'OMPI_'))}
  return dict(env, JAX_PLATFORMS='cpu')


def launch(tmp_path, name: str, workdir, *flags: str) -> list[subprocess.Popen]:
  """Two processes of one run, each under the audit hook; their output and audit logs go to tmp_path."""
  port, procs = free_port(), []
  for i in range(2):
    with open(tmp_path / f'{name}{i}.out', 'w') as out:
      procs.append(subprocess.Popen(
          [sys.executable, '-c', SHIM, str(tmp_path / f'{name}{i}.audit'), str(workdir),
           '--config=configs/tiny.py', f'--workdir={workdir}', '--distributed',
           f'--coordinator_address=localhost:{port}', '--num_processes=2', f'--process_id={i}',
           f'--heartbeat_timeout={HEARTBEAT}', *flags],
          cwd=ROOT, env=environment(), stdout=out, stderr=subprocess.STDOUT, text=True))
  return procs


def stop(procs) -> None:
  for p in procs:
    if p.poll() is None:
      p.kill()
      p.wait()


def best_params(workdir):
  return jax.device_get(checkpoints.load_trained(str(workdir)).params)


def files(workdir) -> set[str]:
  """The workdir's files, relative, with Orbax's content-named data files and TensorBoard's host- and time-named
  event file reduced to their folder."""
  out = set()
  for folder, _, names in os.walk(workdir):
    rel = os.path.relpath(folder, workdir)
    for name in names:
      out.add(rel if os.path.basename(rel) == 'd' or rel == 'tensorboard' else os.path.join(rel, name))
  return out


def test_two_processes_train_as_one_and_only_process_0_writes(tmp_path):
  one, two = tmp_path / 'one', tmp_path / 'two'
  # The reference: the same command as one ordinary process (one device; the two processes have one each).
  reference = subprocess.Popen([sys.executable, '-m', 'implicit_jax.main', '--config=configs/tiny.py',
                                f'--workdir={one}'], cwd=ROOT, env=environment(), stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
  procs = launch(tmp_path, 'run', two)
  try:
    ref_out = reference.communicate(timeout=300)[0]
    for p in procs:
      p.wait(timeout=300)
  finally:
    stop([reference, *procs])
  outputs = [(tmp_path / f'run{i}.out').read_text() for i in range(2)]
  assert reference.returncode == 0, ref_out[-3000:]
  assert [p.returncode for p in procs] == [0, 0], '\n\n'.join(o[-3000:] for o in outputs)
  assert all('test example-F1' in o for o in outputs), outputs  # both evaluated (the predictions gathered)

  # (a) The same steps: every logged mean (losses, norms, solver diagnostics) and the dev and test scores equal
  # one process's to float32 round-off (the 2-device sums are reassociated); the parameters too (at the end).
  ref_log, log = writers.read_metrics(one / 'metrics.jsonl'), writers.read_metrics(two / 'metrics.jsonl')
  assert [r['step'] for r in log] == [r['step'] for r in ref_log] and len(log) >= 4, (log, ref_log)
  for ref_record, record in zip(ref_log, log):
    assert record.keys() == ref_record.keys(), (record, ref_record)
    for key, value in ref_record.items():
      np.testing.assert_allclose(record[key], value, rtol=1e-4, atol=1e-6, err_msg=f'step {record["step"]} {key}')
  assert any(k.startswith('train/loss') for record in log for k in record), log
  ref_result, result = (json.loads((w / 'metrics.json').read_text()) for w in (one, two))
  for key in ('best_epoch', 'dev_f1', 'test_f1', 'test_f1_tuned', 'threshold'):
    assert key in ref_result and np.isclose(result[key], ref_result[key], rtol=1e-4), (key, result, ref_result)

  # (b) Only process 0 writes: process 1's audit log is empty, while process 0's shows the hook at work on every
  # kind of file; and process 1 left no file of its own (Orbax names per-process output by process index), the
  # workdir holding no file that the one-process run lacks.
  audit = [(tmp_path / f'run{i}.audit').read_text().splitlines() for i in range(2)]
  assert audit[1] == [], audit[1][:20]
  written = {os.path.relpath(line.split(' ', 1)[1], two).split(os.sep)[0].removesuffix('.tmp') for line in audit[0]}
  assert written >= {'.', 'config.json', 'data.json', 'metrics.jsonl', 'metrics.json', 'lock', 'tensorboard',
                     'checkpoints', 'best'}, written
  assert not [f for f in files(two) if 'process_1' in f], sorted(files(two))
  assert files(two) <= files(one), sorted(files(two) - files(one))

  # (a, last) The best parameters, read back as `implicit_jax.evaluate` reads them (one process), are the
  # one-process run's.
  ref_params, params = best_params(one), best_params(two)
  for a, b in zip(jax.tree.leaves(ref_params), jax.tree.leaves(params), strict=True):
    assert np.max(np.abs(a - b)) <= 1e-4 * (np.max(np.abs(a)) + 1e-12), (a, b)


@pytest.mark.parametrize('victim', [1, 0])
def test_a_killed_process_ends_the_other_with_an_error(tmp_path, victim):
  # Long enough to be killed mid-training; process `victim` dies by SIGKILL, as on a lost host (no clean-up).
  procs = launch(tmp_path, 'kill', tmp_path / 'work', '--config.num_epochs=200')
  survivor = procs[1 - victim]
  out = tmp_path / f'kill{1 - victim}.out'
  try:
    deadline = time.monotonic() + 300
    while 'step 20/' not in out.read_text() and time.monotonic() < deadline and survivor.poll() is None:
      time.sleep(0.2)
    assert 'step 20/' in out.read_text(), out.read_text()[-3000:]
    procs[victim].send_signal(signal.SIGKILL)
    killed = time.monotonic()
    survivor.wait(timeout=HEARTBEAT + 60)
    seconds = time.monotonic() - killed
  finally:
    stop(procs)
  text = out.read_text()
  # It stops by itself, soon, with a non-zero status and a line saying what happened. Process 0 learns it from its
  # next collective (Gloo's socket closes at once; the coordination service it hosts would wait for the heartbeat
  # timeout): implicit_jax.main's one line. Process 1 also hears from its coordination client that process 0 is
  # gone, and whichever comes first ends it: that line or JAX's own message.
  assert survivor.returncode not in (0, None), text[-3000:]
  assert seconds < HEARTBEAT + 30, seconds
  ours = f'error: process {1 - victim} of 2: lost contact with another process of the run' in text
  assert ours or victim == 0 and 'This most likely indicates that another task died' in text, text[-3000:]


# --- the processes agree at start (issue 44) -------------------------------------------------------------------------
# Each case starts two processes that differ in one thing. Both must stop with exit status 1 and one line on stderr
# naming it, before training: no step is logged and the workdir is not created. A case that would hang instead
# fails at WAIT.
WAIT = 240  # seconds


def run_two(tmp_path, each: tuple, *flags: str, config='configs/tiny.py', cwds=(ROOT, ROOT)
            ) -> list[tuple[int, list[str], str]]:
  """Two processes of one run, process i given ``flags`` then ``each[i]`` (later flags win), in ``cwds[i]``;
  ``[(exit status, stderr lines, stdout)]`` once both have ended."""
  port, procs = free_port(), []
  env = dict(environment(), PYTHONPATH=str(ROOT))  # this checkout's package, from any working directory
  for i in range(2):
    procs.append(subprocess.Popen(
        [sys.executable, '-m', 'implicit_jax.main', f'--config={ROOT / config}',
         f'--workdir={tmp_path / "work"}', '--distributed', f'--coordinator_address=localhost:{port}',
         '--num_processes=2', f'--process_id={i}', f'--heartbeat_timeout={HEARTBEAT}', *flags, *each[i]],
        cwd=cwds[i], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
  try:
    outputs = [p.communicate(timeout=WAIT) for p in procs]
  finally:
    stop(procs)
  return [(p.returncode, err.strip().splitlines(), out) for p, (out, err) in zip(procs, outputs)]


def assert_refused(results, tmp_path, what: str) -> None:
  """Both processes ended with status 1 and the one line ``error: process i of 2: the processes of this run
  disagree: <what>...``, before training."""
  for i, (code, err, out) in enumerate(results):
    assert code == 1 and len(err) == 1, (i, code, err[-20:], out[-2000:])
    assert err[0].startswith(f'error: process {i} of 2: the processes of this run disagree: {what}'), err
    assert 'step ' not in out, out[-2000:]
  assert not (tmp_path / 'work').exists()


@pytest.mark.parametrize('flag, named', [
    ('--config.optimizer.learning_rate=0.5', 'config.optimizer.learning_rate (process 0: 0.01, process 1: 0.5); '
     'give every process the same command'),
    ('--config.seed=1', 'config.seed (process 0: 0, process 1: 1); give every process the same command'),
    ('--config.num_epochs=3', 'config.num_epochs (process 0: 2, process 1: 3); give every process the same command'),
], ids=['learning_rate', 'seed', 'num_epochs'])
def test_processes_given_different_flags_stop_naming_the_field(tmp_path, flag, named):
  # Before the check: another learning rate trained a silently wrong run (both exit 0), another seed failed in a
  # 42-line traceback, other epochs hung in the last collective.
  assert_refused(run_two(tmp_path, ((), (flag,))), tmp_path, named)


def test_processes_given_different_workdirs_stop_naming_both(tmp_path):
  # Before: the run trained, then both failed reading checkpoints that process 1's workdir never held.
  other = tmp_path / 'other'
  results = run_two(tmp_path, ((), (f'--workdir={other}',)))
  assert_refused(results, tmp_path, f'--workdir (process 0: {tmp_path / "work"}, process 1: {other})')
  assert not other.exists()


def test_processes_reading_different_data_stop_naming_the_split(tmp_path):
  # The same command on two hosts whose copies of the data file differ in one value: here the file is named
  # relative to the working directory, and each process works in a folder of its own.
  rng = np.random.default_rng(0)
  x, y = rng.integers(0, 2, (60, 8)), rng.integers(0, 2, (60, 3))
  hosts = [tmp_path / 'host0', tmp_path / 'host1']
  for host in hosts:
    host.mkdir()
    columns = [f'f{j}' for j in range(8)] + [f'l{j}' for j in range(3)]
    (host / 'rows.arff').write_text(
        '@relation r -C -3\n' + ''.join(f'@attribute {n} {{0,1}}\n' for n in columns) + '@data\n' +
        '\n'.join(','.join(map(str, r)) for r in np.concatenate([x, y], axis=1)) + '\n')
    x[5, 2] = 1 - x[5, 2]
  results = run_two(tmp_path, ((), ()), '--config.data.train_file=rows.arff',
                    '--config.data.protocol=resplit', '--config.method=feedforward', '--config.batch_size=12',
                    '--config.eval_batch_size=12', config='configs/custom.py', cwds=hosts)
  assert_refused(results, tmp_path, 'data train.x (process 0: ')
  assert all('every host must read the same data (rows.arff)' in err[0] for _, err, _ in results), results


def test_a_second_process_0_is_refused_and_the_first_stops_waiting(tmp_path):
  # Two processes given --process_id=0: JAX's coordination service cannot tell this from a process that has not
  # started yet. The second finds the coordinator address already served and stops at once; the first, still
  # waiting for a process 1, stops after --initialization_timeout (before: it waited for JAX's own 300 s, then
  # aborted with a C++ stack trace; the second was aborted by JAX at once, the same way).
  port, timeout, procs = free_port(), 10, []
  command = [sys.executable, '-m', 'implicit_jax.main', '--config=configs/tiny.py', f'--workdir={tmp_path / "work"}',
             '--distributed', f'--coordinator_address=localhost:{port}', '--num_processes=2', '--process_id=0',
             f'--heartbeat_timeout={HEARTBEAT}', f'--initialization_timeout={timeout}']
  try:
    procs.append(subprocess.Popen(command, cwd=ROOT, env=environment(), stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True))
    deadline = time.monotonic() + WAIT
    while not served(port) and procs[0].poll() is None and time.monotonic() < deadline:
      time.sleep(0.1)
    assert served(port), procs[0].communicate(timeout=WAIT)
    procs.append(subprocess.Popen(command, cwd=ROOT, env=environment(), stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True))
    second = procs[1].communicate(timeout=WAIT)
    first_running = procs[0].poll() is None
    first = procs[0].communicate(timeout=WAIT)
  finally:
    stop(procs)
  assert procs[1].returncode == 1 and second[1].strip().splitlines() == [
      f'error: --coordinator_address localhost:{port} is already in use, before this process (--process_id=0) '
      'started the run\'s coordinator there: another process was given --process_id=0, or another program holds '
      'the port. Give each process its own --process_id, or another port'], second
  assert first_running  # the second was refused while the first still waited, not after it
  assert procs[0].returncode == 1 and first[1].strip().splitlines() == [
      f'error: process 0 of 2: the processes of the run did not all join at localhost:{port} within {timeout} s '
      '(--initialization_timeout): start all 2, each with its own --process_id (0 to 1) and the same '
      '--coordinator_address and --num_processes'], first
  assert not (tmp_path / 'work').exists()


def served(port: int) -> bool:
  with socket.socket() as s:
    return s.connect_ex(('localhost', port)) == 0
