r"""Our implicit outer gradient against the same bi-level gradient written with ``jaxopt.implicit_diff.custom_root``.

Usage: python -m benchmarks.vs_jaxopt [--reps 20] [--out docs/benchmarks.md | -]

Both sides return ``dL_prim/dphi`` for one batch and one set of parameters, jitted:

* ours: ``jax.grad`` through ``bilevel.ImplicitSolve`` (T_inner optax steps from the warm start, then the
  configured inverse-HVP solver on the linearised theta-gradient and one mixed VJP);
* jaxopt: ``custom_root(optimality_fun = grad_theta L_aux)`` around the same T_inner optax steps from the same
  warm start, ``solve`` = ``jaxopt.linear_solve.solve_cg`` (our ``cg``), ``solve_normal_cg`` (our
  ``normal_cg``) with the same maxiter, tol and damping (jaxopt's ``ridge``), or ``solve_gmres`` for our
  ``minres`` (jaxopt has no MINRES; GMRES with a Krylov space of the same size, ``restart`` = our iterations and
  one cycle, minimises the same residual over the same space, so the two agree up to round-off).

The gradients are compared first (relative difference ``||ours - jaxopt|| / ||jaxopt||``, and the largest such
ratio over parameter leaves), then timed interleaved; the ratio is jaxopt time / our time (above 1: we are
faster). Our ``cg`` stops at the first direction of non-positive curvature and jax.scipy's CG does not. For
``cg`` two more jaxopt rows therefore run with a smaller maxiter: ``equal HVPs`` as many CG iterations (HVPs) as
ours spent, the equal-work timing (the iteration that finds the non-positive curvature costs us an HVP but
moves nothing); ``matched`` as many CG updates as ours made, the agreement check (same iterate, one HVP fewer
than ours).
"""

import functools
import warnings

from benchmarks import common  # pylint: disable=wrong-import-position

import jax  # pylint: disable=wrong-import-position
import numpy as np  # pylint: disable=wrong-import-position

from implicit_jax import bilevel  # pylint: disable=wrong-import-position
from implicit_jax.engine import xla_options  # pylint: disable=wrong-import-position

with warnings.catch_warnings():
  warnings.simplefilter('ignore', DeprecationWarning)
  import jaxopt  # pylint: disable=wrong-import-position


def ours_fn(p: common.Problem, solver: bilevel.Solver):
  solve = p.implicit_solve(solver)

  @xla_options.jit
  def grad(phi, theta0, state0, batch):
    return jax.grad(lambda phi: p.l_prim(solve(phi, theta0, state0, batch)[0], phi, batch))(phi)

  return grad


def jaxopt_fn(p: common.Problem, solver: bilevel.Solver, maxiter: int):
  num_steps = p.config.implicit.inner_steps
  optimality = lambda theta, phi, batch: jax.grad(p.l_aux)(theta, phi, batch)
  kwargs = dict(maxiter=maxiter, tol=solver.tol, ridge=solver.damping or None)
  if solver.name == 'minres':
    solve = functools.partial(jaxopt.linear_solve.solve_gmres, tol=solver.tol, ridge=solver.damping or None,
                              restart=maxiter, maxiter=1)
  else:
    solve = functools.partial(jaxopt.linear_solve.solve_cg if solver.name == 'cg'
                              else jaxopt.linear_solve.solve_normal_cg, **kwargs)

  def inner(init, phi, batch):  # the warm start (theta0, optimiser state) is init_params: no gradient to it
    theta0, state0 = init
    return bilevel.inner_loop(p.l_aux, p.inner_opt, num_steps, phi, theta0, state0, batch)[0]

  root = jaxopt.implicit_diff.custom_root(optimality, solve=solve)(inner)

  @xla_options.jit
  def grad(phi, theta0, state0, batch):
    return jax.grad(lambda phi: p.l_prim(root((theta0, state0), phi, batch), phi, batch))(phi)

  return grad


def cg_updates(p: common.Problem, solver: bilevel.Solver) -> tuple[int, int]:
  """``(iterations reported, CG updates made)`` by our cg on this batch. An iteration that meets non-positive
  curvature is counted but moves nothing, so the iterate then equals that of one iteration fewer."""
  theta_t = bilevel.inner_loop(p.l_aux, p.inner_opt, p.config.implicit.inner_steps, p.phi, p.theta,
                               p.theta_state, p.batch)[0]
  v = jax.grad(p.l_prim)(theta_t, p.phi, p.batch)
  solve = lambda k: bilevel.solve_inverse_hvp(p.l_aux, theta_t, p.phi, p.batch, v,
                                              bilevel.Solver('cg', iterations=k, tol=solver.tol,
                                                             damping=solver.damping))
  u, info = solve(solver.iterations)
  reported = int(info['iterations'])
  if reported > 1 and common.max_rel_diff(solve(reported - 1)[0], u) == 0.0:
    return reported, reported - 1
  return reported, reported


def rel(a, b) -> float:
  fa, fb = (np.concatenate([np.ravel(np.asarray(x, np.float64)) for x in jax.tree.leaves(t)]) for t in (a, b))
  return float(np.linalg.norm(fa - fb) / np.linalg.norm(fb))


def run(reps):
  m = common.machine()
  print(common.machine_line(m), flush=True)
  rows, lines = [], []
  for config_name in ('bibtex:base', 'tiny'):
    task = None
    for solver_name in ('normal_cg', 'minres', 'cg'):
      config = common.load_config(config_name)
      config.implicit.solver.name = solver_name
      p = common.Problem(config, task=task)
      task = p.task
      solver = p.solver
      args = (p.phi, p.theta, p.theta_state, p.batch)
      contenders = {'ours': ours_fn(p, solver), 'jaxopt': jaxopt_fn(p, solver, solver.iterations)}
      note = {'ours': '', 'jaxopt': (f'gmres, restart {solver.iterations}, 1 cycle' if solver_name == 'minres'
                                     else f'maxiter {solver.iterations}')}
      if solver_name == 'cg':
        reported, updates = cg_updates(p, solver)
        note['ours'] = f'{reported} iterations ({reported} HVPs), {updates} updates'
        if reported < solver.iterations:
          contenders['jaxopt equal HVPs'] = jaxopt_fn(p, solver, reported)
          note['jaxopt equal HVPs'] = f'maxiter {reported}'
        if updates < reported:
          contenders['jaxopt matched'] = jaxopt_fn(p, solver, updates)
          note['jaxopt matched'] = f'maxiter {updates}'
      grads = {k: jax.block_until_ready(f(*args)) for k, f in contenders.items()}
      times = common.time_interleaved({k: functools.partial(f, *args) for k, f in contenders.items()}, reps)
      t_ours = common.median(times['ours'])
      for k in contenders:
        t = common.median(times[k])
        agree = '' if k == 'ours' else f'{rel(grads["ours"], grads[k]):.1e}'
        leaf = '' if k == 'ours' else f'{common.max_rel_diff(grads["ours"], grads[k]):.1e}'
        ratio = '' if k == 'ours' else f'{t / t_ours:.2f}'
        rows.append([config_name, solver_name, k, note[k], common.ms(t), common.spread(times[k]), agree, leaf,
                     ratio])
        if k != 'ours':
          lines.append(f'{config_name} {solver_name} {k}: rel diff {agree} (max leaf {leaf}), '
                       f'jaxopt / ours = {ratio}')
  result = common.table(['config', 'solver', 'implementation', 'solve', 'median ms', 'p25-p75 ms',
                         'rel diff vs ours', 'max leaf rel diff', 'jaxopt / ours time'], rows)
  print(result, *lines, sep='\n', flush=True)
  return m, result


def main():
  args = common.parser(__doc__.split('\n')[0]).parse_args()
  m, result = run(args.reps)
  body = f"""## Against jaxopt's `custom_root` (`benchmarks/vs_jaxopt.py`)

{common.section_header(m)}
Outer gradient dL_prim/dphi on one batch, both jitted; medians of {args.reps} interleaved repetitions. Configs as
committed: bibtex (batch 32, T_inner 5, 5 iterations) and tiny (batch 16, T_inner 2, 3 iterations); tol and
damping from the config (1e-4, 1e-2). Relative difference = `||ours - jaxopt|| / ||jaxopt||` over all of phi
(float32).

{result}
"""
  common.write_section(args.out, 'vs_jaxopt', body)


if __name__ == '__main__':
  main()
