"""The runs of ``implicit_jax.runner`` as Ray tasks: several at once, on this machine or on a Ray cluster.

``run_all(runs, ray=RayOptions(...))`` plans each run in the driver as it does one after the other (what is done
is skipped, what supersede or verify reruns is read from its record), then trains each run that is left as a Ray
task: a worker process that calls ``train_and_evaluate`` in the run's workdir and returns its result. The driver
writes every record, as results come in, through the same writer: records are written in one place, atomically.

A task lost with its worker or its node is retried (``retries``) and resumes from the last checkpoint of its
workdir, when that workdir is on storage the node it is retried on sees (one machine, or a shared file system);
elsewhere it starts over, to the same record. An error of the run itself (bad data, a divergence) is not
retried: it is reported, naming the run, once the other runs have ended.

Ray is an optional extra (``pip install -e '.[scale]'``); this module imports it only when a call needs it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import math
import os
import socket
import time
from pathlib import Path

# What to install when Ray is asked for and absent.
EXTRA = "pip install -e '.[scale]'"
# JAX preallocates this share of a GPU's memory (its default): a run given a fraction F of a GPU gets F times it,
# so that 1/F runs start on one device, each beside its own CUDA context, instead of the first taking 75%.
JAX_PREALLOCATED = 0.75
# A user's own memory settings for JAX on the GPU: passed to every run as they are, instead of the share above.
XLA_MEMORY = ('XLA_PYTHON_CLIENT_MEM_FRACTION', 'XLA_PYTHON_CLIENT_PREALLOCATE', 'XLA_PYTHON_CLIENT_ALLOCATOR')
# How long the driver waits for a cluster's address to answer before saying so: ray.init itself waits far longer
# (over 10 minutes here) for an address where nothing listens.
REACH_SECONDS = 5.0
# How long a run waits for its workdir while another process still holds it (a lost attempt's, ending).
BUSY_SECONDS = 120.0


@dataclasses.dataclass(frozen=True)
class RayOptions:
  """Where and how the runs go. ``address``: a Ray cluster (``host:port``, ``auto``, ``ray://host:port``); None
  starts Ray on this machine for the call, whatever else runs here. ``gpus_per_run``: each run's share of a GPU
  (0.25 packs four runs on a device); None gives a run one GPU where the cluster has GPUs and none where it has
  not. ``cpus_per_run``: CPUs a run holds (fractions allowed: 0.5 runs two at once on each core). ``retries``:
  how often a run lost with its worker or node is started again."""
  address: str | None = None
  gpus_per_run: float | None = None
  cpus_per_run: float = 1.0
  retries: int = 3

  def __post_init__(self):
    if self.gpus_per_run is not None:
      check_gpus(self.gpus_per_run)
    check_cpus(self.cpus_per_run)
    if self.retries < 0:
      raise ValueError(f'retries={self.retries}: a count, 0 or more')


def check_gpus(share: float) -> float:
  """A run's share of GPUs as Ray places it: a fraction of one device, or whole devices."""
  if not (math.isfinite(share) and share >= 0) or (share > 1 and share != int(share)):
    raise ValueError(f'{share:g} GPUs a run: give a fraction of one GPU (0.25: four runs a GPU), 0 (none) or a '
                     'whole number of GPUs')
  return share


def check_cpus(share: float) -> float:
  if not (math.isfinite(share) and share > 0):
    raise ValueError(f'{share:g} CPUs a run: give a number above 0 (0.5: two runs a core)')
  return share


def installed() -> bool:
  import importlib.util  # pylint: disable=import-outside-toplevel
  try:
    return importlib.util.find_spec('ray') is not None
  except ValueError:  # a module object without a spec stands in sys.modules
    return False


def _ray():
  # Ray folds alike lines of different workers into one ("[repeated 2x across cluster]"), read when it is first
  # imported: each run's progress lines are its own. A user's own choice stands.
  os.environ.setdefault('RAY_DEDUP_LOGS', '0')
  try:
    import ray  # pylint: disable=import-outside-toplevel
  except ImportError:
    raise ModuleNotFoundError(f'the runs were asked to run on Ray, which is not installed: {EXTRA}') from None
  return ray


def resources(options: RayOptions, cluster_gpus: float) -> dict:
  """The Ray resources of one run: ``num_cpus`` and ``num_gpus``, a whole GPU by default where there are some."""
  gpus = options.gpus_per_run if options.gpus_per_run is not None else (1.0 if cluster_gpus else 0.0)
  return {'num_cpus': options.cpus_per_run, 'num_gpus': gpus}


def checkout() -> Path | None:
  """The checkout this package is imported from (the folder holding setup.cfg beside it); None when installed."""
  root = Path(__file__).resolve().parents[1]
  return root if (root / 'setup.cfg').exists() else None


def run_env(num_gpus: float, cluster_gpus: float, environ) -> dict:
  """The environment variables of a run's process, beside what Ray sets (CUDA_VISIBLE_DEVICES):

  * PYTHONPATH: the driver's checkout first, so that a worker trains with the driver's code, not with another copy
    of the package its Python may find;
  * the driver's XLA_* and JAX_* variables, so that a run computes as it would in the driver (XLA_FLAGS change
    float results) wherever its node was started;
  * a share of a GPU (0 < ``num_gpus`` < 1): XLA_PYTHON_CLIENT_MEM_FRACTION, JAX's default preallocation times the
    share, unless the driver sets JAX's GPU memory itself (``XLA_MEMORY``);
  * no GPU on a cluster that has some: JAX_PLATFORMS=cpu, so that the run does not look for a device it was not
    given (unless the driver names the platforms)."""
  env = {k: v for k, v in environ.items() if k.startswith(('XLA_', 'JAX_'))}
  paths = [str(checkout() or ''), *environ.get('PYTHONPATH', '').split(os.pathsep)]
  if any(paths):
    env['PYTHONPATH'] = os.pathsep.join(dict.fromkeys(p for p in paths if p))
  if 0 < num_gpus < 1 and not any(k in env for k in XLA_MEMORY):
    env['XLA_PYTHON_CLIENT_MEM_FRACTION'] = f'{JAX_PREALLOCATED * num_gpus:.4g}'
  if num_gpus == 0 and cluster_gpus and 'JAX_PLATFORMS' not in env:
    env['JAX_PLATFORMS'] = 'cpu'
  return env


def reach(address: str, seconds: float = REACH_SECONDS) -> None:
  """Refuses, in one line naming --address, a cluster address where nothing answers (ray.init would wait on)."""
  target = address.split('://', 1)[-1]
  if target in ('auto', 'local'):
    return  # Ray resolves these itself, and says when it finds no cluster
  host, _, port = target.rpartition(':')
  if not host or not port.isdigit():
    raise ValueError(f'--address={address}: give a Ray cluster\'s host:port (`ray start --head` prints it), '
                     'ray://host:port, or auto')
  try:
    socket.create_connection((host.strip('[]'), int(port)), timeout=seconds).close()
  except OSError as e:
    raise ConnectionError(f'--address={address}: no Ray cluster answers there ({e.strerror or e}); start one '
                          '(ray start --head) or give its address, or leave --address out to run on this '
                          'machine') from None


@contextlib.contextmanager
def session(options: RayOptions):
  """Ray for the runs: the one this process has already joined, as it is; else the cluster at ``address``, or a
  Ray started on this machine, left (and stopped, when started here) at the end."""
  ray = _ray()
  if ray.is_initialized():
    yield ray
    return
  if options.address:
    reach(options.address)
  ray.init(address=options.address or 'local', include_dashboard=False, logging_level=logging.WARNING)
  try:
    yield ray
  finally:
    ray.shutdown()


def _fits(ray, res: dict) -> bool:
  """Whether one node of the cluster has the CPUs and GPUs of a run (else its tasks would wait forever)."""
  for node in ray.nodes():
    have = node.get('Resources', {})
    if node.get('Alive') and have.get('CPU', 0) >= res['num_cpus'] and have.get('GPU', 0) >= res['num_gpus']:
      return True
  return False


def _await(workdir: str, seconds: float) -> None:
  """Returns once no process holds ``workdir``'s training lock, or after ``seconds`` (training then refuses,
  naming the holder): a retry can start while the attempt it replaces, on a node being lost, has not yet ended."""
  from implicit_jax.engine import workdir as workdir_lib  # pylint: disable=import-outside-toplevel
  deadline = time.monotonic() + seconds
  while os.path.isdir(workdir):
    try:
      with workdir_lib.Lock(workdir):
        return
    except workdir_lib.WorkdirBusy:
      if time.monotonic() > deadline:
        return
      time.sleep(1.0)


def _task(train_one, config, workdir: str, fresh: bool, provenance, on_epoch=None):
  """One run in a Ray worker: trained by ``train_one`` (``runner.train``, as in the driver); its result and its
  seconds."""
  start = time.perf_counter()
  _await(workdir, BUSY_SECONDS)
  result = train_one(config, workdir, fresh=fresh, provenance=provenance, on_epoch=on_epoch)
  return result, time.perf_counter() - start


def _cause(error) -> BaseException:
  """A run's own exception from Ray's wrapper of it, the remote traceback as a note; the wrapper if it has none."""
  cause = getattr(error, 'cause', None)
  if not isinstance(cause, BaseException):
    return error
  if hasattr(cause, 'add_note'):
    cause.add_note(str(error))
  return cause


def train(jobs, options: RayOptions, train_one, provenance=None):
  """Trains ``jobs`` (``(index, run, config, fresh)``) as Ray tasks, each by ``train_one`` (``runner.train``, passed
  in: the runner imports this module, which so does not import it back); yields ``(index, result, seconds,
  error)`` as each ends, ``error`` the run's own exception or Ray's (a run lost more often than ``retries``).
  Stopped early (Ctrl-C, the caller's error), it cancels the runs not yet ended: their workdirs keep their last
  checkpoints."""
  with session(options) as ray:
    gpus = ray.cluster_resources().get('GPU', 0)
    res = resources(options, gpus)
    if not _fits(ray, res):
      raise ValueError(f'no node of the Ray cluster has {res["num_cpus"]:g} CPUs and {res["num_gpus"]:g} GPUs for a '
                       'run: lower --cpus_per_run or --gpus_per_run (--gpus_per_run=0: on CPUs)')
    where = options.address or 'this machine'
    print(f'== {len(jobs)} runs on Ray ({where}): CPUs {res["num_cpus"]:g} a run, '
          f'{ray.cluster_resources().get("CPU", 0):g} in all; GPUs {res["num_gpus"]:g} a run, {gpus:g} in all',
          flush=True)
    task = ray.remote(_task)
    placed = dict(res, max_retries=options.retries, retry_exceptions=False,
                  runtime_env={'env_vars': run_env(res['num_gpus'], gpus, os.environ)})
    refs = {task.options(name=run.name, **placed).remote(train_one, config, run.workdir, fresh,
                                                                           provenance, run.on_epoch): index
            for index, run, config, fresh in jobs}
    try:
      while refs:
        done, _ = ray.wait(list(refs), num_returns=1)
        index = refs.pop(done[0])
        try:
          result, seconds = ray.get(done[0])
        except ray.exceptions.RayTaskError as e:
          yield index, None, 0.0, _cause(e)
        except ray.exceptions.RayError as e:
          yield index, None, 0.0, e
        else:
          yield index, result, seconds, None
    finally:
      for ref in refs:
        ray.cancel(ref, force=True)
