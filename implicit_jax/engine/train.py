"""The training loop, task- and method-agnostic: task batches -> jitted method step -> dev evaluation -> test once.

``train_and_evaluate(config, workdir)`` is what ``main.py``, notebooks and tests call. The task supplies the data,
the networks, the output space and the evaluator (``implicit_jax.tasks``); the method the step
(``implicit_jax.methods``). Batch shapes come from a handful of buckets (one for fixed-shape tasks), so the step
compiles once per bucket. Step metrics stay on device and are read only at log time.
"""

import contextlib
import dataclasses
import functools
import os
import time
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from implicit_jax import batch as batch_lib
from implicit_jax.engine import (checkpoints, checks, config as config_lib, data, multihost, predictions,
                                 workdir as workdir_lib, writers, xla_options)


def data_parallel(config):
  """``(mesh, replicated, batch-sharded)``: a 1-D ``('data',)`` mesh over ``config.num_devices`` devices
  (0 = all, across hosts after ``jax.distributed.initialize()``)."""
  devices = jax.devices()
  n = config.get('num_devices', 0) or len(devices)
  if not 0 < n <= len(devices):
    raise ValueError(f'config.num_devices={n}: {len(devices)} devices available')
  for field in ('batch_size', 'eval_batch_size'):
    if config[field] % n:
      raise ValueError(f'config.{field}={config[field]} must be divisible by the {n} devices of the data mesh')
  mesh = jax.sharding.Mesh(np.array(devices[:n]), ('data',))
  return (mesh, jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec()),
          jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec('data')))


def make_train_step(method, step_rng, replicated, sharded, start: int = 0):
  """The compiled outer step: ``(state, batch) -> (state, metrics)``, state donated, randomness
  ``batch_lib.step_key(step_rng, state.step)`` drawn inside (no host work per step). For a method whose step has
  several static forms (``Method.form``), a ``FormedStep`` that counts the steps it runs from ``start`` (the state's
  step) on the host and calls each form's program."""
  if method.form is not None:
    return FormedStep(method, step_rng, replicated, sharded, start)
  return xla_options.jit(lambda s, b: method.train_step(s, b, batch_lib.step_key(step_rng, s.step)),
                         in_shardings=(replicated, sharded), out_shardings=(replicated, replicated),
                         donate_argnums=0)


class FormedStep:
  """``make_train_step`` for a method with ``Method.form``: step ``k`` (from ``start``, counted here: reading the
  state's step would be a host sync) runs the program of ``method.form(k)``, each compiled on its first call."""

  def __init__(self, method, step_rng, replicated, sharded, start: int = 0):
    self.form, self.step = method.form, start
    self.jitted = xla_options.jit(
        lambda s, b, form: method.train_step(s, b, batch_lib.step_key(step_rng, s.step), form),
        in_shardings=(replicated, sharded), out_shardings=(replicated, replicated), donate_argnums=0,
        static_argnums=2)

  def __call__(self, state, batch):
    out = self.jitted(state, batch, self.form(self.step))
    self.step += 1
    return out


def make_predict(method, replicated, sharded):
  """The compiled prediction ``(params, batch) -> y`` on the data mesh. In a multi-host run ``y`` comes back
  replicated (an all-gather inside the jitted call): a process can read only the shards on its own devices, and
  every process scores the whole split."""
  return xla_options.jit(method.predict, in_shardings=(replicated, sharded),
                         out_shardings=replicated if jax.process_count() > 1 else sharded)


def train_and_evaluate(config, workdir: str, on_epoch=None) -> dict:
  """Trains ``config.method`` on ``config.task``, selects the best epoch on dev, evaluates test once.

  ``on_epoch(epoch, dev_metrics)``, when given, is called after each epoch's dev evaluation and checkpoint (the dev
  figures are on the host by then: no extra sync): an exception it raises stops the run there, which the same call
  resumes from that checkpoint (``implicit_jax.tune`` prunes its trials so).

  Resumes from ``workdir`` when it holds a checkpoint of the same run (see ``checkpoints.py``); a resumed run
  ends with exactly the parameters and metrics of an uninterrupted one. Writes ``workdir/metrics.json`` and
  returns the same dict. In a multi-host run every process trains and only process 0 writes the workdir's files
  (config, metrics, TensorBoard, checkpoints: the state is replicated); the others read it, so it must be on
  storage all hosts share (docs/multihost.md).
  """
  # The processes of a multi-host run first check that they run the same thing (engine/multihost.py): one that
  # differs would train a silently wrong run, or leave the others waiting in a collective it never reaches.
  multihost.agree_on_command(config, workdir)
  parts = config_lib.check(config)  # its task and method, resolved once by the plug-ins (engine/registry.py)
  record = parts.recorded(config)  # what the run records of its config: written, logged and returned
  task = parts.make_task(config)
  digests = multihost.agree_on_data(task)  # None in a run of one process: check_data computes them
  method = parts.build_method(task, config)
  checks.before_training(task, method, config)
  steps_per_epoch = data.num_examples(task.splits['train']) // config.batch_size
  total_steps = steps_per_epoch * config.num_epochs
  _, replicated, sharded = data_parallel(config)
  primary = jax.process_index() == 0
  # Everything above validated the config and read the data: only now is the workdir touched, by process 0 alone
  # (the others read it once it exists and was checked).
  if primary:
    workdir_lib.prepare(workdir)
  multihost.sync('implicit_jax: workdir prepared')
  with workdir_lib.Lock(workdir) if primary else contextlib.nullcontext():
    return _train(_Run(config, workdir, parts, record, task, method, total_steps, steps_per_epoch, replicated,
                       sharded, primary, digests), on_epoch)


@dataclasses.dataclass(frozen=True)
class _Run:
  """What a run is, fixed before its workdir is touched: the config and workdir, its task and method resolved
  (``config.Parts``) and what it records of the config, the task and method built from them, the step counts, the
  mesh's shardings, whether this process writes the workdir, and the data's fingerprint where the processes
  compared it (else None)."""
  config: Any
  workdir: str
  parts: Any
  record: dict
  task: Any
  method: Any
  total_steps: int
  steps_per_epoch: int
  replicated: Any
  sharded: Any
  primary: bool
  digests: dict | None = None


def _train(run: _Run, on_epoch=None) -> dict:
  ckpt, existing = checkpoints.open_run(run.workdir, run.record, run.parts, run.task, run.total_steps,
                                        run.steps_per_epoch, run.primary, run.digests)
  try:
    state, loop, resumed = _start(run, ckpt, existing)
    writer = writers.MetricWriter(run.workdir, resume_step=int(state.step) if resumed else None,
                                  enabled=run.primary)
    if run.primary:
      checkpoints.set_aside_earlier_result(run.workdir, run.total_steps)
  except BaseException:
    ckpt.close()
    raise
  if not resumed:
    writer.write_hparams(config_lib.flatten(run.record))
  predict_fn = make_predict(run.method, run.replicated, run.sharded)
  try:
    state = _epochs(run, ckpt, writer, predict_fn, state, loop, on_epoch)
    # The best epoch's parameters from disk; its dev predictions again (the same compiled function, so the same
    # numbers), the calibration chosen on them; test predicted once and scored under it.
    best_params = ckpt.restore_best(jax.eval_shape(lambda: state.params), loop['best']['step'])
    dev_pred, test_pred = (data.predict(run.task, functools.partial(predict_fn, best_params), run.task.splits[split],
                                        run.config.eval_batch_size, run.sharded) for split in ('dev', 'test'))
  except BaseException:
    # The error on its way names what failed; closing may fail the same way (a full disk) and must not replace it.
    for close in (writer.close, ckpt.close):
      with contextlib.suppress(Exception):
        close()
    raise
  writer.close()
  ckpt.close()
  return _result(run, loop, dev_pred, test_pred)


def _start(run: _Run, ckpt, existing: bool):
  """``(state, loop, resumed)``: the state and the loop's record restored from the latest checkpoint of a run the
  workdir already held (``existing``), or new."""
  state = jax.device_put(run.method.init(batch_lib.init_key(run.config.seed)), run.replicated)
  loop = {'history': [], 'train_log': {}, 'best': None, 'train_seconds': 0.0}
  restored = ckpt.restore(jax.eval_shape(lambda: state)) if existing else None
  if restored is None:
    return state, loop, False
  state, loop = restored
  print(f'resuming from step {int(state.step)} ({ckpt.directory})', flush=True)
  return jax.device_put(state, run.replicated), loop, True


def _epochs(run: _Run, ckpt, writer, predict_fn, state, loop: dict, on_epoch=None):
  """Trains from ``state`` to the last epoch: the steps, a log line every ``log_every``, a dev evaluation each
  epoch, a checkpoint every ``checkpoint_every`` steps and at epoch ends (each, or with ``checkpoint_epoch_ends``
  off the last), the best epoch's parameters kept. ``loop`` (the
  history, the step metrics' means, the best epoch, the seconds) is updated in place; returns the last state."""
  config, task, method = run.config, run.task, run.method
  evaluator, start_step, steps_per_epoch = task.evaluator, int(state.step), run.steps_per_epoch
  # Data parallel: the batch is split over the ('data',) mesh, the state replicated; XLA inserts the all-reduce
  # wherever a loss averages over the batch (inner gradients, HVPs, the mixed VJP), so every device computes the
  # single-device step on its shard and they agree on the result.
  step_fn = make_train_step(method, batch_lib.steps_key(config.seed), run.replicated, run.sharded, start_step)
  pending = []  # device metrics since the last log line
  best_unsaved = None  # (step, params) of a new best epoch, written with the next checkpoint
  t_run = t_log = time.perf_counter()
  seconds_before = loop['train_seconds']
  every = config.checkpoint_every
  due = lambda step: bool(every) and step % every == 0  # a checkpoint_every checkpoint at this step
  select = f'dev_{evaluator.select}'

  def flush(step, epoch):
    """Reads pending metrics (the only host sync), checks them, logs them. Deterministic in ``step``."""
    nonlocal pending, t_log
    if not pending:
      return
    try:
      t_log, means = _log(pending, step, run.total_steps, epoch, config, t_log, loop['history'], select, method)
    except FloatingPointError as e:
      last = ckpt.latest_step()
      raise FloatingPointError(f'{e}; training stopped, last good checkpoint: '
                               f'{f"step {last} in {ckpt.directory}" if last is not None else "none saved yet"}'
                               f'{_cause(pending, step, method)}') from None
    loop['train_log'][str(step)] = means
    writer.write_scalars(step, {f'train/{k}': v for k, v in means.items()})
    pending = []

  def save():
    # The best parameters go to disk before the checkpoint whose loop record names them, so that every checkpoint
    # a run resumes from has its best on disk (two are kept); a kill between the two leaves the previous pair.
    nonlocal best_unsaved
    if best_unsaved is not None:
      ckpt.save_best(*best_unsaved)
      best_unsaved = None
    loop['train_seconds'] = seconds_before + time.perf_counter() - t_run
    ckpt.save(state, loop)
    writer.flush()

  for epoch in range(start_step // steps_per_epoch, config.num_epochs):
    data_rng = np.random.default_rng([config.seed, epoch])  # the order of epoch e depends on (seed, e) alone
    for i, batch in enumerate(data.train_batches(task, config.batch_size, data_rng)):
      step = epoch * steps_per_epoch + i + 1
      if step <= start_step:
        continue  # done before the checkpoint this run resumed from
      state, step_metrics = step_fn(state, data.shard_batch(batch, run.sharded))
      pending.append(step_metrics)
      if step % config.log_every == 0 or due(step):
        flush(step, epoch)
      if due(step) and step % steps_per_epoch:
        save()
    step = (epoch + 1) * steps_per_epoch
    flush(step, epoch)
    t_eval = time.perf_counter()
    dev_pred = data.predict(task, functools.partial(predict_fn, state.params), task.splits['dev'],
                            config.eval_batch_size, run.sharded)
    dev_metrics = evaluator.metrics(dev_pred, task.splits['dev'])
    value = checks.select_metric(task, dev_metrics, epoch + 1)  # before it is recorded anywhere
    loop['history'].append({'step': step, 'epoch': epoch + 1, **{f'dev_{k}': v for k, v in dev_metrics.items()}})
    writer.write_scalars(step, {f'dev/{k}': v for k, v in dev_metrics.items()})
    print(f'epoch {epoch + 1}/{config.num_epochs}  dev {evaluator.describe(dev_metrics)}  '
          f'(eval {time.perf_counter() - t_eval:.1f}s)', flush=True)
    if loop['best'] is None or value > loop['best'][select]:
      best_unsaved = (step, jax.tree.map(jnp.copy, state.params))  # a copy: the next step donates the state
      loop['best'] = {select: value, 'epoch': epoch + 1, 'step': step}
    if config.get('checkpoint_epoch_ends', True) or epoch + 1 == config.num_epochs or due(step):
      save()
    if on_epoch is not None:
      on_epoch(epoch + 1, dev_metrics)
  return state


def _result(run: _Run, loop: dict, dev_pred, test_pred) -> dict:
  """The run's result (``metrics.json``, written by process 0): the best epoch, the evaluator's final figures,
  the history, the recorded config, and the decisions the figures were computed from (``predictions.pack``)."""
  task, evaluator, best = run.task, run.task.evaluator, loop['best']
  select = f'dev_{evaluator.select}'
  result = {
      'task': task.name, 'method': run.config.method, 'seed': run.config.seed, 'task_info': task.info,
      'best_epoch': best['epoch'], 'best_step': best['step'], select: best[select],
      **evaluator.final(dev_pred, task.splits['dev'], test_pred, task.splits['test']),
      'train_seconds': loop['train_seconds'], 'steps': run.total_steps, 'history': loop['history'],
      'train_log': loop['train_log'],
      'config': run.record,
  }
  # The decisions the figures above were computed from, compact, so that a record can be rescored (predictions.py)
  kept = predictions.pack(evaluator, {'dev': (dev_pred, task.splits['dev'], None),
                                      'test': (test_pred, task.splits['test'], evaluator.calibration_of(result))})
  if kept is not None:
    result['predictions'] = kept
  if run.primary:
    checkpoints.write_json(os.path.join(run.workdir, 'metrics.json'), result)
  print(evaluator.summary(result), flush=True)
  return result


def _cause(pending, step, method) -> str:
  """What ``method`` says (``Method.cause``) of the first step of ``pending`` (the steps up to ``step``) with a
  non-finite metric (``optional`` ones, NaN by design, aside); '' when it says nothing."""
  if method.cause is None:
    return ''
  first = step - len(pending) + 1
  for i, metrics in enumerate(jax.device_get(pending)):
    bad = {k for k, v in metrics.items() if k not in method.optional and not np.all(np.isfinite(v))}
    if bad:
      said = method.cause(bad, first + i)
      return f'; {said}' if said else ''
  return ''


def _log(pending, step, total_steps, epoch, config, t_log, history, select, method):
  """Reads the pending device metrics (the only host sync), checks them (what ``method`` declares: its ``optional``
  metrics may be NaN, its ``limits`` bound others), prints one progress line."""
  # Averaged on the host: on the device, each new number of pending steps (epoch ends cut the log_every cadence)
  # compiled another stack and mean.
  host = jax.device_get(pending)
  means = {k: float(np.mean(np.stack([m[k] for m in host]), dtype=np.float32)) for k in host[0]}
  for name, value in means.items():
    if not np.isfinite(value) and name not in method.optional:
      raise FloatingPointError(f'non-finite {name} ({value}) in the {len(pending)} steps up to step {step}')
  for name, field in method.divergence_limits(means).items():
    limit, value = config.divergence[field], means[name]
    if limit and abs(value) > limit:
      raise FloatingPointError(f'{name} diverged: {value:.3g} (mean of the {len(pending)} steps up to step {step}) '
                               f'exceeds config.divergence.{field}={limit:g}')
  now = time.perf_counter()
  rate = len(pending) * config.batch_size / max(now - t_log, 1e-9)
  eta = (total_steps - step) * config.batch_size / max(rate, 1e-9)
  shown = '  '.join(f'{k} {v:.4g}' for k, v in sorted(means.items()))
  dev = f'  {select.replace("_", " ")} {history[-1][select]:.4f}' if history else ''
  print(f'step {step}/{total_steps}  epoch {epoch + 1}/{config.num_epochs}  {shown}  '
        f'{rate:.0f} ex/s  ETA {eta:.0f}s{dev}', flush=True)
  return now, means
