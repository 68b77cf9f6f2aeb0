"""The workdir: Orbax checkpoints of a run, resuming it, and loading a trained model back.

Layout::

  workdir/config.json      what the run's config records (``config.recorded``); a resumed run must match it in
                           every field that changes results (``config.compare``)
  workdir/checkpoints/<s>/ training state at step s (parameters, optimiser states, step) and the loop record
                           (history, training log, best-on-dev so far, seconds spent); the last two are kept
  workdir/best/<s>/        the best-on-dev parameters, found at step s
  workdir/metrics.json     the final result (``train.train_and_evaluate``), with the step of the best-on-dev
                           parameters it was computed from (``load_trained`` uses it only with those)
  workdir/metrics.previous.json  the result of a finished run that was then extended, until the extension ends
  workdir/metrics.jsonl    every logged scalar, a JSON line each (``writers.py``)
  workdir/data.json        the fingerprint of the data the run trains on (``workdir.py``)
  workdir/lock             held by the training process (``workdir.py``); readers take no lock
  workdir/corrupt/         checkpoints found unreadable, moved aside (the one before each was used)

Orbax writes each checkpoint into a temporary directory and renames it when complete, so a run killed at any
moment leaves the previous checkpoint intact. Everything a step depends on is a function of (config, step):
the data order of epoch e is seeded by (seed, e) and the step's randomness is ``fold_in(key, step)``, so the
state and loop record are all a resumed run needs to continue exactly as an uninterrupted one.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import logging
import os
import shutil
import signal
import sys
import threading
import time
from typing import Any, Callable

import jax
import ml_collections
import numpy as np
import orbax.checkpoint as ocp
from absl import logging as absl_logging
from etils import epath

from implicit_jax.engine import (config as config_lib, data, multihost, workdir as workdir_lib,
                                 xla_options)


@contextlib.contextmanager
def _interrupts_deferred():
  """Ctrl-C during a save takes effect once the save has ended. Interrupted, Orbax leaves its temporary folder
  behind and its worker threads, finding their executor shut down, print tracebacks on the way out; a save takes
  a moment, so the interrupt is only delayed by that much. Python handles signals in the main thread only."""
  if threading.current_thread() is not threading.main_thread():
    yield
    return
  caught = []
  previous = signal.signal(signal.SIGINT, lambda signum, frame: caught.append(signum))
  try:
    yield
  finally:
    signal.signal(signal.SIGINT, previous)
    if caught:
      signal.raise_signal(signal.SIGINT)  # to the handler the run had: KeyboardInterrupt, as if it came now


class OtherShapes(ValueError):
  """A checkpoint does not fit the model built now (other data or config): not damage."""


def _manager(path: str, keep: int, read_only: bool = False) -> ocp.CheckpointManager:
  # Synchronous saves: a checkpoint is on disk before the loop moves on, which the exact-resume guarantee needs.
  # Orbax logs an error for each damaged checkpoint it lists; restore() reports those in one line, so hush it.
  # It also warns about read-only managers.
  _hush_closed_loop_callbacks()
  with _orbax_quiet():
    if read_only:
      # A reader (evaluate, predict, notebooks) creates, deletes and cleans nothing: a training run may be
      # writing beside it, and cleaning would remove its save in progress.
      return _beside_a_writer(lambda: ocp.CheckpointManager(os.path.abspath(path), options=ocp.CheckpointManagerOptions(
          max_to_keep=None, save_interval_steps=0, enable_async_checkpointing=False, create=False,
          read_only=True, cleanup_tmp_directories=False)))
    if jax.process_index() == 0:  # only process 0 writes
      _remove_partial_saves(path)
    return ocp.CheckpointManager(os.path.abspath(path), options=ocp.CheckpointManagerOptions(
        max_to_keep=keep, enable_async_checkpointing=False, create=True, cleanup_tmp_directories=False))


def _remove_partial_saves(folder: str) -> None:
  """A save cut short by a kill leaves Orbax's temporary folder (``<step>.orbax-checkpoint-tmp-<time>``): the
  trainer, which holds the workdir's lock, removes them here. (Orbax's own clean-up runs in a thread that a run
  failing in its first steps can outlive, which printed a traceback at exit.)"""
  if os.path.isdir(folder):
    for name in os.listdir(folder):
      if '.orbax-checkpoint-tmp' in name:
        shutil.rmtree(os.path.join(folder, name), ignore_errors=True)


def _beside_a_writer(fn, attempts: int = 10):
  """``fn()``, again when it fails because a step folder vanished while it was listed: a trainer beside a reader
  deletes its older checkpoints (it keeps two). A folder removed between Orbax's ``exists()`` and ``is_dir()`` reads
  as NotADirectoryError, the same race."""
  for attempt in range(attempts):
    try:
      return fn()
    except (FileNotFoundError, NotADirectoryError):
      if attempt == attempts - 1:
        raise
      time.sleep(0.05)


@contextlib.contextmanager
def _orbax_quiet():
  level = absl_logging.get_verbosity()
  absl_logging.set_verbosity(absl_logging.FATAL)
  try:
    yield
  finally:
    absl_logging.set_verbosity(level)


def _wait_for_orbax_workers(timeout: float = 10.0) -> None:
  """Joins Orbax's worker threads (a failed save leaves some still reporting it)."""
  deadline = time.monotonic() + timeout
  for thread in threading.enumerate():
    if thread is not threading.current_thread() and type(thread).__module__.startswith('orbax'):
      thread.join(max(0.0, deadline - time.monotonic()))


def _hush_closed_loop_callbacks() -> None:
  """Tensorstore completes a write Orbax stopped waiting for (after another write failed) by calling back into an
  event loop already closed: each callback prints a 'RuntimeError: Event loop is closed' traceback from a
  tensorstore thread, possibly after the run's own error line. They say nothing the error does not: dropped."""
  previous = sys.unraisablehook
  if getattr(previous, 'hushes_closed_loops', False):
    return

  def hook(unraisable):
    if not (isinstance(unraisable.exc_value, RuntimeError) and str(unraisable.exc_value) == 'Event loop is closed'
            and threading.current_thread() is not threading.main_thread()):
      previous(unraisable)

  hook.hushes_closed_loops = True
  sys.unraisablehook = hook


class _Unretrieved(logging.Filter):
  def filter(self, record: logging.LogRecord) -> bool:
    return 'exception was never retrieved' not in record.getMessage()


def _hush_unretrieved_futures() -> None:
  """After a failed save, asyncio logs each of Orbax's writes that failed the same way and that nobody awaited
  ('Future exception was never retrieved', with a traceback) when it is collected, at exit: after the run's own
  error line, and saying nothing more."""
  logger = logging.getLogger('asyncio')
  if not any(isinstance(f, _Unretrieved) for f in logger.filters):
    logger.addFilter(_Unretrieved())


def _path_names(tree) -> dict:
  """``{'params.phi.Dense_0.kernel': shape}`` for the arrays of a pytree or of Orbax's metadata of one: the same
  names for a dataclass field, a named tuple's and a dict key (Orbax stores all three as dict keys)."""
  def name(key):
    for attr in ('key', 'name', 'idx'):
      if hasattr(key, attr):
        return str(getattr(key, attr))
    return str(key)

  leaves = jax.tree_util.tree_flatten_with_path(tree)[0]
  return {'.'.join(name(k) for k in path): tuple(leaf.shape) for path, leaf in leaves
          if getattr(leaf, 'shape', None) is not None}


def _saved_tree(where: str):
  """The tree of array metadata Orbax keeps in checkpoint folder ``where``, or None when it cannot be read (then
  the checkpoint is damaged, which its restore reports)."""
  try:
    with _orbax_quiet():
      metadata = ocp.PyTreeCheckpointHandler().metadata(epath.Path(where))
  except Exception:  # pylint: disable=broad-except
    return None
  return getattr(metadata, 'tree', metadata)


def _other_shapes(saved_tree, abstract) -> str | None:
  """The first array whose saved shape (``saved_tree``, ``_saved_tree``'s) differs from ``abstract``'s (the model
  as built from today's config and data), as ``name: saved (a, b), now (c, d)``; None when all that can be
  compared agree or the metadata could not be read."""
  if saved_tree is None:
    return None
  saved, now = _path_names(saved_tree), _path_names(abstract)
  for name in sorted(set(saved) & set(now)):
    if saved[name] != now[name]:
      return f'{name}: saved {saved[name]}, now {now[name]}'
  # Another set of arrays is another network (a layer more or less, another method), not damage.
  only_saved, only_now = sorted(set(saved) - set(now)), sorted(set(now) - set(saved))
  if only_saved or only_now:
    return '; '.join(([f'saved {only_saved[0]}, which the model built now lacks'] if only_saved else []) +
                     ([f'the model built now has {only_now[0]}, not saved'] if only_now else []))
  return None


def _as_saved(abstract_state, saved):
  """``abstract_state`` in the layout of the training state saved as ``saved`` (``_saved_tree``'s). A state saved
  before solver memory
  was a field of its own (``State.memory``) has no ``memory`` entry, and kept the memory, if any, in
  ``opt_state['solver']`` (the same arrays): it is read as a dict of the fields it has, in that layout, and
  ``_as_today`` makes it today's state, so that those runs resume."""
  if not dataclasses.is_dataclass(abstract_state) or not hasattr(abstract_state, 'memory'):
    return abstract_state
  if not isinstance(saved, dict) or 'memory' in saved:  # today's layout, or unreadable: the restore reports it
    return abstract_state
  fields = {f.name: getattr(abstract_state, f.name) for f in dataclasses.fields(abstract_state) if f.name != 'memory'}
  if abstract_state.memory is not None and isinstance(fields['opt_state'], dict):
    fields['opt_state'] = {**fields['opt_state'], 'solver': abstract_state.memory}
  return fields


def _as_today(state, abstract_state):
  """``state`` read in ``_as_saved``'s layout, in today's (``abstract_state``'s)."""
  if not isinstance(state, dict) or isinstance(abstract_state, dict):
    return state
  fields, memory = dict(state), None
  if abstract_state.memory is not None:
    fields['opt_state'] = dict(fields['opt_state'])
    memory = fields['opt_state'].pop('solver')
  return abstract_state.replace(**fields, memory=memory)


def _first_line(error: Exception) -> str:
  text = str(error).strip().splitlines()
  return f'{type(error).__name__}: {text[0][:200] if text else ""}'


# The workdir's JSON files, read and written as its guards read and write them (workdir.py).
write_json, read_json = workdir_lib.write_json, workdir_lib.read_json


def has_checkpoint(workdir: str) -> bool:
  """Whether a training state was ever saved in ``workdir`` (a step folder under ``checkpoints/``)."""
  folder = os.path.join(workdir, 'checkpoints')
  return os.path.isdir(folder) and any(name.isdigit() for name in os.listdir(folder))


def check_config(workdir: str, record: dict, parts: config_lib.Parts) -> bool:
  """Checks that the run whose config records ``record`` (``config.Parts.recorded``) may start or continue the run
  of ``workdir``; True when the workdir already holds this run.

  Raises ValueError naming the fields that differ. A record whose run never saved a checkpoint (a start that
  failed, or was killed, before its first save) holds no work: it is replaced (``open_run`` writes the new one).
  ``parts``: the config's task and method, resolved (``config.check``'s return), to compare with.
  """
  path = os.path.join(workdir, 'config.json')
  if not os.path.exists(path):
    return False
  try:
    diff = parts.compare(read_json(path), record)
  except config_lib.NewerRecord as e:
    raise config_lib.NewerRecord(f'{path} {e}') from None
  if not diff:
    return True
  if has_checkpoint(workdir):
    raise ValueError(f'workdir {workdir} holds a run with a different config: {", ".join(diff[:5])}'
                     f'{" ..." if len(diff) > 5 else ""}; resume with the same config or use a new workdir')
  print(f'{path}: replacing the record of a run that saved no checkpoint', flush=True)
  return False


def open_run(workdir: str, record: dict, parts: config_lib.Parts, task, total_steps: int, steps_per_epoch: int,
             primary: bool = True, digests: dict | None = None) -> tuple[Checkpointer, bool]:
  """The workdir taken over by a training run: the run checked against the workdir's (its config,
  ``check_config``; its length, against the latest checkpoint's step; its data, ``workdir.check_data``) and its
  records written: ``config.json`` (``record``, in the current format, with the latest ``num_epochs`` and logging
  settings) and ``data.json``. Returns the run's ``Checkpointer`` and whether the workdir held this run already.

  In a multi-host run every process checks, and only process 0 (``primary``) writes, once all have read the records
  it rewrites. ``digests``: the data's fingerprint where the processes compared it (``multihost.agree_on_data``).
  """
  existing = check_config(workdir, record, parts)
  ckpt = Checkpointer(workdir)
  try:
    latest = ckpt.latest_step() if existing else None
    if latest is not None and latest > total_steps:  # a shorter run would rewrite the record of a longer one
      raise ValueError(f'workdir {workdir} holds a run trained to step {latest} (epoch {latest // steps_per_epoch}); '
                       f'config.num_epochs={total_steps // steps_per_epoch} ends at step {total_steps}. Give '
                       f'num_epochs >= {-(-latest // steps_per_epoch)} to continue it, or read it with '
                       'implicit_jax.evaluate')
    multihost.sync('implicit_jax: run checked')
    if primary:
      write_json(os.path.join(workdir, 'config.json'), record)
    workdir_lib.check_data(workdir, task, resuming=existing, write=primary, digests=digests)
  except BaseException:
    ckpt.close()
    raise
  return ckpt, existing


def set_aside_earlier_result(workdir: str, total_steps: int) -> None:
  """A ``metrics.json`` of a run that ended at another step (a finished run now extended with more epochs) holds a
  best epoch and a calibration chosen for parameters this run may replace: kept as ``metrics.previous.json`` until
  this run writes its own, so that no reader pairs it with the parameters being trained."""
  path = os.path.join(workdir, 'metrics.json')
  if not os.path.exists(path):
    return
  old = read_json(path)
  if isinstance(old, dict) and old.get('steps') == total_steps:
    return  # this run's own result (a finished run started again): rewritten, the same, at its end
  aside = os.path.join(workdir, 'metrics.previous.json')
  os.replace(path, aside)
  ended = f'at step {old["steps"]}' if isinstance(old, dict) and 'steps' in old else 'earlier'
  print(f'{path}: the result of the run as it ended {ended} moved to {aside}; this run writes its own at step '
        f'{total_steps}', flush=True)


def _host(tree):
  """What a save writes. In a multi-host run the state is replicated, and Orbax would split a replicated
  ``jax.Array``'s writing among the processes: a host copy (numpy) is written by process 0 alone."""
  return jax.device_get(tree) if jax.process_count() > 1 else tree


class Checkpointer:
  """The run's two checkpoint series: the latest training state and the best-on-dev parameters."""

  def __init__(self, workdir: str, keep: int = 2, read_only: bool = False):
    self.workdir, self.read_only = os.path.abspath(workdir), read_only
    self.directory = os.path.join(os.path.abspath(workdir), 'checkpoints')
    self._keep, self._latest_manager = keep, None
    # Two best checkpoints: the one the loop record points to survives a kill right after a newer one is saved.
    self._best = _manager(os.path.join(workdir, 'best'), 2, read_only)

  @property
  def _latest(self) -> ocp.CheckpointManager:
    if self._latest_manager is None:  # opened when first used: readers of the best parameters never list it
      self._latest_manager = _manager(self.directory, self._keep, self.read_only)
    return self._latest_manager

  def latest_step(self) -> int | None:
    return self._latest.latest_step()

  def save(self, state, loop: dict) -> None:
    step = int(state.step)
    if step in self._latest.all_steps():
      return
    with self._writing(f'checkpoint at step {step} to {self.directory}'):
      self._latest.save(step, args=ocp.args.Composite(state=ocp.args.StandardSave(_host(state)),
                                                      loop=ocp.args.JsonSave(loop)))

  @contextlib.contextmanager
  def _writing(self, what: str):
    """A save that fails (a full disk, a folder gone) ends in one OSError naming it, its cause and the checkpoint
    a rerun resumes from. Orbax's worker threads each log the same failure with a traceback (a dozen or more on a
    full disk) while the main thread gets it too: they are hushed until they have ended."""
    last = self._latest.latest_step()
    try:
      with _orbax_quiet(), _interrupts_deferred():
        try:
          yield
        except BaseException:
          _wait_for_orbax_workers()
          _hush_unretrieved_futures()
          raise
    except (OSError, ValueError) as e:  # tensorstore reports a failed write as a ValueError
      if multihost.lost_peer(e):  # the save's collective, not its write: another process of the run is gone
        raise
      fix = 'free space' if workdir_lib.os_errno(e) in (errno.ENOSPC, errno.EDQUOT) else 'fix that'
      then = (f'the last good checkpoint is step {last} ({self.directory}/{last}); {fix} and rerun the same command '
              'to resume from it' if last is not None else
              f'no checkpoint was saved yet; {fix} and rerun the same command to start the run again')
      raise workdir_lib.disk_error(f'{what} failed', e, then) from None

  def restore(self, abstract_state):
    """``(state, loop)`` of the latest readable checkpoint, or None when there is none. An unreadable one (a
    damaged disk, files emptied by hand, a loop record without what the loop reads) is named in a warning and
    moved to ``workdir/corrupt/``, and the one before it is used: the run repeats the steps in between, with the
    same result."""
    for step in sorted(self._latest.all_steps(), reverse=True):
      saved = self._saved(self._latest, step)
      abstract = _as_saved(abstract_state, saved)
      self._refuse_other_shapes(self._latest, step, saved, abstract, 'training state')
      try:
        with _orbax_quiet():  # a damaged checkpoint is reported below, in one line
          out = self._latest.restore(step, args=ocp.args.Composite(
              state=ocp.args.StandardRestore(abstract), loop=ocp.args.JsonRestore()))
        _check_loop(out.loop, step)
        return _as_today(out.state, abstract_state), out.loop
      except Exception as e:  # pylint: disable=broad-except  # any failure to read it means the same
        self._set_aside(self._latest, step, e)
    if self._latest.all_steps():
      raise ValueError(f'no readable checkpoint under {self.directory}')
    return None

  def save_best(self, step: int, params) -> None:
    if step in self._best.all_steps():
      return
    with self._writing(f'best-on-dev parameters at step {step} to {self._best.directory}'):
      self._best.save(step, args=ocp.args.Composite(params=ocp.args.StandardSave(_host(params))))

  @property
  def directory_of_best(self) -> str:
    return str(self._best.directory)

  def restore_best(self, abstract_params, step: int | None = None, with_step: bool = False):
    """The best-on-dev parameters saved at ``step``, or (None) the latest readable ones; ``with_step``:
    ``(params, step)``. A reader beside a training run may see a step listed and then deleted by the trainer (it
    keeps two): it lists again."""
    def read(s):
      self._refuse_other_shapes(self._best, s, self._saved(self._best, s), abstract_params, 'best-on-dev parameters')
      with _orbax_quiet():
        params = self._best.restore(s, args=ocp.args.Composite(params=ocp.args.StandardRestore(abstract_params))
                                    ).params
      return (params, s) if with_step else params

    if step is not None:
      try:
        return read(step)
      except OtherShapes:
        raise
      except Exception as e:  # pylint: disable=broad-except
        raise ValueError(f'best-on-dev parameters {self._best.directory}/{step} are unreadable '
                         f'({_first_line(e)})') from None
    for _ in range(5):
      steps = sorted(self._best.all_steps(), reverse=True)
      if not steps:
        best = str(self._best.directory)
        # A run that ended (metrics.json) or saved a checkpoint has finished an epoch: its best/ was removed since.
        workdir = os.path.dirname(best.rstrip('/'))
        ended = os.path.exists(os.path.join(workdir, 'metrics.json')) or has_checkpoint(workdir)
        why = ('the run has finished, so best/ was emptied or deleted since: restore it, or train again in a new '
               'workdir' if ended else 'the run has not finished its first epoch')
        raise FileNotFoundError(f'no best-on-dev parameters under {best} ({why})')
      for s in steps:
        try:
          return read(s)
        except OtherShapes:
          raise
        except Exception as e:  # pylint: disable=broad-except
          if os.path.exists(os.path.join(str(self._best.directory), str(s))):
            self._set_aside(self._best, s, e)  # damaged: try the one before it
            continue
          _beside_a_writer(self._best.reload)  # removed while we read: the trainer saved a newer best
          break
      else:
        break  # every listed one was damaged
    raise ValueError(f'no readable best-on-dev parameters under {self._best.directory}')

  def _saved(self, manager, step: int):
    """``_saved_tree`` of ``manager``'s checkpoint ``step`` (its parameters, or its training state)."""
    return _saved_tree(os.path.join(str(manager.directory), str(step), 'params' if manager is self._best else 'state'))

  def _refuse_other_shapes(self, manager, step: int, saved, abstract, what: str) -> None:
    """Checked before a restore, from Orbax's metadata (``saved``, ``_saved``'s): a checkpoint the model built now
    does not fit is not damaged, the data (a vocabulary, a label set of another size) or the config differ from the
    run's. One ValueError says so, and nothing is set aside (every checkpoint of the run would fail the same way).
    Checked before, not after a failed restore: that leaves Orbax's reads unfinished, each reported at exit."""
    where = os.path.join(str(manager.directory), str(step))
    differs = _other_shapes(saved, abstract)
    if differs:
      raise OtherShapes(f'the {what} in {where} do not fit the model built from the data and config read now '
                       f'({differs}): the data differ from the run\'s (a vocabulary or label set of another size), '
                       'or its config.json was changed after it ran; restore the run\'s data or point '
                       'config.data.data_dir (--data_dir) at it, and its config.json')

  def _set_aside(self, manager, step: int, error: Exception) -> None:
    where = os.path.join(str(manager.directory), str(step))
    if self.read_only or jax.process_index() > 0:  # a reader, or a process that leaves the workdir to process 0
      print(f'warning: checkpoint {where} is unreadable ({_first_line(error)}); using the one before it',
            file=sys.stderr, flush=True)
      return
    aside = os.path.join(self.workdir, 'corrupt', f'{os.path.basename(str(manager.directory))}-{step}')
    os.makedirs(os.path.dirname(aside), exist_ok=True)
    if os.path.exists(aside):
      shutil.rmtree(aside)
    os.replace(where, aside)
    manager.reload()
    print(f'warning: checkpoint {where} is unreadable ({_first_line(error)}); moved to {aside}, using the one '
          'before it', file=sys.stderr, flush=True)

  def close(self) -> None:
    if self._latest_manager is not None:
      self._latest_manager.close()
    self._best.close()


LOOP_RECORD = {'history': list, 'train_log': dict, 'best': (dict, type(None)), 'train_seconds': (int, float)}


def _check_loop(loop, step: int) -> None:
  """Raises ValueError when a checkpoint's loop record lacks what the loop reads. Defaults would not do: an empty
  history and no best epoch would silently select the best epoch among the epochs after ``step`` only."""
  if not isinstance(loop, dict):
    raise ValueError(f'its loop record is a {type(loop).__name__}, not an object')
  bad = [k for k, kind in LOOP_RECORD.items() if not isinstance(loop.get(k, ...), kind)]
  best = loop.get('best')
  if isinstance(best, dict) and not (isinstance(best.get('step'), int) and 0 < best['step'] <= step):
    bad.append('best.step')
  if bad:
    raise ValueError(f'its loop record lacks or mangles {", ".join(bad)}')


@dataclasses.dataclass
class Run:
  """A trained run loaded from its workdir (best-on-dev parameters)."""

  config: ml_collections.ConfigDict
  task: Any
  method: Any
  params: dict
  modules: dict
  metrics: dict | None
  workdir: str
  _predict: Callable | None = None

  def predict(self, inputs, batch_size: int | None = None):
    """Relaxed predictions for ``inputs``: a split's arrays (a dict; ``y`` is ignored) or, for tasks whose only
    input is ``x``, that array. Checked against the shapes the model was trained on."""
    arrays = dict(inputs) if isinstance(inputs, dict) else {'x': np.asarray(inputs)}
    expected = self.task.inputs(self.task.splits['train'])
    for key, ref in expected.items():
      if key not in arrays:
        raise ValueError(f'predict: no {key!r} in the inputs; the model reads {sorted(expected)}')
      shape = np.shape(arrays[key])
      fixed = [d for i, d in enumerate(ref.shape[1:], 1) if not (key in self.task.padded and i == 1)]
      got = [d for i, d in enumerate(shape[1:], 1) if not (key in self.task.padded and i == 1)]
      if len(shape) != ref.ndim or got != fixed:
        want = ', '.join(['N'] + [('T' if key in self.task.padded and i == 1 else str(d))
                                  for i, d in enumerate(ref.shape[1:], 1)])
        raise ValueError(f'predict: {key} has shape {shape}, the model expects [{want}]')
    if self._predict is None:
      self._predict = xla_options.jit(self.method.predict)
    arrays = {k: np.asarray(v, expected[k].dtype) for k, v in arrays.items() if k in expected}
    for key, value in arrays.items():
      first = data.first_non_finite(value)
      if first is not None:
        raise ValueError(f'predict: {key} holds NaN or Inf (first at index {first}: example {first[0]})')
    return data.predict(self.task, lambda b: self._predict(self.params, b), arrays,
                        batch_size or self.config.eval_batch_size)


def load_config(workdir: str) -> ml_collections.ConfigDict:
  """The run's full config: its record (``config.json``, any format) with defaults for fields added since."""
  path = os.path.join(workdir, 'config.json')
  if not os.path.exists(path):
    raise FileNotFoundError(f'{path} not found: {workdir} is not a training workdir')
  try:
    return config_lib.load(read_json(path))
  except config_lib.NewerRecord as e:
    raise config_lib.NewerRecord(f'{path} {e}') from None


def load_trained(workdir: str, config_overrides: dict | None = None, same_data: bool = False) -> Run:
  """Loads a run's config, task, method and best-on-dev parameters (``config_overrides``: e.g. a data_dir).
  ``same_data``: first refuse data whose fingerprint differs from the run's record (``workdir.check_unchanged``),
  which names the splits and files before a model of another shape fails to read the parameters. Reads only: safe
  beside a run that is still training in ``workdir``."""
  config = load_config(workdir)
  config.update_from_flattened_dict(config_overrides or {})
  parts = config_lib.parts_of(config.task, config.method)
  task = parts.make_task(config)
  if same_data:
    workdir_lib.check_unchanged(workdir, task)
  method = parts.build_method(task, config)
  abstract = jax.eval_shape(method.init, jax.random.key(0)).params
  ckpt = Checkpointer(workdir, read_only=True)
  try:
    params, step = ckpt.restore_best(abstract, with_step=True)
  finally:
    ckpt.close()
  metrics_path = os.path.join(workdir, 'metrics.json')
  metrics = None
  if os.path.exists(metrics_path):
    metrics = read_json(metrics_path)
    chosen = best_step_of(metrics)
    if chosen is not None and chosen != step:
      # Its threshold and best epoch were chosen for other parameters (a finished run extended with more epochs,
      # or a best checkpoint damaged since): pairing them with these would score something no run chose.
      print(f'warning: {metrics_path} is the result of the best-on-dev parameters of step {chosen}; those read are '
            f'of step {step} ({ckpt.directory_of_best}/{step}): its calibration is not used (evaluate chooses one on '
            'dev now)', file=sys.stderr, flush=True)
      metrics = None
  return Run(config, task, method, params, dict(method.modules), metrics, workdir)


def best_step_of(metrics) -> int | None:
  """The step of the best-on-dev parameters a ``metrics.json`` was computed from: recorded since runs extended
  past their end could leave it stale; for an older record, its best epoch times its steps per epoch."""
  if not isinstance(metrics, dict):
    return None
  if isinstance(metrics.get('best_step'), int):
    return metrics['best_step']
  epochs = (metrics.get('config') or {}).get('num_epochs')
  if isinstance(metrics.get('best_epoch'), int) and isinstance(metrics.get('steps'), int) and epochs:
    return metrics['best_epoch'] * (metrics['steps'] // epochs)
  return None

