r"""How far the implicit gradient is from the derivative of what training actually does, as T_inner grows.

Usage:
  python -m implicit_jax.main --config=configs/bibtex.py --workdir=W      # a trained implicit run
  python -m experiments.stationarity_mlc --workdir=W [--steps=1,5,20,100] [--batches=4] [--out=docs/stationarity]

On training batches drawn as a training step draws them, the outer gradient by each route against reverse mode through
T inner steps (experiments/pages/stationarity.md), the inner optimiser's state first warmed by ``--warmup`` steps on
other batches: from a fresh state Adam's first step is lr * sign(g), whose derivative is zero. Writes <out>.md, .png.
"""

import collections
import dataclasses
import datetime
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree

from implicit_jax import bilevel
from implicit_jax.engine import cli, data, plots
from implicit_jax.methods import implicit
import experiments
from experiments import tables
from experiments.energy_analysis import config_row, made_by, parse_run


def measures(diagnostics, g=None, ref=None) -> tuple:
  """A table row's numbers: (stationarity, ||g - ref|| / ||ref||, cosine of g and ref over every parameter,
  implicit / explicit norm); ``g`` None: the reference itself."""
  distance, cosine = 0.0, 1.0
  if g is not None:
    g, ref = ravel_pytree(g)[0], ravel_pytree(ref)[0]
    norm = jnp.linalg.norm(ref)
    distance, cosine = float(jnp.linalg.norm(g - ref) / norm), float(g @ ref / (jnp.linalg.norm(g) * norm))
  return (float(diagnostics['stationarity']), distance, cosine,
          float(diagnostics['implicit_norm'] / diagnostics['explicit_norm']))


def main():
  args, run = parse_run(__doc__, 'a trained run of method=implicit', {
      '--steps': {'default': '1,5,20,100', 'type': experiments.integers}, '--batches': {'type': int, 'default': 4},
      '--warmup': {'type': int, 'default': 100, 'help': 'inner steps on other batches before measuring'},
      '--out': {'default': str(experiments.ROOT / 'docs' / 'stationarity')}})
  config, task, cfg = run.config, run.task, run.config.implicit
  l_aux, l_prim, _, _ = implicit.make_losses(task, config)
  # The run's inner problem: Eq. 6, or its proximal form with the curvature-set step (implicit.proximal,
  # implicit.inner_curvature_step), whose optimiser state starts fresh each step and needs no warming.
  l_aux, opt, start = implicit.inner_problem(l_aux, config, differentiable=True)
  fresh = bool(cfg.inner_curvature_step)
  theta0, phi = run.params['theta'], run.params['phi']
  run_solver = bilevel.Solver.from_config(cfg.solver)
  routes = {'none': bilevel.Solver('none'), f'{run_solver.name} (run)': run_solver,
            'minres-5': dataclasses.replace(run_solver, name='minres', iterations=5),
            'converged': bilevel.Solver('minres', iterations=200, tol=1e-6, damping=0.0)}
  batches = data.train_batches(task, config.batch_size, np.random.default_rng(config.seed))
  draw = lambda key: implicit.step_batch(jax.tree.map(jnp.asarray, next(batches)), jax.random.key(key), task.space,
                                         cfg.negatives)

  @jax.jit
  def warm(theta, state, batch):
    updates, state = opt.update(jax.grad(l_aux)(theta, phi, batch), state, theta)
    return jax.tree.map(jnp.add, theta, updates), state

  state0 = opt.init(theta0)
  for k in range(0 if fresh else args.warmup):
    theta0, state0 = warm(theta0, state0, dict(draw(10 ** 6 + k), anchor=theta0))
  rows = collections.defaultdict(list)  # (T, route) -> [measures of each batch]
  for b in range(args.batches):
    batch, state_b, _ = start(theta0, state0, phi, draw(b))
    grad = lambda solve: jax.jit(lambda p: solve.value_and_grad(l_prim, p, theta0, state_b, batch))(phi)[1:]
    for t in args.steps:
      g_ref, d_ref = grad(bilevel.UnrolledSolve(l_aux, opt, t))
      rows[(t, 'unrolled')].append(measures(d_ref))
      for name, solver in routes.items():
        g, d = grad(bilevel.ImplicitSolve(l_aux, opt, t, solver))
        rows[(t, name)].append(measures(d, g, g_ref))
      print(f'batch {b} T={t}: stationarity {float(d_ref["stationarity"]):.3f}; distance to unrolled: ' +
            ', '.join(f'{n} {rows[(t, n)][-1][1]:.3f}' for n in routes), flush=True)
  medians = {key: np.median(np.array(values), axis=0) for key, values in rows.items()}
  table = ['| T_inner | route | stationarity | distance to unrolled | cosine to unrolled | implicit / explicit norm |',
           '|---|---|---|---|---|---|']
  table += [f'| {t} | {name} | ' + ' | '.join(f'{m:.3f}' for m in medians[(t, name)]) + ' |'
            for t in args.steps for name in ['unrolled', *routes]]
  problem = (f'inner problem L_aux + {cfg.proximal:g}/2 ||theta - theta_0||^2 (implicit.proximal)'
             if cfg.proximal else 'inner problem L_aux (Eq. 6)')
  method = (f'{"Nesterov " if cfg.proximal else ""}gradient descent at 1 / lambda_max ({cfg.inner_curvature_step} '
            'power iterations at theta_0)' if fresh else f'{cfg.inner_optimizer.name} at '
            f'{cfg.inner_optimizer.learning_rate:g}, its state warmed by {args.warmup} steps on other batches')
  out = Path(args.out)
  text = tables.page('stationarity.md', {
      'command': made_by(), 'date': datetime.date.today(), 'backend': jax.default_backend(), 'task': task.name,
      'row': config_row(config, before=', '), 'method': config.method,
      'loss': cfg.primary_loss, 'hidden': tuple(config.model.inference_hidden),
      'inner': f'{problem}, its optimiser {method}',
      'batches': args.batches, 'batch_size': config.batch_size, 'table': '\n'.join(table), 'name': out.name},
      out.with_suffix('.md'))
  print(text)
  try:
    fig = plots.import_figure()(figsize=(10, 3.8))
  except ImportError:
    print('matplotlib not installed: no figure', file=sys.stderr)
    return
  a0, a1 = fig.subplots(1, 2)
  for ax, k, names in ((a0, 0, ['unrolled']), (a1, 1, routes)):  # k: the measure drawn
    for name in names:
      ax.plot(args.steps, [medians[(t, name)][k] for t in args.steps], 'o-', label=name)
  a0.set(xscale='log', xlabel='inner steps T', ylabel='||grad L_aux(theta_T)|| / ||grad L_aux(theta_0)||',
         title='inner stationarity', ylim=(0, None))
  a1.set(xscale='log', xlabel='inner steps T', ylabel='||g - g_unrolled|| / ||g_unrolled||',
         title='outer gradient vs the true derivative of T steps')
  a1.legend()
  fig.tight_layout()
  fig.savefig(out.with_suffix('.png'), dpi=110)


if __name__ == '__main__':
  sys.exit(cli.guarded(main))
