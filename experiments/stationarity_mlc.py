r"""How far the implicit gradient is from the derivative of what training actually does, as T_inner grows.

Usage:
  python -m implicit_jax.main --config=configs/bibtex.py --workdir=W      # a trained implicit run
  python -m experiments.stationarity_mlc --workdir=W [--steps=1,5,20,100] [--batches=4] [--out=docs/stationarity]

At the run's best-on-dev parameters (theta_0, phi), on a few training batches (negatives' noise and dropout
drawn as a training step draws them), for each number of inner steps T of the run's inner optimiser. Its state is
warmed first, as in training, by ``--warmup`` steps on L_aux over other training batches (phi fixed): from a fresh
state Adam's first step is lr * sign(g), whose derivative is zero, which would make the unrolled reference
meaningless:

* stationarity ||grad L_aux(theta_T)|| / ||grad L_aux(theta_0)|| (the IFT premise is 0);
* the outer gradient dL_prim/dphi by each route: ``none`` (explicit term only), the run's solver, MINRES with 5
  iterations, and a converged solve (MINRES, 200 iterations, tol 1e-6: the exact IFT gradient at theta_T);
* each route's relative distance ``||g - g_unrolled|| / ||g_unrolled||`` and cosine to ``unrolled``, the true
  derivative of the T steps (reverse mode through them), and the implicit term's norm over the explicit one's.

Medians over batches go to ``<out>.md`` with the command and date, and the picture to ``<out>.png``.
"""

import argparse
import dataclasses
import datetime
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
from implicit_jax.engine import cli  # pylint: disable=wrong-import-position
from implicit_jax import bilevel  # pylint: disable=wrong-import-position
from implicit_jax.engine import checkpoints, data  # pylint: disable=wrong-import-position
import experiments  # pylint: disable=wrong-import-position
from experiments import records  # pylint: disable=wrong-import-position
from implicit_jax.methods import implicit  # pylint: disable=wrong-import-position


def flat(tree):
  return jnp.concatenate([jnp.ravel(x) for x in jax.tree.leaves(tree)])


def compare(g, ref):
  g, ref = flat(g), flat(ref)
  return (float(jnp.linalg.norm(g - ref) / jnp.linalg.norm(ref)),
          float(g @ ref / (jnp.linalg.norm(g) * jnp.linalg.norm(ref))))


def main():
  parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument('--workdir', required=True)
  parser.add_argument('--data_dir', default='', help='override the run\'s data.data_dir')
  parser.add_argument('--steps', default='1,5,20,100', type=experiments.integers)
  parser.add_argument('--batches', type=int, default=4)
  parser.add_argument('--warmup', type=int, default=100, help='inner steps on other batches before measuring')
  parser.add_argument('--out', default=str(ROOT / 'docs' / 'stationarity'))
  args = parser.parse_args()
  run = checkpoints.load_trained(args.workdir, {'data.data_dir': args.data_dir} if args.data_dir else None)
  config, task = run.config, run.task
  if config.method != 'implicit':
    sys.exit(f'{args.workdir}: method {config.method!r}; this needs an implicit run')
  l_aux, l_prim, _, _ = implicit.make_losses(task, config)
  # The run's inner problem: Eq. 6, or its proximal form with the curvature-set step (implicit.proximal,
  # implicit.inner_curvature_step), whose optimiser state starts fresh each step and needs no warming.
  l_aux, opt, start = implicit.inner_problem(l_aux, config, differentiable=True)
  fresh = bool(config.implicit.inner_curvature_step)
  theta0, phi = run.params['theta'], run.params['phi']
  run_solver = bilevel.Solver.from_config(config.implicit.solver)
  routes = {'none': bilevel.Solver('none'),
            f'{run_solver.name} (run)': run_solver,
            'minres-5': dataclasses.replace(run_solver, name='minres', iterations=5),
            'converged': bilevel.Solver('minres', iterations=200, tol=1e-6, damping=0.0)}
  steps = args.steps
  rng = np.random.default_rng(config.seed)
  batches = data.train_batches(task, config.batch_size, rng)

  @jax.jit
  def warm(theta, state, batch):
    updates, state = opt.update(jax.grad(l_aux)(theta, phi, batch), state, theta)
    return jax.tree.map(jnp.add, theta, updates), state

  state0 = opt.init(theta0)
  for k in range(0 if fresh else args.warmup):
    batch = implicit.step_batch(jax.tree.map(jnp.asarray, next(batches)), jax.random.key(10 ** 6 + k), task.space,
                                config.implicit.negatives)
    theta0, state0 = warm(theta0, state0, dict(batch, anchor=theta0))
  rows = {}  # (T, route) -> list of (stationarity, distance, cosine, implicit/explicit)
  for b in range(args.batches):
    batch = implicit.step_batch(jax.tree.map(jnp.asarray, next(batches)), jax.random.key(b), task.space,
                                config.implicit.negatives)
    batch, state_b, _ = start(theta0, state0, phi, batch)
    for t in steps:
      unrolled = bilevel.UnrolledSolve(l_aux, opt, t)
      _, g_ref, d_ref = jax.jit(lambda p, s=unrolled: s.value_and_grad(l_prim, p, theta0, state_b, batch))(phi)
      rows.setdefault((t, 'unrolled'), []).append(
          (float(d_ref['stationarity']), 0.0, 1.0, float(d_ref['implicit_norm'] / d_ref['explicit_norm'])))
      for name, solver in routes.items():
        route = bilevel.ImplicitSolve(l_aux, opt, t, solver)
        _, g, d = jax.jit(lambda p, s=route: s.value_and_grad(l_prim, p, theta0, state_b, batch))(phi)
        dist, cos = compare(g, g_ref)
        rows.setdefault((t, name), []).append(
            (float(d['stationarity']), dist, cos, float(d['implicit_norm'] / d['explicit_norm'])))
      print(f'batch {b} T={t}: stationarity {float(d_ref["stationarity"]):.3f}; distance to unrolled: ' +
            ', '.join(f'{n} {rows[(t, n)][-1][1]:.3f}' for n in routes), flush=True)
  names = ['unrolled', *routes]
  table = ['| T_inner | route | stationarity | distance to unrolled | cosine to unrolled | implicit / explicit norm |',
           '|---|---|---|---|---|---|']
  for t in steps:
    for name in names:
      med = np.median(np.array(rows[(t, name)]), axis=0)
      table.append(f'| {t} | {name} | {med[0]:.3f} | {med[1]:.3f} | {med[2]:.3f} | {med[3]:.3f} |')
  out = Path(args.out)
  cfg = config.implicit
  problem = (f'inner problem L_aux + {cfg.proximal:g}/2 ||theta - theta_0||^2 (implicit.proximal)'
             if cfg.proximal else 'inner problem L_aux (Eq. 6)')
  if fresh:
    method = (f'{"Nesterov " if cfg.proximal else ""}gradient descent at 1 / lambda_max '
              f'({cfg.inner_curvature_step} power iterations at theta_0)')
  else:
    method = (f'{cfg.inner_optimizer.name} at {cfg.inner_optimizer.learning_rate:g}, its state warmed by '
              f'{args.warmup} steps on other batches')
  inner = f'{problem}, its optimiser {method}'
  text = '\n'.join([
      '# Inner stationarity and the implicit gradient, against the derivative of the inner steps',
      '',
      f'Made by `{records.portable("python " + " ".join(sys.argv), workdir="WORKDIR")}` on {datetime.date.today()} '
      f'({jax.default_backend()}), at the best-on-dev parameters of the run in WORKDIR, a trained run\'s workdir '
      f'(`{task.name}`{of_config(config)}, method `{config.method}`, '
      f'{config.implicit.primary_loss} loss, inference net {tuple(config.model.inference_hidden)}, {inner}). '
      f'Medians over {args.batches} training batches of {config.batch_size}. '
      '"distance": ||g - g_unrolled|| / ||g_unrolled|| of the whole outer gradient dL_prim/dphi; "unrolled" is '
      'reverse mode through the T steps, the true derivative of what the step computes; "converged" is MINRES '
      'run to tol 1e-6 without damping, the exact IFT gradient at theta_T; "none" is the explicit term alone. '
      'The implicit function theorem makes the implicit routes right when stationarity is 0.',
      '',
      *table,
      '',
      f'![stationarity]({out.name}.png)',
      ''])
  records.write_page(out.with_suffix('.md'), text)
  print(text)
  try:
    import matplotlib  # pylint: disable=import-outside-toplevel
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt  # pylint: disable=import-outside-toplevel
  except ImportError:
    print('matplotlib not installed: no figure', file=sys.stderr)
    return
  fig, (a0, a1) = plt.subplots(1, 2, figsize=(10, 3.8))
  a0.plot(steps, [np.median([r[0] for r in rows[(t, 'unrolled')]]) for t in steps], 'o-')
  a0.set(xscale='log', xlabel='inner steps T', ylabel='||grad L_aux(theta_T)|| / ||grad L_aux(theta_0)||',
         title='inner stationarity', ylim=(0, None))
  for name in routes:
    a1.plot(steps, [np.median([r[1] for r in rows[(t, name)]]) for t in steps], 'o-', label=name)
  a1.set(xscale='log', xlabel='inner steps T', ylabel='||g - g_unrolled|| / ||g_unrolled||',
         title='outer gradient vs the true derivative of T steps')
  a1.legend()
  fig.tight_layout()
  fig.savefig(out.with_suffix('.png'), dpi=110)



def of_config(config) -> str:
  """', row `configs/...`' when the run names the config (and row) it was made from, else ''."""
  return f', row `{config.config_file}`' if config.get('config_file') else ''


if __name__ == '__main__':
  sys.exit(cli.guarded(main))
