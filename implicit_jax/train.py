"""The training loop, method-agnostic: task arrays -> jitted method step -> dev evaluation -> test once.

``train_and_evaluate(config, workdir)`` is what ``main.py``, notebooks and tests call. Shapes are static (the
last partial batch of an epoch is dropped), so the step compiles once. Step metrics stay on device and are read
only at log time.
"""

import json
import os
import time

import jax
import jax.numpy as jnp
import numpy as np

from implicit_jax import methods, metrics, tasks


def check_config(config) -> None:
  """Rejects contradictory or out-of-range settings before anything is built or compiled."""
  for field in ('batch_size', 'num_epochs', 'log_every'):
    value = config[field]
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
      raise ValueError(f'config.{field} must be a positive integer, got {value!r}')


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


def train_and_evaluate(config, workdir: str) -> dict:
  """Trains ``config.method`` on ``config.task``, selects the best epoch on dev, evaluates test once.

  Writes ``workdir/metrics.json`` and returns the same dict.
  """
  check_config(config)
  task = tasks.get_task(config)
  method = methods.build(task, config)
  os.makedirs(workdir, exist_ok=True)

  x_train, y_train = task.splits['train']
  if len(x_train) < config.batch_size:
    raise ValueError(f'config.batch_size={config.batch_size} exceeds the {len(x_train)} training examples')
  steps_per_epoch = len(x_train) // config.batch_size
  total_steps = steps_per_epoch * config.num_epochs

  rng = jax.random.key(config.seed)
  state = method.init(jax.random.fold_in(rng, 0))
  step_rng = jax.random.fold_in(rng, 1)
  # Per-step randomness is fold_in(step_rng, step), computed inside the compiled step: no host work per step.
  step_fn = jax.jit(lambda s, b: method.train_step(s, b, jax.random.fold_in(step_rng, s.step)),
                    donate_argnums=0)
  predict_fn = jax.jit(method.predict)

  best = {'dev_f1': -1.0}
  history = []
  pending = []  # device metrics since the last log line
  train_log = {}  # step -> mean training metrics (losses, solver residual, term norms) over the logged window
  t_start = t_log = time.perf_counter()
  for epoch in range(config.num_epochs):
    data_rng = np.random.default_rng([config.seed, epoch])  # the order of epoch e depends on (seed, e) alone
    for batch in _batches(x_train, y_train, config.batch_size, data_rng):
      state, step_metrics = step_fn(state, batch)
      pending.append(step_metrics)
      if len(pending) == config.log_every:
        t_log, train_log[int(state.step)] = _log(pending, int(state.step), total_steps, epoch, config, t_log)
        pending = []
    dev_f1, dev_probs = evaluate(predict_fn, state.params, *task.splits['dev'])
    history.append({'step': int(state.step), 'epoch': epoch + 1, 'dev_f1': dev_f1})
    print(f'epoch {epoch + 1}/{config.num_epochs}  dev example-F1 {dev_f1:.4f}', flush=True)
    if dev_f1 > best['dev_f1']:
      best = {'dev_f1': dev_f1, 'epoch': epoch + 1, 'params': jax.device_get(state.params), 'probs': dev_probs}
  if pending:
    _, train_log[int(state.step)] = _log(pending, int(state.step), total_steps, config.num_epochs - 1, config,
                                         t_log)

  # Tune the threshold on the best epoch's dev predictions; predict test once and score it at 0.5 and there.
  threshold, dev_f1_tuned = tune_threshold(best['probs'], task.splits['dev'][1])
  _, test_probs = evaluate(predict_fn, best['params'], *task.splits['test'])
  test_gold = task.splits['test'][1]
  at_half, at_tuned = metrics.all_f1(test_probs, test_gold, 0.5), metrics.all_f1(test_probs, test_gold, threshold)
  result = {
      'task': task.name, 'method': config.method, 'seed': config.seed, 'task_info': task.info,
      'best_epoch': best['epoch'], 'dev_f1': best['dev_f1'], 'dev_f1_tuned': dev_f1_tuned,
      'threshold': threshold, 'test_f1': at_half['example_f1'], 'test_f1_tuned': at_tuned['example_f1'],
      'test_at_0.5': at_half, 'test_at_tuned': at_tuned,
      'train_seconds': time.perf_counter() - t_start, 'steps': total_steps, 'history': history,
      'train_log': train_log,
      'config': config.to_dict(),
  }
  with open(os.path.join(workdir, 'metrics.json'), 'w') as f:
    json.dump(result, f, indent=2)
  print(f'test example-F1: {result["test_f1"]:.4f} at threshold 0.5, {result["test_f1_tuned"]:.4f} at dev-tuned '
        f'threshold {threshold:.2f} (best dev epoch {best["epoch"]})', flush=True)
  return result


def _log(pending, step, total_steps, epoch, config, t_log):
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
  print(f'step {step}/{total_steps}  epoch {epoch + 1}/{config.num_epochs}  {shown}  '
        f'{rate:.0f} ex/s  ETA {eta:.0f}s', flush=True)
  return now, means
