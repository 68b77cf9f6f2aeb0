"""Shared helpers of the benchmark scripts: interleaved median timing, the machine, the bibtex fixture, and
writing one script's section of docs/benchmarks.md.

Every script reports ratios measured in one process on the same batch and parameters: machine load (this CPU is
often shared with training jobs) then hits both contenders alike, which absolute seconds cannot promise.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import re
import shlex
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[1]

import jax  # pylint: disable=wrong-import-position

from implicit_jax.engine import xla_options  # pylint: disable=wrong-import-position
import numpy as np  # pylint: disable=wrong-import-position

DOC = ROOT / 'docs' / 'benchmarks.md'


# --------------------------------------------------------------------------------------------------------------
# Command line


def parser(description: str, reps: int = 20) -> argparse.ArgumentParser:
  """The options every script shares: ``--reps`` and ``--out``."""
  p = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
  p.add_argument('--reps', type=int, default=reps, help=f'timed repetitions per contender (default {reps}); '
                 'the median is reported')
  p.add_argument('--out', default=str(DOC), help='markdown file whose section of this script is rewritten '
                 '(default docs/benchmarks.md); "-" prints only')
  return p


# --------------------------------------------------------------------------------------------------------------
# Timing


def time_interleaved(fns: dict[str, Callable[[], Any]], reps: int, warmup: int = 1) -> dict[str, list[float]]:
  """Seconds per call of each zero-argument function, interleaved after ``warmup`` rounds.

  Interleaving (A, B, C, then C, B, A, and so on: the order flips every round so that no contender always
  follows the same one) puts a burst of load from another process on every contender of the round, not on one
  of them; the warm-up round pays compilation and first-touch costs. Each call is closed by
  ``block_until_ready`` since JAX dispatches asynchronously.
  """
  for _ in range(warmup):
    for fn in fns.values():
      jax.block_until_ready(fn())
  times = {name: [] for name in fns}
  order = list(fns)
  for r in range(reps):
    for name in (order if r % 2 == 0 else order[::-1]):
      t0 = time.perf_counter()
      jax.block_until_ready(fns[name]())
      times[name].append(time.perf_counter() - t0)
  return times


def median(xs) -> float:
  return float(statistics.median(xs))


def spread(xs) -> str:
  """``p25-p75`` in ms: how much the load moved a measurement, next to its median."""
  lo, hi = np.percentile(np.asarray(xs) * 1e3, [25, 75])
  return f'{lo:.3g}-{hi:.3g}'


def ms(seconds: float) -> str:
  return f'{seconds * 1e3:.3g}'


# --------------------------------------------------------------------------------------------------------------
# Machine


def cpu_model() -> str:
  try:
    with open('/proc/cpuinfo', encoding='utf-8') as f:
      for line in f:
        if line.startswith('model name'):
          return line.split(':', 1)[1].strip()
  except OSError:
    pass
  return platform.processor() or platform.machine()


def machine() -> dict[str, Any]:
  """What the numbers were measured on, including the load average when the run started."""
  cores = os.cpu_count() or 1
  load = os.getloadavg()
  return {
      'cpu': cpu_model(), 'cores': cores, 'jax': jax.__version__, 'backend': jax.default_backend(),
      'device': jax.devices()[0].device_kind, 'load': load, 'shared': load[0] > cores,
  }


def machine_line(m: dict[str, Any]) -> str:
  load = ', '.join(f'{x:.2f}' for x in m['load'])
  note = (f' — **the machine was shared with other jobs** (1-min load above the {m["cores"]} cores)'
          if m['shared'] else '')
  return (f'{m["cpu"]}, {m["cores"]} cores, JAX {m["jax"]} ({m["backend"]} backend, {m["device"]}); '
          f'load average at start (1, 5, 15 min): {load}{note}')


def device_tag() -> str:
  """'' on the CPU, the project's reference machine; ``_<backend>`` (``_gpu``) on an accelerator, whose sections and
  figures are kept beside the CPU's (``implicit_cost_mlc_gpu``, ``cost_to_dev_gpu.json``), never in their place."""
  backend = jax.default_backend()
  return '' if backend == 'cpu' else f'_{backend}'


def matmul_rate(n: int = 8192, reps: int = 10) -> float:
  """FLOP/s of an ``n x n x n`` float32 matrix product at JAX's default precision, on this device, in this process:
  the ceiling a step's FLOP rate is read against (measured, not the datasheet's)."""
  a = jax.random.normal(jax.random.key(0), (n, n), jax.numpy.float32)
  product = jax.jit(lambda a: a @ a)
  jax.block_until_ready(product(a))
  seconds = []
  for _ in range(reps):
    t0 = time.perf_counter()
    jax.block_until_ready(product(a))
    seconds.append(time.perf_counter() - t0)
  return 2 * n ** 3 / median(seconds)


def cpu_ticks() -> tuple[int, int] | None:
  """``(steal, total)`` jiffies of all CPUs from /proc/stat (Linux), None elsewhere.

  Steal is time the hypervisor gave this VM's virtual CPUs to someone else: on a shared cloud machine it lengthens
  every wall-clock figure while no process here can see it. Differences of two readings give its share.
  """
  try:
    with open('/proc/stat', encoding='ascii') as f:
      fields = [int(v) for v in f.readline().split()[1:]]
  except (OSError, ValueError):
    return None
  return (fields[7] if len(fields) > 7 else 0), sum(fields[:8])


def steal_share(before, after) -> float:
  """Fraction of CPU time stolen by the hypervisor between two ``cpu_ticks()`` readings (NaN if unknown)."""
  if before is None or after is None or after[1] <= before[1]:
    return float('nan')
  return (after[0] - before[0]) / (after[1] - before[1])


# --------------------------------------------------------------------------------------------------------------
# The bibtex (or tiny) fixture shared by the scripts


def load_config(name: str):
  """``configs/<name>.py``'s config; ``'<name>:<arg>'``: its ``get_config(arg)``. The solver and epoch benchmarks
  read ``bibtex:base`` (five inner steps), the bibtex design their sections measure; the main job is the row
  ``mlc.MAIN_ROW`` since issue 45."""
  from implicit_jax.engine import config as config_lib  # pylint: disable=import-outside-toplevel
  name, _, arg = name.partition(':')
  return config_lib.from_file(ROOT / 'configs' / f'{name}.py', arg=arg or None)


def first_batch(task, batch_size: int) -> dict:
  """The first ``batch_size`` training rows, as a training batch: every contender of a script sees this batch."""
  train = task.splits['train']
  return {**{k: np.asarray(v[:batch_size]) for k, v in train.items()},
          'y': task.space.gold(np.asarray(train['y'][:batch_size]))}


# --------------------------------------------------------------------------------------------------------------
# Markdown


def table(header: list[str], rows: list[list[Any]]) -> str:
  lines = ['| ' + ' | '.join(header) + ' |', '|' + '---|' * len(header)]
  lines += ['| ' + ' | '.join(str(c) for c in row) + ' |' for row in rows]
  return '\n'.join(lines)


def command_line() -> str:
  """This benchmark's command as docs show it: its data directory as ``../shared/data``, no path of this machine
  (``records.portable``)."""
  from experiments import records  # pylint: disable=import-outside-toplevel
  script = os.path.relpath(os.path.abspath(sys.argv[0]), ROOT)
  return records.portable(' '.join(['python', script] + [shlex.quote(a) for a in sys.argv[1:]]))


def section_header(m: dict[str, Any]) -> str:
  date = datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')
  return f'Command: `{command_line()}` — {date}.\n\nMachine: {machine_line(m)}.\n'


def write_section(out: str, key: str, body: str) -> None:
  """Replaces the text between ``<!-- bench:key -->`` and ``<!-- /bench:key -->`` in ``out`` (appends the
  section when the markers are missing), so that each script can be rerun alone. ``out == '-'`` writes nothing."""
  if out == '-':
    return
  path = Path(out)
  start, end = f'<!-- bench:{key} -->', f'<!-- /bench:{key} -->'
  block = f'{start}\n{body.strip()}\n{end}'
  text = path.read_text(encoding='utf-8') if path.exists() else '# Benchmarks\n'
  pattern = re.compile(re.escape(start) + r'.*?' + re.escape(end), re.S)
  if pattern.search(text):
    text = pattern.sub(lambda _: block, text)
  else:
    text = text.rstrip('\n') + f'\n\n{block}\n'
  path.parent.mkdir(parents=True, exist_ok=True)
  path.write_text(text, encoding='utf-8')
  print(f'wrote section {key!r} of {path}')


def copy_to_readme(key: str, body: str, out: str, readme: Path = ROOT / 'README.md') -> None:
  """Copies the command line, machine line and table of a section ``body`` into README.md's
  ``<!-- bench:key -->`` block (nothing when README has no such block or ``out`` is '-')."""
  if out == '-' or f'<!-- bench:{key} -->' not in readme.read_text(encoding='utf-8'):
    return
  lines = body.strip().splitlines()
  command = next(line for line in lines if line.startswith('Command:'))
  machine = next(line for line in lines if line.startswith('Machine:'))
  table = [line for line in lines if line.startswith('|')]
  write_section(str(readme), key, '\n'.join([f'{command} {machine} Details: [docs/benchmarks.md](docs/benchmarks.md).',
                                             '', *table]))


class Problem:
  """One config's implicit method with the pieces of its step in the open.

  ``methods/implicit.py`` builds ``L_aux``, ``L_prim`` and the inner optimiser with ``make_losses`` and the step's
  batch with ``step_batch``; the unit-cost, jaxopt and unrolled benchmarks call the same functions, and
  ``check_against_step`` proves the pieces equal to the real jitted step (same theta_T, same phi after the outer
  update) before anything is timed.

  Attributes: config, task, method (``methods.build``), l_aux, l_prim, inner_opt, outer_opt, solver,
  step_rng (as ``train.py`` derives it), state (the initial State), batch (the fixed batch with the negatives'
  noise and the dropout key the step draws at ``state.step``).
  """

  def __init__(self, config, batch_size: int | None = None, task=None):
    from implicit_jax import bilevel, methods, tasks  # pylint: disable=import-outside-toplevel
    from implicit_jax.methods import implicit  # pylint: disable=import-outside-toplevel

    self.config = config
    self.task = task if task is not None else tasks.get_task(config)
    self.method = methods.build(self.task, config)
    losses = implicit.make_losses(self.task, config)
    self.l_aux, self.l_prim = losses.l_aux, losses.l_prim
    self.inner_opt = methods.make_optimizer(config.implicit.inner_optimizer, 'implicit.inner_optimizer')
    self.outer_opt = methods.make_optimizer(config.optimizer, 'optimizer')
    self.solver = bilevel.Solver.from_config(config.implicit.solver)
    rng = jax.random.key(config.seed)
    self.state = self.method.init(jax.random.fold_in(rng, 0))       # as train.py
    self.step_rng = jax.random.fold_in(rng, 1)
    self.raw_batch = first_batch(self.task, batch_size or config.batch_size)
    step_key = jax.random.fold_in(self.step_rng, self.state.step)
    self.batch = implicit.step_batch(jax.device_put(self.raw_batch), step_key, self.task.space,
                                     config.implicit.negatives)

  @property
  def theta(self):
    return self.state.params['theta']

  @property
  def phi(self):
    return self.state.params['phi']

  @property
  def theta_state(self):
    return self.state.opt_state['theta']

  def implicit_solve(self, solver=None, num_steps=None):
    from implicit_jax import bilevel  # pylint: disable=import-outside-toplevel
    return bilevel.ImplicitSolve(self.l_aux, self.inner_opt, num_steps or self.config.implicit.inner_steps,
                                 solver or self.solver)

  def jitted_step(self):
    """``(step, batch, replicated)``: ``method.train_step`` jitted exactly as ``train.make_train_step`` does
    (mesh, shardings, donated state), the fixed batch placed as ``data.shard_batch`` does. Built once."""
    if not hasattr(self, '_jitted_step'):
      from implicit_jax.engine import data, train  # pylint: disable=import-outside-toplevel
      _, replicated, sharded = train.data_parallel(self.config)
      step = train.make_train_step(self.method, self.step_rng, replicated, sharded)
      self._jitted_step = step, data.shard_batch(self.raw_batch, sharded), replicated
    return self._jitted_step

  def check_against_step(self) -> float:
    """Max relative difference between the real step's (theta_T, phi update) and the rebuilt pieces' ones."""
    import optax  # pylint: disable=import-outside-toplevel
    step, batch, replicated = self.jitted_step()
    state = jax.device_put(jax.tree.map(lambda a: a.copy(), self.state), replicated)  # the step donates it
    new_state, _ = step(state, batch)

    @xla_options.jit
    def rebuilt(theta, theta_state, phi, phi_state, batch):
      (_, (theta_t, _, _)), grad, _ = self.implicit_solve().value_and_grad(self.l_prim, phi, theta, theta_state,
                                                                           batch)
      updates, _ = self.outer_opt.update(grad, phi_state, phi)
      return theta_t, optax.apply_updates(phi, updates)

    theta_t, phi_1 = rebuilt(self.theta, self.theta_state, self.phi, self.state.opt_state['phi'], self.batch)
    delta = lambda new: jax.tree.map(lambda a, b: np.asarray(a, np.float64) - np.asarray(b, np.float64), new,
                                     self.phi)
    return max(max_rel_diff(theta_t, new_state.params['theta']),
               max_rel_diff(delta(phi_1), delta(new_state.params['phi'])))


def max_rel_diff(a, b) -> float:
  """``max over leaves of ||a - b|| / ||b||``."""
  return max(float(np.linalg.norm(np.asarray(x, np.float64) - np.asarray(y, np.float64))
                   / max(np.linalg.norm(np.asarray(y, np.float64)), 1e-30))
             for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)))
