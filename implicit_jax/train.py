"""The training loop, method-agnostic: task arrays -> jitted method step -> dev evaluation -> test once.

``train_and_evaluate(config, workdir)`` is what ``main.py``, notebooks and tests call. Shapes are static (the
last partial batch of an epoch is dropped), so the step compiles once. Step metrics stay on device and are read
only at log time.
"""

import os
import time

import jax
import jax.numpy as jnp
import numpy as np

from implicit_jax import checkpoints, methods, metrics, tasks, writers, xla_options


def check_config(config) -> None:
  """Rejects contradictory or out-of-range settings before anything is built or compiled."""
  for field in ('batch_size', 'num_epochs', 'log_every'):
    value = config[field]
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
      raise ValueError(f'config.{field} must be a positive integer, got {value!r}')
  every = config.get('checkpoint_every', 0)
  if isinstance(every, bool) or not isinstance(every, int) or every < 0:
    raise ValueError(f'config.checkpoint_every must be a non-negative integer, got {every!r}')
  data = config.get('data', {})
  # Model selection and the tuned threshold both need a dev split: refuse before any data is read.
  if data.get('protocol', 'official') == 'official' and 'dev_fraction' in data and not 0 < data.dev_fraction < 1:
    raise ValueError(f'config.data.dev_fraction must be in (0, 1): best-epoch selection and the tuned threshold '
                     f'need a dev split, got {data.dev_fraction}')


def _batches(x, y, batch_size, rng):
  perm = rng.permutation(len(x))
  for i in range(len(x) // batch_size):
    idx = perm[i * batch_size:(i + 1) * batch_size]
    yield {'x': x[idx], 'y': y[idx]}


def evaluate(predict_fn, params, x, y, threshold=0.5, batch_size=1024):
  """Example F1 of ``predict_fn(params, x) >= threshold``; also returns the relaxed predictions."""
  probs = np.concatenate([np.asarray(predict_fn(params, x[i:i + batch_size]))
                          for i in range(0, len(x), batch_size)])
  return metrics.example_f1(probs >= threshold, y > 0.5), probs


def tune_threshold(probs, y, grid=np.linspace(0.05, 0.95, 19)):
  """The threshold on the grid with the best example F1 on (dev) predictions, and that F1."""
  scores = [metrics.example_f1(probs >= t, y > 0.5) for t in grid]
  best = int(np.argmax(scores))
  return float(grid[best]), float(scores[best])


def data_parallel(config):
  """``(mesh, replicated, batch-sharded)``: a 1-D ``('data',)`` mesh over ``config.num_devices`` devices
  (0 = all, across hosts after ``jax.distributed.initialize()``)."""
  devices = jax.devices()
  n = config.get('num_devices', 0) or len(devices)
  if not 0 < n <= len(devices):
    raise ValueError(f'config.num_devices={n}: {len(devices)} devices available')
  if config.batch_size % n:
    raise ValueError(f'config.batch_size={config.batch_size} must be divisible by the {n} devices of the data '
                     f'mesh')
  mesh = jax.sharding.Mesh(np.array(devices[:n]), ('data',))
  return (mesh, jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec()),
          jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec('data')))


def shard_batch(batch: dict, sharding) -> dict:
  """Places a global batch on the mesh. Every host builds the same global batch (the data order depends on
  the seed alone) and contributes its own rows, so a multi-host run sees the batches of a single-host one."""
  if jax.process_count() == 1:
    return jax.device_put(batch, sharding)
  rows = len(batch['x']) // jax.process_count()
  lo = jax.process_index() * rows
  return {k: jax.make_array_from_process_local_data(sharding, v[lo:lo + rows], v.shape) for k, v in batch.items()}


def make_train_step(method, step_rng, replicated, sharded):
  """The compiled outer step: ``(state, batch) -> (state, metrics)``, state donated, randomness
  ``fold_in(step_rng, state.step)`` drawn inside (no host work per step)."""
  return xla_options.jit(lambda s, b: method.train_step(s, b, jax.random.fold_in(step_rng, s.step)),
                 in_shardings=(replicated, sharded), out_shardings=(replicated, replicated), donate_argnums=0)


def train_and_evaluate(config, workdir: str) -> dict:
  """Trains ``config.method`` on ``config.task``, selects the best epoch on dev, evaluates test once.

  Resumes from ``workdir`` when it holds a checkpoint of the same run (see ``checkpoints.py``); a resumed run
  ends with exactly the parameters and metrics of an uninterrupted one. Writes ``workdir/metrics.json`` and
  returns the same dict.
  """
  check_config(config)
  task = tasks.get_task(config)
  method = methods.build(task, config)
  x_train, y_train = task.splits['train']
  if len(x_train) < config.batch_size:
    raise ValueError(f'config.batch_size={config.batch_size} exceeds the {len(x_train)} training examples')
  steps_per_epoch = len(x_train) // config.batch_size
  total_steps = steps_per_epoch * config.num_epochs

  os.makedirs(workdir, exist_ok=True)
  existing = checkpoints.check_or_write_config(workdir, config)
  ckpt = checkpoints.Checkpointer(workdir)
  rng = jax.random.key(config.seed)
  _, replicated, sharded = data_parallel(config)
  state = jax.device_put(method.init(jax.random.fold_in(rng, 0)), replicated)
  loop = {'history': [], 'train_log': {}, 'best': None, 'train_seconds': 0.0}
  restored = ckpt.restore(jax.eval_shape(lambda: state)) if existing else None
  if restored is not None:
    state, loop = restored
    state = jax.device_put(state, replicated)
    print(f'resuming from step {int(state.step)} ({ckpt.directory})', flush=True)
  start_step = int(state.step)
  writer = writers.MetricWriter(workdir, resume_step=start_step if restored is not None else None)
  if restored is None:
    writer.write_hparams(checkpoints.flatten(checkpoints.config_json(config)))

  step_rng = jax.random.fold_in(rng, 1)
  # Data parallel: the batch is split over the ('data',) mesh, the state replicated; XLA inserts the all-reduce
  # wherever a loss averages over the batch (inner gradients, HVPs, the mixed VJP), so every device computes the
  # single-device step on its shard and they agree on the result.
  step_fn = make_train_step(method, step_rng, replicated, sharded)
  predict_fn = xla_options.jit(method.predict)
  pending = []  # device metrics since the last log line
  t_run = t_log = time.perf_counter()
  seconds_before = loop['train_seconds']

  def flush(step, epoch):
    """Reads pending metrics (the only host sync), checks them, logs them. Deterministic in ``step``."""
    nonlocal pending, t_log
    if not pending:
      return
    try:
      t_log, means = _log(pending, step, total_steps, epoch, config, t_log, loop['history'])
    except FloatingPointError as e:
      last = ckpt.latest_step()
      raise FloatingPointError(f'{e}; training stopped, last good checkpoint: '
                               f'{f"step {last} in {ckpt.directory}" if last is not None else "none saved yet"}'
                               ) from None
    loop['train_log'][str(step)] = means
    writer.write_scalars(step, {f'train/{k}': v for k, v in means.items()})
    pending = []

  def save():
    loop['train_seconds'] = seconds_before + time.perf_counter() - t_run
    ckpt.save(state, loop)
    writer.flush()

  try:
    for epoch in range(start_step // steps_per_epoch, config.num_epochs):
      data_rng = np.random.default_rng([config.seed, epoch])  # the order of epoch e depends on (seed, e) alone
      for i, batch in enumerate(_batches(x_train, y_train, config.batch_size, data_rng)):
        step = epoch * steps_per_epoch + i + 1
        if step <= start_step:
          continue  # done before the checkpoint this run resumed from
        state, step_metrics = step_fn(state, shard_batch(batch, sharded))
        pending.append(step_metrics)
        checkpoint_now = config.checkpoint_every and step % config.checkpoint_every == 0
        if step % config.log_every == 0 or checkpoint_now:
          flush(step, epoch)
        if checkpoint_now and step % steps_per_epoch:
          save()
      step = (epoch + 1) * steps_per_epoch
      flush(step, epoch)
      t_eval = time.perf_counter()
      dev_f1, dev_probs = evaluate(predict_fn, state.params, *task.splits['dev'])
      # Recorded, not used for selection: shows whether the @0.5 choice of epoch also suits the tuned protocol.
      dev_threshold, dev_tuned = tune_threshold(dev_probs, task.splits['dev'][1])
      loop['history'].append({'step': step, 'epoch': epoch + 1, 'dev_f1': dev_f1, 'dev_f1_tuned': dev_tuned,
                              'dev_threshold': dev_threshold})
      writer.write_scalars(step, {'dev/example_f1': dev_f1, 'dev/example_f1_tuned': dev_tuned})
      print(f'epoch {epoch + 1}/{config.num_epochs}  dev example-F1 {dev_f1:.4f} at 0.5, {dev_tuned:.4f} at '
            f'{dev_threshold:.2f}  (eval {time.perf_counter() - t_eval:.1f}s)', flush=True)
      if loop['best'] is None or dev_f1 > loop['best']['dev_f1']:
        ckpt.save_best(step, state.params)
        loop['best'] = {'dev_f1': dev_f1, 'epoch': epoch + 1, 'step': step}
      save()

    # The best epoch's parameters from disk; its dev predictions again (the same compiled function, so the same
    # numbers); the threshold tuned on them; test predicted once and scored at 0.5 and at that threshold.
    best = loop['best']
    best_params = ckpt.restore_best(jax.eval_shape(lambda: state.params), best['step'])
    _, best_dev_probs = evaluate(predict_fn, best_params, *task.splits['dev'])
    threshold, dev_f1_tuned = tune_threshold(best_dev_probs, task.splits['dev'][1])
    _, test_probs = evaluate(predict_fn, best_params, *task.splits['test'])
  finally:
    writer.close()
    ckpt.close()
  test_gold = task.splits['test'][1]
  at_half, at_tuned = metrics.all_f1(test_probs, test_gold, 0.5), metrics.all_f1(test_probs, test_gold, threshold)
  result = {
      'task': task.name, 'method': config.method, 'seed': config.seed, 'task_info': task.info,
      'best_epoch': best['epoch'], 'dev_f1': best['dev_f1'], 'dev_f1_tuned': dev_f1_tuned,
      'threshold': threshold, 'test_f1': at_half['example_f1'], 'test_f1_tuned': at_tuned['example_f1'],
      'test_at_0.5': at_half, 'test_at_tuned': at_tuned,
      'train_seconds': loop['train_seconds'], 'steps': total_steps, 'history': loop['history'],
      'train_log': loop['train_log'],
      'config': checkpoints.config_json(config),
  }
  checkpoints.write_json(os.path.join(workdir, 'metrics.json'), result)
  print(f'test example-F1: {result["test_f1"]:.4f} at threshold 0.5, {result["test_f1_tuned"]:.4f} at dev-tuned '
        f'threshold {threshold:.2f} (best dev epoch {best["epoch"]})', flush=True)
  return result


def _log(pending, step, total_steps, epoch, config, t_log, history):
  """Reads the pending device metrics (the only host sync), checks them, prints one progress line."""
  means = {k: float(v) for k, v in jax.device_get(jax.tree.map(lambda *xs: jnp.mean(jnp.stack(xs)),
                                                                 *pending)).items()}
  for name, value in means.items():
    if not np.isfinite(value) and name != 'residual':  # residual is NaN when not tracked
      raise FloatingPointError(f'non-finite {name} ({value}) in the {len(pending)} steps up to step {step}')
  now = time.perf_counter()
  rate = len(pending) * config.batch_size / max(now - t_log, 1e-9)
  eta = (total_steps - step) * config.batch_size / max(rate, 1e-9)
  shown = '  '.join(f'{k} {v:.4g}' for k, v in sorted(means.items()))
  dev = f'  dev F1 {history[-1]["dev_f1"]:.4f}' if history else ''
  print(f'step {step}/{total_steps}  epoch {epoch + 1}/{config.num_epochs}  {shown}  '
        f'{rate:.0f} ex/s  ETA {eta:.0f}s{dev}', flush=True)
  return now, means
