"""The workdir: Orbax checkpoints of a run, resuming it, and loading a trained model back.

Layout::

  workdir/config.json      the run's config; a resumed run must match it (num_epochs and logging may change)
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

import dataclasses
import json
import os
from typing import Any, Callable

import jax
import ml_collections
import orbax.checkpoint as ocp

from implicit_jax import xla_options

# Fields a resumed run may change: how long it runs, what it prints, and the device count (a run may move to
# another machine; the data-parallel step computes the same function, up to the order of float sums).
MUTABLE_FIELDS = ('num_epochs', 'log_every', 'checkpoint_every', 'num_devices')

# Config fields added after runs were recorded, with the value that reproduces what those runs did: a stored
# config without one is read as having it, so older workdirs still load and resume.
ADDED_FIELDS = {'implicit.refine_steps': 0}


def _with_added_fields(stored: dict) -> dict:
  for key, value in ADDED_FIELDS.items():
    *parents, leaf = key.split('.')
    node = stored
    for name in parents:
      node = node.get(name) if isinstance(node, dict) else None
    if isinstance(node, dict):  # a config without the field's section (another task's) gets nothing
      node.setdefault(leaf, value)
  return stored


def _manager(path: str, keep: int) -> ocp.CheckpointManager:
  # Synchronous saves: a checkpoint is on disk before the loop moves on, which the exact-resume guarantee needs.
  return ocp.CheckpointManager(os.path.abspath(path), options=ocp.CheckpointManagerOptions(
      max_to_keep=keep, enable_async_checkpointing=False, create=True,
      cleanup_tmp_directories=True))  # a save cut short by a kill leaves a temporary directory: remove it


def flatten(d: dict, prefix: str = '') -> dict:
  """``{'a': {'b': 1}} -> {'a.b': 1}``: the dotted names configs are overridden and compared by."""
  out = {}
  for k, v in d.items():
    if isinstance(v, dict):
      out.update(flatten(v, f'{prefix}{k}.'))
    else:
      out[f'{prefix}{k}'] = v
  return out


def config_json(config) -> dict:
  """The config as plain JSON types (tuples become lists): what config.json holds and runs are compared on."""
  return json.loads(json.dumps(config.to_dict() if hasattr(config, 'to_dict') else config))


def write_json(path: str, obj: Any) -> None:
  """Writes JSON atomically (temporary file, then rename)."""
  tmp = f'{path}.tmp'
  with open(tmp, 'w') as f:
    json.dump(obj, f, indent=2)
  os.replace(tmp, path)


def check_or_write_config(workdir: str, config) -> bool:
  """Writes ``config.json`` for a new run; for an existing one, checks that ``config`` matches it.

  Returns True when the workdir already held this run. Raises ValueError naming the fields that differ.
  """
  path = os.path.join(workdir, 'config.json')
  current = config_json(config)
  if not os.path.exists(path):
    write_json(path, current)
    return False
  with open(path) as f:
    stored = _with_added_fields(json.load(f))
  a, b = flatten(stored), flatten(current)
  diff = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k) and k not in MUTABLE_FIELDS)
  if diff:
    shown = ', '.join(f'{k} (stored {a.get(k)!r}, now {b.get(k)!r})' for k in diff[:5])
    raise ValueError(f'workdir {workdir} holds a run with a different config: {shown}'
                     f'{" ..." if len(diff) > 5 else ""}; resume with the same config or use a new workdir')
  write_json(path, current)  # records the latest num_epochs / logging settings
  return True


class Checkpointer:
  """The run's two checkpoint series: the latest training state and the best-on-dev parameters."""

  def __init__(self, workdir: str, keep: int = 2):
    self.directory = os.path.join(os.path.abspath(workdir), 'checkpoints')
    self._latest = _manager(self.directory, keep)
    # Two best checkpoints: the one the loop record points to survives a kill right after a newer one is saved.
    self._best = _manager(os.path.join(workdir, 'best'), 2)

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

  def predict(self, x, batch_size: int = 1024):
    """Relaxed predictions in [0, 1]^L for features ``x`` [N, D]."""
    import numpy as np  # pylint: disable=import-outside-toplevel
    if self._predict is None:
      self._predict = xla_options.jit(self.method.predict)
    if x.ndim != 2 or x.shape[1] != self.task.num_features:
      raise ValueError(f'predict: features have shape {x.shape}, the model expects [N, {self.task.num_features}]')
    return np.concatenate([np.asarray(self._predict(self.params, x[i:i + batch_size]))
                           for i in range(0, len(x), batch_size)])


def load_config(workdir: str) -> ml_collections.ConfigDict:
  path = os.path.join(workdir, 'config.json')
  if not os.path.exists(path):
    raise FileNotFoundError(f'{path} not found: {workdir} is not a training workdir')
  with open(path) as f:
    return ml_collections.ConfigDict(_with_added_fields(json.load(f)))


def load_trained(workdir: str, config_overrides: dict | None = None) -> Run:
  """Loads a run's config, task, method and best-on-dev parameters (``config_overrides``: e.g. a data_dir)."""
  from implicit_jax import methods, tasks  # pylint: disable=import-outside-toplevel
  config = load_config(workdir)
  config.update_from_flattened_dict(config_overrides or {})
  task = tasks.get_task(config)
  method = methods.build(task, config)
  abstract = jax.eval_shape(method.init, jax.random.key(0)).params
  ckpt = Checkpointer(workdir)
  try:
    params = ckpt.restore_best(abstract)
  finally:
    ckpt.close()
  metrics_path = os.path.join(workdir, 'metrics.json')
  metrics = json.load(open(metrics_path)) if os.path.exists(metrics_path) else None
  return Run(config, task, method, params, dict(method.modules), metrics, workdir)
