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
"""

from __future__ import annotations

import dataclasses
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
  and resumes)."""
  name: str
  config: Any
  record: Path
  workdir: str

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
            recipe: Callable[[Path], Any] = config_lib.from_record, seconds: bool = False) -> list[Outcome]:
  """Takes each of ``runs`` in turn (module docstring); returns their ``Outcome`` in the same order.

  ``writer(path, result)`` writes a record (default ``write_json``); ``recipe(path)`` is the config that reruns a
  record (default ``config_lib.from_record``: the caller's may point its data at this machine). ``supersede``: the
  folder where records rerun for want of predictions go; ``verify``: the result keys to compare with the existing
  records (not with ``supersede``). ``seconds``: print each run's wall time after it (``   12s``)."""
  if supersede is not None and verify:
    raise ValueError('verify writes nothing and supersede replaces records: choose one')
  outcomes = []
  for run in runs:
    start = time.perf_counter()
    try:
      if verify:
        outcome = _verify(run, verify, recipe)
      elif supersede is not None and (run.record.exists() or (Path(supersede) / run.record.name).exists()):
        outcome = _supersede(run, Path(supersede), writer, recipe)
      elif run.record.exists():
        outcome = Outcome(run, 'done')
      else:
        print(f'== {run.name}', flush=True)
        result = _train(run.build(), run.workdir)
        writer(run.record, result)
        outcome = Outcome(run, 'trained', result)
    except SystemExit:  # a refusal that says what to do (supersede: two replaced records of one run)
      raise
    except BaseException as e:  # Ctrl-C too: the workdir keeps the run's last checkpoint
      _name(e, run)
      raise
    outcome.seconds = time.perf_counter() - start
    if seconds:
      print(f'   {outcome.seconds:.0f}s', flush=True)
    outcomes.append(outcome)
  return outcomes


def _train(config, workdir: str) -> dict:
  from implicit_jax.engine import train  # pylint: disable=import-outside-toplevel  (jax: only once a run trains)
  return train.train_and_evaluate(config, workdir)


def _name(error: BaseException, run: Run) -> None:
  """Says which run ``error`` stopped: a line on stderr, and a note on the error (shown in its traceback)."""
  what = 'cut short' if isinstance(error, KeyboardInterrupt) else f'failed ({type(error).__name__})'
  line = f'run {run.name} {what}: record {run.record}, workdir {run.workdir} (the same call resumes it from there)'
  print(line, file=sys.stderr, flush=True)
  if hasattr(error, 'add_note'):
    error.add_note(line)


def _supersede(run: Run, folder: Path, writer, recipe) -> Outcome:
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
  result = _train(config, run.workdir)
  writer(new, result)
  _replace(out, replaced, new, folder)
  return Outcome(run, 'superseded', result)


def _replace(out: Path, replaced: Path, new: Path, folder: Path) -> None:
  """The old record ``out`` into ``folder`` (unless already there), then the rerun's record ``new`` in its place."""
  if out.exists():
    if replaced.exists():
      raise SystemExit(f'{out.name}: {replaced} already holds a replaced record of this run; move one of the two '
                       f'away (the rerun\'s record is {new})')
    folder.mkdir(parents=True, exist_ok=True)
    out.replace(replaced)
  new.replace(out)


def _verify(run: Run, keys, recipe) -> Outcome:
  """Reruns ``run.record`` from its recipe in a fresh ``run.workdir`` and compares ``keys``."""
  if not run.record.exists():
    print(f'== {run.name}: no committed record to verify against', flush=True)
    return Outcome(run, 'missing')
  print(f'== {run.name}', flush=True)
  shutil.rmtree(run.workdir, ignore_errors=True)  # a verification is a whole run, never a resumed one
  result, recorded = _train(recipe(run.record), run.workdir), read_json(run.record)
  values = {k: (recorded[k], result[k]) for k in keys}
  print(f'   verify {run.name}: ' + ', '.join(
      f'{k} {a:.6g} -> {b:.6g}' + ('' if a == b else f' ({b - a:+.2g})') for k, (a, b) in values.items()), flush=True)
  return Outcome(run, 'verified', result, recorded, values)
