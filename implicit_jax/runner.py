"""Runs a list of training runs, each to a record file: the one run loop of every script that makes records.

A run is a name (for its progress line), a config, the path of its record and a workdir. ``run_all`` takes each
in turn and:

* skips it when its record exists (a list can be stopped and restarted at any point);
* otherwise trains it with ``train_and_evaluate`` in its workdir, which resumes a run cut short there from its last
  checkpoint, and writes its record through ``writer(path, result)`` (by default ``write_json``: the result as
  JSON, atomically);
* with ``supersede=FOLDER``, reruns an existing record that keeps no predictions from its own recipe (the record's
  config, ``recipe``) instead of skipping it: the new record is written first, and only then does the old one move
  to FOLDER, so that a rerun killed at any point leaves the old record where it was and the same call resumes it;
* with ``verify=KEYS``, reruns each existing record from its recipe in a fresh workdir and compares the KEYS of the
  rerun's result with the record's, writing nothing.

Each run prints ``== NAME`` when it starts; an error, or Ctrl-C, names the run, its record and its workdir. The
runner knows nothing of what the records are for: the scripts that make tables (experiments/) give it their runs,
their own writer and recipe.

With ``ray=RayOptions(...)`` (implicit_jax.ray_runs; Ray is the extra ``.[scale]``), every run is planned here as
above, then the runs left to train go at once, each a Ray task in its own workdir, on this machine or a cluster; a
run lost with its node is retried and resumes from its last checkpoint, and every record is still written here, by
``writer``, as its run ends.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any, Callable, Sequence

from implicit_jax.engine import config as config_lib, workdir as workdir_lib

# A record keeps predictions under this key when its evaluator keeps decisions (engine/predictions.py): a record
# without it cannot be rescored, and ``supersede`` reruns it.
PREDICTIONS = 'predictions'


@dataclasses.dataclass
class Run:
  """One run: ``name`` (its progress line), ``config`` (a ConfigDict, or a function of no arguments that builds
  it, called only when the run trains), ``record`` (the file its record goes to) and ``workdir`` (where it trains
  and resumes). ``on_epoch``: ``train_and_evaluate``'s hook after each epoch's dev evaluation (picklable, for Ray),
  which may stop the run by raising (``implicit_jax.tune``'s pruning)."""
  name: str
  config: Any
  record: Path
  workdir: str
  on_epoch: Any = None

  def __post_init__(self):
    self.record = Path(self.record)
    self.workdir = str(self.workdir)

  def build(self):
    return self.config() if callable(self.config) else self.config


@dataclasses.dataclass
class Outcome:
  """What ``run_all`` did with a run: ``status`` is 'done' (its record existed: skipped), 'trained', 'superseded'
  (rerun from its record, the old one moved aside), 'kept' (``supersede``: the record keeps its predictions),
  'verified' or 'missing' (``verify``: no record to verify). ``result``: the training's result; with ``verify``,
  ``record`` is the existing record and ``values`` ``{key: (recorded, rerun)}``."""
  run: Run
  status: str
  result: dict | None = None
  record: dict | None = None
  values: dict | None = None
  seconds: float = 0.0

  @property
  def identical(self) -> bool:
    return bool(self.values is not None and all(a == b for a, b in self.values.values()))


def write_json(path, result: dict) -> None:
  """The default writer: ``result`` as indented JSON at ``path``, atomically (the workdir's own writer), its folder
  made if need be."""
  Path(path).parent.mkdir(parents=True, exist_ok=True)
  workdir_lib.write_json(str(path), result)


def read_json(path) -> dict:
  record = workdir_lib.read_json(str(path))
  if not isinstance(record, dict):
    raise ValueError(f'{path}: not a run record (a JSON {type(record).__name__}, not an object)')
  return record


def staged(record: Path) -> Path:
  """Where ``supersede`` writes a rerun's record before the old one moves aside: beside it, ``NAME.new``."""
  return record.with_name(record.name + '.new')


def run_all(runs: Sequence[Run], *, writer: Callable[[Path, dict], None] = write_json,
            supersede: str | os.PathLike | None = None, verify: Sequence[str] = (),
            recipe: Callable[[Path], Any] = config_lib.from_record, seconds: bool = False,
            provenance: Callable[[], dict] | None = None, ray=None) -> list[Outcome]:
  """Takes each of ``runs`` in turn (module docstring); returns their ``Outcome`` in the same order.

  ``writer(path, result)`` writes a record (default ``write_json``); ``recipe(path)`` is the config that reruns a
  record (default ``config_lib.from_record``: the caller's may point its data at this machine). ``supersede``: the
  folder where records rerun for want of predictions go; ``verify``: the result keys to compare with the existing
  records (not with ``supersede``). ``seconds``: print each run's wall time after it (``   12s``). ``provenance()``:
  what the process that trained a run says of itself (its device, its machine), added to the run's result before
  the writer sees it; called where the run trained, which on Ray is not this process.

  ``ray``: an ``implicit_jax.ray_runs.RayOptions``: every run is planned here first (skipped, kept, or read from its
  record), then those left train at once as Ray tasks, each record written here as its run ends (ray_runs). A run
  that fails is named when it does and the others go on; the first failure is raised once they have ended. A
  caller making several calls (a tune's trials) may hold ``ray_runs.session(options)`` around them: the calls then
  share one Ray instead of each starting its own."""
  if supersede is not None and verify:
    raise ValueError('verify writes nothing and supersede replaces records: choose one')
  plan = functools.partial(_plan, writer=writer, supersede=supersede, verify=verify, recipe=recipe)
  if ray is not None:
    return _on_ray(runs, plan, ray, seconds, provenance)
  outcomes = []
  for run in runs:
    start = time.perf_counter()
    with _naming(run):
      step = plan(run)
      outcome = step if isinstance(step, Outcome) else step.finish(
          train(step.config, run.workdir, fresh=step.fresh, provenance=provenance, on_epoch=run.on_epoch))
    outcome.seconds = time.perf_counter() - start
    if seconds:
      print(f'   {outcome.seconds:.0f}s', flush=True)
    outcomes.append(outcome)
  return outcomes


@dataclasses.dataclass
class _Job:
  """A run to train: its ``config``, whether its workdir starts ``fresh`` (verify) and ``finish(result)``, what
  the driver does with its result (write its record, move the old one, compare), giving its Outcome."""
  config: Any
  fresh: bool
  finish: Callable[[dict], Outcome]


def _plan(run: Run, *, writer, supersede, verify, recipe) -> Outcome | _Job:
  """What ``run`` needs: an Outcome when nothing is to train, else the _Job that trains it."""
  if verify:
    return _verify(run, verify, recipe)
  if supersede is not None and (run.record.exists() or (Path(supersede) / run.record.name).exists()):
    return _supersede(run, Path(supersede), writer, recipe)
  if run.record.exists():
    return Outcome(run, 'done')
  print(f'== {run.name}', flush=True)

  def finish(result):
    writer(run.record, result)
    return Outcome(run, 'trained', result)
  return _Job(run.build(), False, finish)


@contextlib.contextmanager
def _naming(run: Run):
  try:
    yield
  except SystemExit:  # a refusal that says what to do (supersede: two replaced records of one run)
    raise
  except BaseException as e:  # Ctrl-C too: the workdir keeps the run's last checkpoint
    _name(e, run)
    raise


def _on_ray(runs, plan, options, seconds, provenance) -> list[Outcome]:
  """``runs`` planned here, trained as Ray tasks (implicit_jax.ray_runs), finished here as each ends."""
  from implicit_jax import ray_runs  # pylint: disable=import-outside-toplevel  (an extra: only when asked for)
  outcomes, jobs = [None] * len(runs), {}
  for index, run in enumerate(runs):
    with _naming(run):
      step = plan(run)
    if isinstance(step, Outcome):
      outcomes[index] = step
    else:
      jobs[index] = step
  if not jobs:  # every record there: no Ray to start
    return outcomes
  _refuse_shared([runs[i] for i in jobs])
  failures = []
  trained = ray_runs.train([(i, runs[i], job.config, job.fresh) for i, job in jobs.items()], options, train,
                             provenance)
  try:
    # closed on the way out whatever happens, so that the runs still going are cancelled then, not when the
    # traceback that holds this frame is freed
    with contextlib.closing(trained):
      for index, result, spent, error in trained:
        run = runs[index]
        if error is None:
          try:
            outcomes[index] = jobs[index].finish(result)
          except Exception as e:  # pylint: disable=broad-except  (named below; the other runs go on)
            error = e
        del jobs[index]
        if error is not None:
          _name(error, run)
          failures.append(error)
          continue
        outcomes[index].seconds = spent
        print(f'== {run.name}: done' + (f', {spent:.0f}s' if seconds else ''), flush=True)
  except KeyboardInterrupt as e:
    for index in jobs:  # cancelled: each keeps its last checkpoint
      _name(e, runs[index])
    raise
  if failures:
    if len(failures) > 1 and hasattr(failures[0], 'add_note'):
      failures[0].add_note(f'{len(failures) - 1} other run(s) failed too (named above)')
    raise failures[0]
  return outcomes


def _refuse_shared(runs: Sequence[Run]) -> None:
  """Runs trained at once cannot share a workdir (its lock would stop the second) or a record (written twice)."""
  for what in ('workdir', 'record'):
    seen = {}
    for run in runs:
      key = str(getattr(run, what))
      if key in seen:
        raise ValueError(f'runs {seen[key]!r} and {run.name!r} share the {what} {key}: runs made at once need '
                         'their own')
      seen[key] = run.name


def train(config, workdir: str, fresh: bool = False, provenance: Callable[[], dict] | None = None,
          on_epoch=None) -> dict:
  """Trains one run in this process: ``train_and_evaluate`` in ``workdir`` (emptied first when ``fresh``, given
  ``on_epoch`` when there is one), its result with what ``provenance()`` says of this process."""
  from implicit_jax.engine import train as engine  # pylint: disable=import-outside-toplevel  (jax: only to train)
  if fresh:  # a verification is a whole run, never a resumed one
    shutil.rmtree(workdir, ignore_errors=True)
  result = (engine.train_and_evaluate(config, workdir) if on_epoch is None else
            engine.train_and_evaluate(config, workdir, on_epoch=on_epoch))
  if provenance is not None:
    result.update(provenance())
  return result


def _name(error: BaseException, run: Run) -> None:
  """Says which run ``error`` stopped: a line on stderr, and a note on the error (shown in its traceback)."""
  what = 'cut short' if isinstance(error, KeyboardInterrupt) else f'failed ({type(error).__name__})'
  line = f'run {run.name} {what}: record {run.record}, workdir {run.workdir} (the same call resumes it from there)'
  print(line, file=sys.stderr, flush=True)
  if hasattr(error, 'add_note'):
    error.add_note(line)


def _supersede(run: Run, folder: Path, writer, recipe) -> Outcome | _Job:
  """Reruns ``run.record`` from its own recipe when it keeps no predictions (module docstring)."""
  out, replaced, new = run.record, folder / run.record.name, staged(run.record)
  if new.exists():  # the rerun was written, the old record not yet moved aside (or the new one not yet in place)
    _replace(out, replaced, new, folder)
    return Outcome(run, 'superseded', read_json(out))
  if out.exists() and read_json(out).get(PREDICTIONS):
    return Outcome(run, 'kept')
  if out.exists() and replaced.exists():
    raise SystemExit(f'{out.name}: {replaced} already holds a replaced record of this run; move one of the two away '
                     'before rerunning it')
  print(f'== {run.name} (rerun from its record: it keeps no predictions)', flush=True)
  config = recipe(out if out.exists() else replaced)  # replaced alone: its rerun's record was removed since
  config.config_file = str(replaced)  # the new record names the old one, where it will be, as its recipe

  def finish(result):
    writer(new, result)
    _replace(out, replaced, new, folder)
    return Outcome(run, 'superseded', result)
  return _Job(config, False, finish)


def _replace(out: Path, replaced: Path, new: Path, folder: Path) -> None:
  """The old record ``out`` into ``folder`` (unless already there), then the rerun's record ``new`` in its place."""
  if out.exists():
    if replaced.exists():
      raise SystemExit(f'{out.name}: {replaced} already holds a replaced record of this run; move one of the two '
                       f'away (the rerun\'s record is {new})')
    folder.mkdir(parents=True, exist_ok=True)
    out.replace(replaced)
  new.replace(out)


def _verify(run: Run, keys, recipe) -> Outcome | _Job:
  """Reruns ``run.record`` from its recipe in a fresh ``run.workdir`` and compares ``keys``."""
  if not run.record.exists():
    print(f'== {run.name}: no committed record to verify against', flush=True)
    return Outcome(run, 'missing')
  print(f'== {run.name}', flush=True)
  config = recipe(run.record)

  def finish(result):
    recorded = read_json(run.record)
    values = {k: (recorded[k], result[k]) for k in keys}
    print(f'   verify {run.name}: ' + ', '.join(
        f'{k} {a:.6g} -> {b:.6g}' + ('' if a == b else f' ({b - a:+.2g})') for k, (a, b) in values.items()),
        flush=True)
    return Outcome(run, 'verified', result, recorded, values)
  return _Job(config, True, finish)
