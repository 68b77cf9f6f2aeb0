"""The runner on a Ray cluster of two nodes on this machine: a small table of configs/tiny.py runs, one node killed
(its processes with it, as when a machine goes) while its run is mid-training. The run is retried on another
node, resumes from its last checkpoint, and the table's records equal those of the same runs made one after the
other in this process, but for the fields that say how and when a record was made."""

import json
import os
import re
import shutil
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

os.environ.setdefault('RAY_DEDUP_LOGS', '0')  # each run's lines its own (read when Ray is imported)
ray = pytest.importorskip('ray', reason='Ray is not installed (the extra .[scale]): the runner on Ray is untested')
from ray.cluster_utils import Cluster  # noqa: E402  pylint: disable=wrong-import-position

from conftest import ROOT, load_config  # noqa: E402  pylint: disable=wrong-import-position
from experiments import records  # noqa: E402  pylint: disable=wrong-import-position
from implicit_jax import ray_runs, runner  # noqa: E402  pylint: disable=wrong-import-position
from implicit_jax.engine import checkpoints  # noqa: E402  pylint: disable=wrong-import-position

pytestmark = pytest.mark.e2e

SEEDS = (0, 1, 2)
EPOCHS = 10  # 80 steps, a checkpoint at each epoch's end: a run is mid-training for most of its life
# How and when a record was made (the command, its date, this machine, seconds) and where (``where`` below).
HOW_MADE = {'command', 'date', 'machine', 'train_seconds', 'checkout', 'node', 'pid'}
PATIENCE = 900  # seconds before the watchdog stops the cluster: a table that hangs fails instead


def _runs(folder: Path):
  out = []
  for seed in SEEDS:
    config = load_config('tiny')
    config.seed, config.num_epochs = seed, EPOCHS
    out.append(runner.Run(f'tiny seed {seed}', config, folder / 'records' / f'tiny-seed{seed}.json',
                          str(folder / 'work' / f'tiny-{seed}')))
  return out


def where() -> dict:
  """The runner's ``provenance`` on the cluster: whether the worker imported this checkout's code, its node and
  process."""
  import implicit_jax  # pylint: disable=import-outside-toplevel
  import ray as here  # pylint: disable=import-outside-toplevel,reimported
  checkout = os.path.samefile(implicit_jax.__file__, ROOT / 'implicit_jax' / '__init__.py')
  return {'checkout': checkout, 'node': here.get_runtime_context().get_node_id(), 'pid': os.getpid()}


# pytest imports this file under a name no worker can import: its functions travel by value
ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])


def _parent(pid: int) -> int:
  try:
    return int(Path(f'/proc/{pid}/stat').read_text().rsplit(')', 1)[1].split()[1])
  except (OSError, ValueError, IndexError):
    return 0


def _under(pid: int, ancestor: int) -> bool:
  for _ in range(10):
    pid = _parent(pid)
    if pid in (0, 1):
      return False
    if pid == ancestor:
      return True
  return False


def _descendants(ancestor: int) -> list[int]:
  return [int(p) for p in os.listdir('/proc') if p.isdigit() and _under(int(p), ancestor)]


def _kill_mid_run(cluster, node, runs, killed: dict, stop: threading.Event) -> None:
  """Kills ``node`` (its raylet, then what ran under it) once a run it trains has a checkpoint and is still
  training; the run then has the head node left. After PATIENCE, stops the cluster."""
  raylet = node.all_processes['raylet'][0].process.pid
  deadline = time.monotonic() + PATIENCE
  while not stop.is_set() and not killed:
    if time.monotonic() > deadline:
      cluster.shutdown()
      return
    for run in runs:
      try:
        pid = int((Path(run.workdir) / 'lock').read_text().split()[0])
      except (OSError, ValueError, IndexError):
        continue
      if checkpoints.has_checkpoint(run.workdir) and not run.record.exists() and _under(pid, raylet):
        doomed = _descendants(raylet)
        killed.update(run=run.name, node=node.node_id, pid=pid)
        cluster.remove_node(node, allow_graceful=False)
        for p in doomed:
          try:
            os.kill(p, signal.SIGKILL)
          except ProcessLookupError:
            pass
        break
    time.sleep(0.2)
  while not stop.wait(1.0):
    if time.monotonic() > deadline:
      cluster.shutdown()
      return


@pytest.fixture
def cluster():
  """Two nodes of one CPU each, under a temp folder of their own (short: Ray's socket paths are limited); the
  file where Ray notes the latest cluster of this machine is put back as it was, for whoever else uses Ray here."""
  address_file = Path(tempfile.gettempdir()) / 'ray' / 'ray_current_cluster'
  before = address_file.read_text() if address_file.exists() else None
  temp_dir = tempfile.mkdtemp(prefix='rt', dir='/tmp')
  # A killed node is noticed in seconds, not Ray's default half a minute.
  made = Cluster(initialize_head=True, head_node_args={
      'num_cpus': 1, 'temp_dir': temp_dir,
      '_system_config': {'health_check_initial_delay_ms': 0, 'health_check_period_ms': 1000,
                         'health_check_failure_threshold': 5}})
  try:
    made.temp_dir = temp_dir
    made.doomed = made.add_node(num_cpus=1, temp_dir=temp_dir)
    made.wait_for_nodes()
    yield made
  finally:
    made.shutdown()
    if before is None:
      address_file.unlink(missing_ok=True)
    else:
      address_file.write_text(before)
    shutil.rmtree(temp_dir, ignore_errors=True)


def test_a_table_on_two_nodes_survives_losing_one_mid_run_with_the_records_of_one_run_after_another(
    tmp_path, cluster):
  sequential = runner.run_all(_runs(tmp_path / 'sequential'), writer=records.save)
  assert [o.status for o in sequential] == ['trained'] * len(SEEDS)

  runs, killed, stop = _runs(tmp_path / 'ray'), {}, threading.Event()
  killer = threading.Thread(target=_kill_mid_run, args=(cluster, cluster.doomed, runs, killed, stop),
                            daemon=True)
  killer.start()
  try:
    outcomes = runner.run_all(runs, writer=records.save, provenance=where,
                              ray=ray_runs.RayOptions(address=cluster.address))
  finally:
    stop.set()
    killer.join()
  assert [o.status for o in outcomes] == ['trained'] * len(SEEDS)
  assert killed, 'no run was seen mid-training on the node to kill'

  made = {run.name: json.loads(run.record.read_text()) for run in runs}
  assert made[killed['run']]['node'] != killed['node']  # ended on another node
  assert all(r['checkout'] for r in made.values())  # the workers imported this checkout's code
  workdir = next(run.workdir for run in runs if run.name == killed['run'])
  logs = ''.join(p.read_text(errors='replace') for p in Path(cluster.temp_dir).glob('session_*/logs/worker-*.out'))
  resumed = re.findall(rf'resuming from step (\d+) \({re.escape(workdir)}/checkpoints', logs)
  assert resumed and int(resumed[0]) > 0, f'{killed}: no resume in its workdir'  # from a checkpoint, not step 0
  for seq, run in zip(_runs(tmp_path / 'sequential'), runs):
    a, b = json.loads(seq.record.read_text()), made[run.name]
    assert a['history'] and a['predictions'] and a['test_f1'] == b['test_f1']
    assert {k: v for k, v in a.items() if k not in HOW_MADE} == {k: v for k, v in b.items() if k not in HOW_MADE}
