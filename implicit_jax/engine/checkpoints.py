"""The workdir: Orbax checkpoints of a run, resuming it, and loading a trained model back.

Layout::

  workdir/config.json      what the run's config records (``config.recorded``); a resumed run must match it in
                           every field that changes results (``config.compare``)
  workdir/checkpoints/<s>/ training state at step s (parameters, optimiser states, step) and the loop record
                           (history, training log, best-on-dev so far, seconds spent); the last two are kept
  workdir/best/<s>/        the best-on-dev parameters, found at step s
  workdir/metrics.json     the final result (``train.train_and_evaluate``)

Orbax writes each checkpoint into a temporary directory and renames it when complete, so a run killed at any
moment leaves the previous checkpoint intact. Everything a step depends on is a function of (config, step):
the data order of epoch e is seeded by (seed, e) and the step's randomness is ``fold_in(key, step)``, so the
state and loop record are all a resumed run needs to continue exactly as an uninterrupted one.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
from typing import Any, Callable

import jax
import ml_collections
import orbax.checkpoint as ocp
from absl import logging as absl_logging

from implicit_jax.engine import config as config_lib


def _manager(path: str, keep: int, read_only: bool = False) -> ocp.CheckpointManager:
  # Synchronous saves: a checkpoint is on disk before the loop moves on, which the exact-resume guarantee needs.
  if read_only:
    # A reader (evaluate, predict, notebooks) creates, deletes and cleans nothing: a training run may be writing
    # beside it, and cleaning would remove its save in progress. Orbax warns about read-only managers; hush it.
    with _orbax_quiet():
      return ocp.CheckpointManager(os.path.abspath(path), options=ocp.CheckpointManagerOptions(
          max_to_keep=None, save_interval_steps=0, enable_async_checkpointing=False, create=False,
          read_only=True, cleanup_tmp_directories=False))
  return ocp.CheckpointManager(os.path.abspath(path), options=ocp.CheckpointManagerOptions(
      max_to_keep=keep, enable_async_checkpointing=False, create=True,
      cleanup_tmp_directories=True))  # a save cut short by a kill leaves a temporary directory: remove it


@contextlib.contextmanager
def _orbax_quiet():
  level = absl_logging.get_verbosity()
  absl_logging.set_verbosity(absl_logging.ERROR)
  try:
    yield
  finally:
    absl_logging.set_verbosity(level)


def write_json(path: str, obj: Any) -> None:
  """Writes JSON atomically (temporary file, then rename)."""
  tmp = f'{path}.tmp'
  with open(tmp, 'w') as f:
    json.dump(obj, f, indent=2)
  os.replace(tmp, path)


def check_or_write_config(workdir: str, config, write: bool = True) -> bool:
  """Writes ``config.json`` for a new run; for an existing one, checks that ``config`` may continue it.

  Returns True when the workdir already held this run. Raises ValueError naming the fields that differ.
  ``write=False`` (the other processes of a multi-host run) checks without writing.
  """
  path = os.path.join(workdir, 'config.json')
  current = config_lib.recorded(config)
  if not os.path.exists(path):
    if write:
      write_json(path, current)
    return False
  with open(path) as f:
    stored = json.load(f)
  diff = config_lib.compare(stored, config)
  if diff:
    raise ValueError(f'workdir {workdir} holds a run with a different config: {", ".join(diff[:5])}'
                     f'{" ..." if len(diff) > 5 else ""}; resume with the same config or use a new workdir')
  if write:
    write_json(path, current)  # records the latest num_epochs / logging settings, in the current format
  return True


class Checkpointer:
  """The run's two checkpoint series: the latest training state and the best-on-dev parameters."""

  def __init__(self, workdir: str, keep: int = 2, read_only: bool = False):
    self.directory = os.path.join(os.path.abspath(workdir), 'checkpoints')
    self._latest = _manager(self.directory, keep, read_only)
    # Two best checkpoints: the one the loop record points to survives a kill right after a newer one is saved.
    self._best = _manager(os.path.join(workdir, 'best'), 2, read_only)

  def latest_step(self) -> int | None:
    return self._latest.latest_step()

  def save(self, state, loop: dict) -> None:
    step = int(state.step)
    if step in self._latest.all_steps():
      return
    self._latest.save(step, args=ocp.args.Composite(state=ocp.args.StandardSave(state),
                                                    loop=ocp.args.JsonSave(loop)))

  def restore(self, abstract_state):
    """``(state, loop)`` of the latest checkpoint, or None when there is none."""
    step = self._latest.latest_step()
    if step is None:
      return None
    out = self._latest.restore(step, args=ocp.args.Composite(state=ocp.args.StandardRestore(abstract_state),
                                                             loop=ocp.args.JsonRestore()))
    return out.state, out.loop

  def save_best(self, step: int, params) -> None:
    if step in self._best.all_steps():
      return
    self._best.save(step, args=ocp.args.Composite(params=ocp.args.StandardSave(params)))

  def restore_best(self, abstract_params, step: int | None = None):
    step = self._best.latest_step() if step is None else step
    if step is None:
      raise FileNotFoundError(f'no best-on-dev parameters under {self._best.directory}')
    return self._best.restore(step, args=ocp.args.Composite(
        params=ocp.args.StandardRestore(abstract_params))).params

  def close(self) -> None:
    self._latest.close()
    self._best.close()


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
    from implicit_jax.engine import data, xla_options  # pylint: disable=import-outside-toplevel
    import numpy as np  # pylint: disable=import-outside-toplevel
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
    return data.predict(self.task, lambda b: self._predict(self.params, b), arrays,
                        batch_size or self.config.eval_batch_size)


def load_config(workdir: str) -> ml_collections.ConfigDict:
  """The run's full config: its record (``config.json``, any format) with defaults for fields added since."""
  path = os.path.join(workdir, 'config.json')
  if not os.path.exists(path):
    raise FileNotFoundError(f'{path} not found: {workdir} is not a training workdir')
  with open(path) as f:
    return config_lib.load(json.load(f))


def load_trained(workdir: str, config_overrides: dict | None = None) -> Run:
  """Loads a run's config, task, method and best-on-dev parameters (``config_overrides``: e.g. a data_dir).
  Reads only: safe beside a run that is still training in ``workdir``."""
  from implicit_jax import methods, tasks  # pylint: disable=import-outside-toplevel
  config = load_config(workdir)
  config.update_from_flattened_dict(config_overrides or {})
  task = tasks.get_task(config)
  method = methods.build(task, config)
  abstract = jax.eval_shape(method.init, jax.random.key(0)).params
  ckpt = Checkpointer(workdir, read_only=True)
  try:
    params = ckpt.restore_best(abstract)
  finally:
    ckpt.close()
  metrics_path = os.path.join(workdir, 'metrics.json')
  metrics = None
  if os.path.exists(metrics_path):
    with open(metrics_path) as f:
      metrics = json.load(f)
  return Run(config, task, method, params, dict(method.modules), metrics, workdir)
