r"""Print and record how closely the implicit gradient matches independent routes (float64).

Usage: python -m experiments.gradient_checks        -> docs/gradient_checks.md (its text pages/gradient_checks.md)

Uses the problems the tests check (implicit_jax/testing.py) and reports relative errors instead of pass/fail.
"""

import datetime
import functools
import sys
import warnings

import jax
import jax.numpy as jnp
import optax
from jax.flatten_util import ravel_pytree

jax.config.update('jax_enable_x64', True)

from implicit_jax import bilevel, testing  # pylint: disable=wrong-import-position
from implicit_jax.engine import cli  # pylint: disable=wrong-import-position
from implicit_jax.methods import implicit as implicit_lib  # pylint: disable=wrong-import-position
from implicit_jax.testing import dense_hessian, flat64, rel_err  # pylint: disable=wrong-import-position
from experiments import ROOT, tables  # pylint: disable=wrong-import-position

Solver = functools.partial(bilevel.Solver, damping=0.0)  # every check solves the undamped system


def central_fd(outer, phi, eps=1e-5):
  """d outer / d phi by central differences along every coordinate (a flat array)."""
  flat_phi, unravel = ravel_pytree(phi)
  return jnp.array([(outer(unravel(flat_phi + eps * e)) - outer(unravel(flat_phi - eps * e))) / (2 * eps)
                    for e in jnp.eye(flat_phi.size)])


def main():
  rows = []

  def add(check, solver, grad, reference, info=None):
    rows.append((check, solver, rel_err(grad, reference), float('nan') if info is None else float(info['residual'])))

  l_aux, l_prim, theta_star, phi, batch, exact = testing.ridge_problem()
  # GCR with fused products is exact in as many passes as theta has coordinates (6).
  for solver in (Solver('dense'), Solver('cg', iterations=50, tol=1e-12), Solver('normal_cg', iterations=50, tol=1e-14),
                 Solver('neumann', iterations=3000, alpha=1.0, power_iters=30), Solver('gcr', iterations=6)):
    grad, info = bilevel.hypergradient(l_prim, l_aux, theta_star(phi), phi, batch, solver)
    add('ridge, closed form', 'gcr (6 fused passes)' if solver.name == 'gcr' else solver.name, grad, exact, info)

  l_aux, l_prim, phi, batch, theta_star, newton = testing.spen_problem()
  hypergradient = lambda solver: bilevel.hypergradient(l_prim, l_aux, theta_star, phi, batch, solver)
  ours, info = hypergradient(Solver('dense'))
  with warnings.catch_warnings():
    warnings.simplefilter('ignore', DeprecationWarning)
    import jaxopt  # pylint: disable=import-outside-toplevel
  solver = jaxopt.implicit_diff.custom_root(lambda theta, p: jax.grad(l_aux)(theta, p, batch), solve=functools.partial(
      jaxopt.linear_solve.solve_cg, tol=1e-14, maxiter=1000))(newton)
  add('SPEN-like, jaxopt custom_root', 'dense', ours,
      jax.grad(lambda p: l_prim(solver(theta_star, p), p, batch))(phi), info)
  add('SPEN-like, central FD of the outer loss (every coordinate)', 'dense', ours,
      central_fd(lambda p: l_prim(newton(theta_star, p), p, batch), phi))

  hess = dense_hessian(l_aux, theta_star, phi, batch)
  opt = optax.sgd(float(1.0 / jnp.linalg.eigvalsh(hess).max()))
  unrolled = jax.jit(jax.grad(lambda p: l_prim(bilevel.inner_loop(l_aux, opt, 4000, p, theta_star,
                                                                    opt.init(theta_star), batch)[0], p, batch)))
  add('SPEN-like, unrolled through 4000 SGD steps', 'dense', ours, unrolled(phi))
  for s in (Solver('cg', iterations=200, tol=1e-13), Solver('normal_cg', iterations=400, tol=1e-15),
            Solver('neumann', iterations=20000, alpha=1.0, power_iters=50),
            Solver('cg', iterations=100, tol=1e-12, hvp='fd', fd_eps=1e-5)):
    g, i = hypergradient(s)
    add('SPEN-like, vs dense solve', f'{s.name}{" (fd HVP)" if s.hvp == "fd" else ""}', g, ours, i)

  # GCR (one reverse-over-forward pass per direction): MINRES's iterate at equal Krylov dimension, and the warm
  # start, one pass per step on the fixed system at theta*, converging to the dense solve.
  add('SPEN-like, 4 passes vs MINRES with 4 iterations', 'gcr', hypergradient(Solver('gcr', iterations=4))[0],
      *hypergradient(Solver('minres', iterations=4, tol=0.0)))
  g_theta = jax.grad(l_prim)(theta_star, phi, batch)
  warm = Solver('gcr', iterations=1, warm_start=True)
  step = jax.jit(lambda mem: bilevel.implicit_gcr(l_aux, theta_star, phi, batch, g_theta, warm, mem))
  memory = jax.tree.map(jnp.zeros_like, theta_star)
  for _ in range(300):
    implicit, memory, info = step(memory)
  add('SPEN-like, vs dense solve: 300 steps of one warm-started pass on the fixed system', 'gcr (warm)',
      jax.tree.map(jnp.add, jax.grad(l_prim, argnums=1)(theta_star, phi, batch), implicit), ours, info)

  v = jax.random.normal(jax.random.PRNGKey(3), (hess.shape[0],))
  unr = ravel_pytree(theta_star)[1]
  add('HVP (jvp of grad) vs dense Hessian', '-', flat64(bilevel.hvp(l_aux, theta_star, phi, batch, unr(v))), hess @ v)
  flat_phi, unr_phi = ravel_pytree(phi)
  cross = jax.jacfwd(lambda p: ravel_pytree(jax.grad(l_aux)(theta_star, unr_phi(p), batch))[0])(flat_phi)
  fused_h, fused_c = bilevel.fused_products(l_aux, theta_star, phi, batch, unr(v))
  add('fused products (reverse-over-forward): H v vs dense Hessian', 'gcr', fused_h, hess @ v)
  add('fused products: cross term vs dense d_phi d_theta L_aux', 'gcr', fused_c, cross.T @ v)

  # The proximal inner problem (implicit.proximal): Eq. 6 without weight decay, made strongly convex around the
  # warm start; the implicit gradient after T plain gradient steps at 1 / lambda_max (tests/test_proximal.py).
  _, l_prox, l_prim, phi, batch, anchor, newton = testing.proximal_problem()
  opt = optax.sgd(1.0 / implicit_lib.curvature(l_prox, anchor, phi, batch, iterations=3000))
  solve = bilevel.ImplicitSolve(l_prox, opt, testing.PROX_T_INNER, Solver('cg', iterations=200, tol=1e-13))
  (_, (theta, _, _)), ours, info = solve.value_and_grad(l_prim, phi, anchor, opt.init(anchor), batch)
  what = (f'proximal (mu {testing.PROX_MU:g}), {testing.PROX_T_INNER} GD steps '
          f'(stationarity {float(info["stationarity"]):.0e})')
  add(f'{what}, central FD through the Newton-resolved minimum', 'cg', ours,
      central_fd(lambda p: l_prim(newton(theta, p), p, batch), phi), info)
  add(f'{what}, unrolled through {2 * testing.PROX_T_INNER} steps', 'cg', ours, bilevel.UnrolledSolve(
      l_prox, opt, 2 * testing.PROX_T_INNER).value_and_grad(l_prim, phi, anchor, opt.init(anchor), batch)[1])

  text = tables.page('gradient_checks.md', {
      'date': datetime.date.today(), 'rows': '\n'.join(f'| {a} | {b} | {c:.2e} | {d:.1e} |' for a, b, c, d in rows)})
  (ROOT / 'docs' / 'gradient_checks.md').write_text(text)  # not wrapped: the page keeps its long line
  print(text, end='')

if __name__ == '__main__':
  sys.exit(cli.guarded(main))
