"""The implicit-gradient core, checked against independent routes in float64.

* ridge regression with the outer variable in the regulariser: closed-form theta*(phi) and hypergradient;
* a small SPEN-like problem (MLP inference net, local + global energy, L_aux = BCE + lambda E) solved to
  stationarity by Newton's method: jaxopt's ``custom_root``, central finite differences of the outer loss,
  and unrolled differentiation through a long inner loop;
* HVPs and mixed partials against dense second derivatives.
"""

import dataclasses
import functools
import warnings

import chex
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from jax.flatten_util import ravel_pytree

from implicit_jax import bilevel
# The reference problems are shared with experiments/gradient_checks.py, which reports these checks as numbers.
from implicit_jax.testing import dense_hessian, rel_err, ridge_problem, spen_problem
from tests.conftest import float64


# The checks below call the library's functions and autodiff through jax.jit: one compiled program per call
# signature instead of one per operation (eager), which is most of the time these small problems take.
hypergradient = jax.jit(bilevel.hypergradient, static_argnums=(0, 1, 5))
solve_inverse_hvp = jax.jit(bilevel.solve_inverse_hvp, static_argnums=(0, 5))


# ------------------------------------------------------------------------------------------------ ridge

@pytest.mark.parametrize('solver,tol', [
    (bilevel.Solver('dense', damping=0.0), 1e-6),
    (bilevel.Solver('cg', iterations=50, tol=1e-12, damping=0.0), 1e-6),
    (bilevel.Solver('normal_cg', iterations=50, tol=1e-14, damping=0.0), 1e-6),
    (bilevel.Solver('minres', iterations=50, tol=1e-14, damping=0.0), 1e-6),
    (bilevel.Solver('neumann', iterations=3000, alpha=1.0, power_iters=30, damping=0.0), 1e-4),
])
def test_ridge_hypergradient_matches_closed_form(x64, solver, tol):
  l_aux, l_prim, theta_star, phi, batch, exact = ridge_problem()
  grad, info = hypergradient(l_prim, l_aux, theta_star(phi), phi, batch, solver)
  assert rel_err(grad, exact) < tol
  assert info['residual'] < tol
  assert info['implicit_norm'] > 0 and info['explicit_norm'] == 0  # phi enters L_prim only through theta*


def test_ridge_custom_vjp_inner_loop_matches_closed_form(x64):
  """jax.grad through ImplicitSolve (inner loop run to convergence from zero) gives the closed form."""
  l_aux, l_prim, _, phi, batch, exact = ridge_problem()
  opt = optax.sgd(2e-3)
  inner = bilevel.ImplicitSolve(l_aux, opt, 5000, bilevel.Solver('cg', iterations=50, tol=1e-12, damping=0.0))
  theta0 = {'w': jnp.zeros(6)}
  outer = lambda p: l_prim(inner(p, theta0, opt.init(theta0), batch)[0], p, batch)
  assert rel_err(jax.jit(jax.grad(outer))(phi), exact) < 1e-6


def test_neumann_without_safe_step_diverges_and_says_so(x64):
  """alpha above 2 / lambda_max: the residual reports the divergence instead of hiding it."""
  l_aux, l_prim, theta_star, phi, batch, _ = ridge_problem()
  _, info = hypergradient(l_prim, l_aux, theta_star(phi), phi, batch,
                         bilevel.Solver('neumann', iterations=50, alpha=1.0, damping=0.0))
  assert info['residual'] > 1e3


# ------------------------------------------------------------------------------------------- SPEN-like

def assert_directional_fd(grad, outer, phi, first_key, atol, directions=3, eps=1e-5):
  """``grad`` agrees with central differences of ``outer`` along random unit directions of phi."""
  flat_phi, unravel = ravel_pytree(phi)
  flat_grad = ravel_pytree(grad)[0]
  for k in range(directions):
    d = jax.random.normal(jax.random.PRNGKey(first_key + k), flat_phi.shape)
    d = d / jnp.linalg.norm(d)
    fd = (outer(unravel(flat_phi + eps * d)) - outer(unravel(flat_phi - eps * d))) / (2 * eps)
    np.testing.assert_allclose(float(flat_grad @ d), float(fd), rtol=1e-6, atol=atol)


def test_spen_problem_is_solved_to_stationarity(x64):
  l_aux, l_prim, phi, batch, theta_star, _ = spen_problem()
  grad_norm = jnp.linalg.norm(ravel_pytree(jax.jit(jax.grad(l_aux))(theta_star, phi, batch))[0])
  assert grad_norm < 1e-10
  eigs = jnp.linalg.eigvalsh(dense_hessian(l_aux, theta_star, phi, batch))
  assert eigs.min() > 0  # a strict local minimum: the implicit function theorem applies
  # The SSVM hinge is active and away from its kink for every example, so L_prim is smooth here.
  net_y = jax.jit(jax.grad(l_prim, argnums=0))(theta_star, phi, batch)
  assert jnp.linalg.norm(ravel_pytree(net_y)[0]) > 0


@pytest.fixture
def spen_implicit_grad(x64):
  l_aux, l_prim, phi, batch, theta_star, _ = spen_problem()
  grad, info = hypergradient(l_prim, l_aux, theta_star, phi, batch, bilevel.Solver('dense', damping=0.0))
  assert info['residual'] < 1e-10 and info['implicit_norm'] > 1e-3
  return grad


def test_spen_matches_jaxopt_custom_root(spen_implicit_grad):
  with warnings.catch_warnings():
    warnings.simplefilter('ignore', DeprecationWarning)
    import jaxopt  # pylint: disable=import-outside-toplevel
  l_aux, l_prim, phi, batch, theta_star, newton = spen_problem()
  optimality = lambda theta, phi: jax.grad(l_aux)(theta, phi, batch)
  solve = functools.partial(jaxopt.linear_solve.solve_cg, tol=1e-14, maxiter=1000)

  @jaxopt.implicit_diff.custom_root(optimality, solve=solve)
  def inner_solver(init_theta, phi):
    return newton(init_theta, phi)

  reference = jax.jit(jax.grad(lambda p: l_prim(inner_solver(theta_star, p), p, batch)))(phi)
  assert rel_err(spen_implicit_grad, reference) < 1e-6


def test_spen_matches_central_finite_differences(spen_implicit_grad):
  l_aux, l_prim, phi, batch, theta_star, newton = spen_problem()
  del l_aux
  outer = lambda p: l_prim(newton(theta_star, p), p, batch)  # re-solve to stationarity for each phi
  assert_directional_fd(spen_implicit_grad, outer, phi, first_key=10, atol=1e-9)


def test_spen_matches_unrolled_differentiation(spen_implicit_grad):
  """Autodiff through 4000 SGD steps started at theta* converges to the implicit gradient."""
  l_aux, l_prim, phi, batch, theta_star, _ = spen_problem()
  lam_max = jnp.linalg.eigvalsh(dense_hessian(l_aux, theta_star, phi, batch)).max()
  opt = optax.sgd(float(1.0 / lam_max))

  @jax.jit
  def unrolled(p):
    theta, _, _ = bilevel.inner_loop(l_aux, opt, 4000, p, theta_star, opt.init(theta_star), batch)
    return l_prim(theta, p, batch)

  assert rel_err(jax.grad(unrolled)(phi), spen_implicit_grad) < 1e-5


def test_spen_custom_vjp_agrees_with_hypergradient_for_every_solver(spen_implicit_grad):
  """The custom_vjp route (what training uses) and its diagnostics agree with the direct formula."""
  l_aux, l_prim, phi, batch, theta_star, _ = spen_problem()
  opt = optax.sgd(1e-3)
  explicit = jax.jit(jax.grad(l_prim, argnums=1))(theta_star, phi, batch)
  at_star = jax.jit(l_prim)(theta_star, phi, batch)
  for solver, tol in ((bilevel.Solver('dense', damping=0.0), 1e-8),
                      (bilevel.Solver('cg', iterations=200, tol=1e-13, damping=0.0), 1e-7),
                      (bilevel.Solver('normal_cg', iterations=400, tol=1e-15, damping=0.0), 1e-6),
                      (bilevel.Solver('minres', iterations=400, tol=1e-15, damping=0.0), 1e-6),
                      (bilevel.Solver('neumann', iterations=20000, alpha=1.0, power_iters=50, damping=0.0), 1e-4)):
    inner = bilevel.ImplicitSolve(l_aux, opt, 1, solver)  # one step from theta*: stays at theta*
    (loss, _), grad, diag = jax.jit(lambda p: inner.value_and_grad(
        l_prim, p, theta_star, opt.init(theta_star), batch))(phi)
    assert rel_err(grad, spen_implicit_grad) < tol, solver.name
    np.testing.assert_allclose(diag['explicit_norm'], jnp.linalg.norm(ravel_pytree(explicit)[0]), rtol=1e-6)
    assert diag['residual'] < tol
    np.testing.assert_allclose(loss, at_star, rtol=1e-6)


# A plain CG written from implicit_jax/plugins.py's solver contract alone, as a user's module would be.
PLAIN_CG = '''
import jax, jax.numpy as jnp

def solve(matvec, v, solver):
  dot = lambda a, b: sum(jnp.vdot(x, y) for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)))
  axpy = lambda a, x, y: jax.tree.map(lambda xi, yi: a * xi + yi, x, y)
  rs0 = dot(v, v)

  def body(carry):
    k, x, r, p, rs = carry
    ap = matvec(p)
    step = rs / dot(p, ap)
    x, r = axpy(step, p, x), axpy(-step, ap, r)
    rs_new = dot(r, r)
    return k + 1, x, r, axpy(rs_new / rs, p, r), rs_new

  cond = lambda carry: (carry[0] < solver.iterations) & (carry[4] > solver.tol ** 2 * rs0)
  k, x, _, _, _ = jax.lax.while_loop(cond, body, (0, jax.tree.map(jnp.zeros_like, v), v, v, rs0))
  return x, {'iterations': k}
'''


def test_a_plugin_solver_and_the_built_in_cg_give_the_same_gradient(x64, tmp_path, monkeypatch):
  """One solver contract: a CG plug-in and the built-in ``cg``, through the custom VJP training uses, give the same
  hypergradient, and both that of a dense solve of the Hessian (``np.linalg.solve``, no library solver)."""
  (tmp_path / 'plain_cg.py').write_text(PLAIN_CG)
  monkeypatch.syspath_prepend(str(tmp_path))
  l_aux, l_prim, phi, batch, theta_star, _ = spen_problem()
  flat_phi, unravel_phi = ravel_pytree(phi)
  g_theta, g_phi = jax.jit(jax.grad(l_prim, argnums=(0, 1)))(theta_star, phi, batch)
  cross = jax.jit(jax.jacfwd(lambda p: ravel_pytree(jax.grad(l_aux)(theta_star, unravel_phi(p), batch))[0]))(flat_phi)
  h = np.asarray(dense_hessian(l_aux, theta_star, phi, batch))
  dense = ravel_pytree(g_phi)[0] - cross.T @ np.linalg.solve(h, ravel_pytree(g_theta)[0])
  opt = optax.sgd(1e-3)
  grads = {}
  for name in ('cg', 'plain_cg'):
    inner = bilevel.ImplicitSolve(l_aux, opt, 1, bilevel.Solver(name, iterations=200, tol=1e-13, damping=0.0))
    _, grad, diag = jax.jit(lambda p: inner.value_and_grad(l_prim, p, theta_star, opt.init(theta_star), batch))(phi)
    grads[name] = ravel_pytree(grad)[0]
    assert rel_err(grads[name], dense) < 1e-7 and diag['residual'] < 1e-7, name
  assert rel_err(grads["plain_cg"], grads["cg"]) < 1e-10


def test_stationarity_and_cosine_diagnostics_match_their_definitions(x64):
  """From a warm start away from theta*, a few inner steps: ``stationarity`` is ||grad L_aux(theta_T)|| over
  ||grad L_aux(theta_0)||, ``grad_norm`` the former, ``cosine`` the cosine of the explicit and implicit terms; all
  recomputed here from their definitions. At theta* the gradient norm is ~0 (the ratio there is one of two
  round-off-sized numbers)."""
  l_aux, l_prim, phi, batch, theta_star, _ = spen_problem()
  opt = optax.sgd(1e-3)
  theta0 = jax.tree.map(lambda t: t + 0.1, theta_star)
  inner = bilevel.ImplicitSolve(l_aux, opt, 3, bilevel.Solver('dense', damping=0.0))
  (_, (theta_t, _, _)), grad, diag = jax.jit(inner.value_and_grad, static_argnums=0)(
      l_prim, phi, theta0, opt.init(theta0), batch)
  norm = jax.jit(lambda t: jnp.linalg.norm(ravel_pytree(jax.grad(l_aux)(t, phi, batch))[0]))
  np.testing.assert_allclose(diag['grad_norm'], norm(theta_t), rtol=1e-10)
  np.testing.assert_allclose(diag['stationarity'], norm(theta_t) / norm(theta0), rtol=1e-10)
  assert 0.5 < diag['stationarity'] < 1  # three small steps: some progress, far from stationary
  explicit = ravel_pytree(jax.jit(jax.grad(l_prim, argnums=1))(theta_t, phi, batch))[0]
  implicit = ravel_pytree(grad)[0] - explicit
  np.testing.assert_allclose(diag['cosine'], explicit @ implicit / jnp.linalg.norm(explicit) /
                             jnp.linalg.norm(implicit), rtol=1e-8)
  at_star = bilevel.ImplicitSolve(l_aux, opt, 1, bilevel.Solver('dense', damping=0.0))
  _, _, diag = jax.jit(at_star.value_and_grad, static_argnums=0)(l_prim, phi, theta_star, opt.init(theta_star), batch)
  assert diag['grad_norm'] < 1e-8 * norm(theta0)


def test_none_solver_drops_exactly_the_implicit_term(x64):
  l_aux, l_prim, phi, batch, theta_star, _ = spen_problem()
  grad, info = hypergradient(l_prim, l_aux, theta_star, phi, batch, bilevel.Solver('none'))
  explicit = jax.jit(jax.grad(l_prim, argnums=1))(theta_star, phi, batch)
  assert rel_err(grad, explicit) == 0 and info['implicit_norm'] == 0


# ---------------------------------------------------------------------------------------- products

def test_hvp_and_mixed_vjp_match_dense_second_derivatives(x64):
  l_aux, _, phi, batch, theta_star, _ = spen_problem()
  theta = jax.tree.map(lambda t: t + 0.3, theta_star)  # a generic point, not only the minimum
  flat, unravel = ravel_pytree(theta)
  flat_phi, unravel_phi = ravel_pytree(phi)
  hess = dense_hessian(l_aux, theta, phi, batch)
  cross = jax.jit(jax.jacfwd(lambda p: ravel_pytree(jax.grad(l_aux)(theta, unravel_phi(p), batch))[0]))(flat_phi)
  v = jax.random.normal(jax.random.PRNGKey(3), flat.shape)
  hvp, mixed_vjp = (jax.jit(f, static_argnums=0) for f in (bilevel.hvp, bilevel.mixed_vjp))
  np.testing.assert_allclose(ravel_pytree(hvp(l_aux, theta, phi, batch, unravel(v)))[0], hess @ v,
                             rtol=1e-10, atol=1e-12)
  np.testing.assert_allclose(ravel_pytree(mixed_vjp(l_aux, theta, phi, batch, unravel(v)))[0],
                             cross.T @ v, rtol=1e-10, atol=1e-12)
  fd = ravel_pytree(jax.jit(bilevel.fd_hvp, static_argnums=(0, 5))(l_aux, theta, phi, batch, unravel(v), 1e-4))[0]
  assert rel_err(fd, hess @ v) < 1e-6  # O(eps^2) truncation error in float64


def test_fd_hvp_solver_option_close_to_exact(x64):
  l_aux, l_prim, phi, batch, theta_star, _ = spen_problem()
  exact, _ = hypergradient(l_prim, l_aux, theta_star, phi, batch, bilevel.Solver('cg', iterations=100,
                                                                                 tol=1e-12, damping=0.0))
  fd, _ = hypergradient(l_prim, l_aux, theta_star, phi, batch,
                        bilevel.Solver('cg', iterations=100, tol=1e-12, hvp='fd', fd_eps=1e-5, damping=0.0))
  assert rel_err(fd, exact) < 1e-5


def test_identity_is_the_zero_term_neumann_series(x64):
  l_aux, l_prim, phi, batch, theta_star, _ = spen_problem()
  a, _ = hypergradient(l_prim, l_aux, theta_star, phi, batch, bilevel.Solver('identity', alpha=0.3, damping=0.0))
  b, _ = hypergradient(l_prim, l_aux, theta_star, phi, batch,
                       bilevel.Solver('neumann', iterations=0, alpha=0.3, damping=0.0))
  assert rel_err(a, b) == 0


def test_damping_solves_the_shifted_system(x64):
  """Damped solvers solve H + delta I; the residual they report is that of the undamped H u = v, so that the
  bias damping adds shows (here ||delta u|| / ||v||, far from 0)."""
  l_aux, _, phi, batch, theta_star, _ = spen_problem()
  flat, unravel = ravel_pytree(theta_star)
  hess = dense_hessian(l_aux, theta_star, phi, batch)
  v = jax.random.normal(jax.random.PRNGKey(4), flat.shape)
  expected = jnp.linalg.solve(hess + 0.5 * jnp.eye(flat.size), v)
  undamped = jnp.linalg.norm(hess @ expected - v) / jnp.linalg.norm(v)
  assert undamped > 1e-2
  for name in ('dense', 'cg', 'minres'):
    u, info = solve_inverse_hvp(l_aux, theta_star, phi, batch, unravel(v),
                                bilevel.Solver(name, iterations=200, tol=1e-13, damping=0.5))
    np.testing.assert_allclose(ravel_pytree(u)[0], expected, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(info['residual'], undamped, rtol=1e-6)


@pytest.mark.parametrize('solver', [
    bilevel.Solver('neumann', iterations=4, alpha=0.05, damping=0.3),
    bilevel.Solver('identity', alpha=0.05, damping=0.3),
    bilevel.Solver('cg', iterations=3, tol=0.0, damping=0.3),
    bilevel.Solver('minres', iterations=3, tol=0.0, damping=0.3),
    bilevel.Solver('minres', iterations=3, tol=0.0, damping=0.0),
    bilevel.Solver('normal_cg', iterations=3, tol=0.0, damping=0.3),
    bilevel.Solver('dense', damping=0.3),
    bilevel.Solver('none'),
], ids=lambda s: f'{s.name}-{s.damping}')
def test_every_solver_reports_the_undamped_residual(x64, solver):
  """One definition for every solver, recomputed here from the returned u and the dense Hessian."""
  l_aux, _, phi, batch, theta_star, _ = spen_problem()
  theta = jax.tree.map(lambda t: t + 0.2, theta_star)
  flat, unravel = ravel_pytree(theta)
  hess = dense_hessian(l_aux, theta, phi, batch)
  v = jax.random.normal(jax.random.PRNGKey(8), flat.shape)
  u, info = solve_inverse_hvp(l_aux, theta, phi, batch, unravel(v), solver)
  expected = jnp.linalg.norm(hess @ ravel_pytree(u)[0] - v) / jnp.linalg.norm(v)
  np.testing.assert_allclose(info['residual'], expected, rtol=1e-8)
  assert expected > 1e-6  # none of these settings solves H u = v exactly: the check is not 0 == 0


def test_cg_stops_on_negative_curvature_instead_of_returning_nan(x64):
  f = lambda t, p, b: 0.5 * t['a'] @ (jnp.diag(jnp.array([1.0, -2.0, 3.0])) @ t['a'])
  theta = {'a': jnp.ones(3)}
  u, info = bilevel.solve_inverse_hvp(f, theta, {}, None, {'a': jnp.ones(3)},
                                      bilevel.Solver('cg', iterations=10, tol=1e-6, damping=0.0))
  assert jnp.all(jnp.isfinite(u['a'])) and info['residual'] > 1e-3


def test_normal_cg_on_indefinite_hessians(x64):
  """CG on H^2: exact in as many steps as H^2 has distinct eigenvalues, and never worse than u = 0."""
  diag = jnp.array([1.0, -2.0, 3.0])
  f = lambda t, p, b: 0.5 * t['a'] @ (diag * t['a'])
  theta, v = {'a': jnp.ones(3)}, {'a': jnp.array([1.0, 1.0, 1.0])}
  u, info = bilevel.solve_inverse_hvp(f, theta, {}, None, v,
                                      bilevel.Solver('normal_cg', iterations=3, tol=0.0, damping=0.0))
  A = np.testing.assert_allclose
  A(u['a'], 1.0 / diag, rtol=1e-10)
  assert info['residual'] < 1e-10 and info['iterations'] == 7  # 2 HVPs per iteration plus H v
  q, _ = jnp.linalg.qr(jax.random.normal(jax.random.PRNGKey(5), (20, 20)))
  h = q @ jnp.diag(jnp.linspace(-3.0, 5.0, 20)) @ q.T  # symmetric, indefinite
  g = lambda t, p, b: 0.5 * t['a'] @ (h @ t['a'])
  for k in (1, 2, 5):
    u, info = solve_inverse_hvp(g, {'a': jnp.zeros(20)}, {}, None, {'a': jnp.ones(20)},
                                bilevel.Solver('normal_cg', iterations=k, tol=0.0, damping=0.0))
    assert info['residual'] <= 1.0
    # The residual normal_cg reports (H u accumulated inside CG, no extra HVP) is that of H u = v.
    explicit = jnp.linalg.norm(h @ u['a'] - 1.0) / jnp.sqrt(20.0)
    A(info['residual'], explicit, rtol=1e-8)
    assert explicit > 1e-3  # not converged at k <= 5: the comparison is not 0 == 0


def test_minres_minimises_the_residual_over_the_krylov_space(x64):
  """MINRES on a symmetric indefinite H, checked three independent ways: the least-squares minimiser of
  ||H u - v|| over span{v, ..., H^(k-1) v} (dense lstsq), scipy's minres, and normal_cg at equal HVPs."""
  import scipy.sparse.linalg  # pylint: disable=import-outside-toplevel
  q, _ = jnp.linalg.qr(jax.random.normal(jax.random.PRNGKey(6), (30, 30)))
  h = np.asarray(q @ jnp.diag(jnp.linspace(-3.0, 5.0, 30)) @ q.T)
  v = np.asarray(jax.random.normal(jax.random.PRNGKey(7), (30,)))
  g = lambda t, p, b: 0.5 * t['a'] @ (h @ t['a'])
  solve = lambda solver: solve_inverse_hvp(g, {'a': jnp.zeros(30)}, {}, None, {'a': jnp.asarray(v)}, solver)
  previous = 1.0
  for k in (1, 2, 5, 9):
    u, info = solve(bilevel.Solver('minres', iterations=k, tol=0.0, damping=0.0))
    krylov = np.stack([np.linalg.matrix_power(h, i) @ v for i in range(k)], axis=1)
    c = np.linalg.lstsq(h @ krylov, v, rcond=None)[0]
    np.testing.assert_allclose(u['a'], krylov @ c, rtol=1e-7, atol=1e-9)
    explicit = np.linalg.norm(h @ np.asarray(u['a']) - v) / np.linalg.norm(v)
    np.testing.assert_allclose(info['residual'], explicit, rtol=1e-8)   # the recurrence's residual is the true one
    assert 1e-3 < explicit <= previous and info['iterations'] == k       # not converged yet, never worse
    previous = explicit
    # normal_cg's 2k + 1 HVPs search span{H v, H^3 v, ...}, inside MINRES's space of the same dimension.
    _, ncg = solve(bilevel.Solver('normal_cg', iterations=k, tol=0.0, damping=0.0))
    _, mr = solve(bilevel.Solver('minres', iterations=2 * k + 1, tol=0.0, damping=0.0))
    assert mr['residual'] <= ncg['residual'] * (1 + 1e-10)
  u, info = solve(bilevel.Solver('minres', iterations=60, tol=1e-12, damping=0.0))
  reference, status = scipy.sparse.linalg.minres(h, v, rtol=1e-13, maxiter=200)
  assert status == 0 and info['residual'] < 1e-10
  np.testing.assert_allclose(u['a'], reference, rtol=1e-8, atol=1e-10)
  np.testing.assert_allclose(u['a'], np.linalg.solve(h, v), rtol=1e-8, atol=1e-10)


def test_minres_exact_solution_and_zero_right_hand_side(x64):
  diag = jnp.array([1.0, -2.0, 3.0])
  f = lambda t, p, b: 0.5 * t['a'] @ (diag * t['a'])
  theta, v = {'a': jnp.ones(3)}, {'a': jnp.ones(3)}
  u, info = bilevel.solve_inverse_hvp(f, theta, {}, None, v,
                                      bilevel.Solver('minres', iterations=3, tol=0.0, damping=0.0))
  np.testing.assert_allclose(u['a'], 1.0 / diag, rtol=1e-10)  # three distinct eigenvalues: exact at k = 3
  assert info['residual'] < 1e-12
  # With tol = 0 it stops once the residual reaches round-off, before maxiter, and the iterate stays finite.
  u, info = bilevel.solve_inverse_hvp(f, theta, {}, None, v,
                                      bilevel.Solver('minres', iterations=50, tol=0.0, damping=0.0))
  np.testing.assert_allclose(u['a'], 1.0 / diag, rtol=1e-10)
  assert info['iterations'] < 50 and info['residual'] < 1e-12
  u, info = bilevel.solve_inverse_hvp(f, theta, {}, None, {'a': jnp.zeros(3)},
                                      bilevel.Solver('minres', iterations=10, tol=1e-6, damping=0.0))
  assert jnp.all(u['a'] == 0) and info['iterations'] == 0 and jnp.isfinite(info['residual'])


def test_float32_on_flax_params_agrees_with_float64():
  l_aux, l_prim, phi, batch, theta_star, _ = spen_problem()
  with float64():
    ref, _ = hypergradient(l_prim, l_aux, theta_star, phi, batch, bilevel.Solver('dense', damping=0.0))
  cast = lambda t: jax.tree.map(lambda a: jnp.asarray(a, jnp.float32), t)
  cg = bilevel.Solver('cg', iterations=60, tol=1e-6, damping=0.0)
  grad, info = jax.jit(lambda t, p, b: bilevel.hypergradient(l_prim, l_aux, t, p, b, cg))(
      cast(theta_star), cast(phi), cast(batch))
  chex.assert_trees_all_equal_dtypes(grad, cast(phi))
  assert rel_err(grad, ref) < 1e-3 and info['residual'] < 1e-3


# ------------------------------------------------------------------------------------------ errors

@pytest.mark.parametrize('kwargs,field', [
    ({'name': 'newton'}, 'solver.name'),
    ({'iterations': -1}, 'solver.iterations'),
    ({'alpha': -0.1}, 'solver.alpha'),
    ({'alpha': 0.0}, 'solver.alpha'),
    ({'damping': -1.0}, 'solver.damping'),
    ({'power_iters': 1.5}, 'solver.power_iters'),
    ({'hvp': 'approx'}, 'solver.hvp'),
    ({'name': 'cg', 'iterations': 0}, 'solver.iterations'),
])
def test_bad_solver_settings_name_the_field(kwargs, field):
  with pytest.raises(ValueError, match=field.replace('.', r'\.')):
    bilevel.Solver(**kwargs)


def test_unknown_solver_field_is_named():
  with pytest.raises(ValueError, match=r"unknown field\(s\) \['iters'\]"):
    bilevel.Solver.from_config({'name': 'cg', 'iters': 3})


def test_tangent_shape_mismatch_names_the_leaf():
  f = lambda t, p, b: jnp.sum(t['dense']['kernel'] ** 2)
  theta = {'dense': {'kernel': jnp.ones((3, 2))}}
  with pytest.raises(ValueError, match=r"v\['dense'\]\['kernel'\]: shape \(2, 3\) does not match theta shape"):
    bilevel.hvp(f, theta, {}, None, {'dense': {'kernel': jnp.ones((2, 3))}})
  with pytest.raises(ValueError, match='pytree structure'):
    bilevel.hvp(f, theta, {}, None, {'kernel': jnp.ones((3, 2))})


def test_bad_inner_steps():
  with pytest.raises(ValueError, match='num_steps'):
    bilevel.ImplicitSolve(lambda t, p, b: 0.0, optax.sgd(0.1), -1, bilevel.Solver())


@pytest.mark.parametrize('name, iterations, tol', [
    ('cg', 14, 1e-2),          # stops on the tolerance (at 8) before its 14 iterations
    ('cg', 4, 0.0),
    ('normal_cg', 14, 1e-3),
    ('minres', 14, 1e-2),
    ('minres', 4, 0.0),
    ('neumann', 6, 0.0),
    ('gcr', 6, 0.0),
])
def test_unrolled_solvers_give_the_loops_iterates(x64, name, iterations, tol):
  """``Solver.unroll`` writes the iterations as straight-line code; the result, the iteration count at which the
  tolerance stopped it and the residual must be the loop's."""
  q, _ = jnp.linalg.qr(jax.random.normal(jax.random.PRNGKey(3), (12, 12)))
  h = q @ jnp.diag(jnp.linspace(0.5, 4.0, 12)) @ q.T
  f = lambda t, p, b: 0.5 * t['a'] @ (h @ t['a']) + jnp.sum(jnp.sin(t['a'])) * p
  theta, v = {'a': 0.1 * jnp.arange(12.0)}, {'a': jnp.linspace(-1.0, 1.0, 12)}
  solve = lambda unroll: jax.jit(lambda t: bilevel.solve_inverse_hvp(
      f, t, 0.3, None, v, bilevel.Solver(name, iterations=iterations, tol=tol, alpha=0.1, power_iters=2,
                                         damping=0.0, unroll=unroll)))(theta)
  (u_loop, info_loop), (u_unrolled, info_unrolled) = solve(False), solve(True)
  np.testing.assert_allclose(u_unrolled['a'], u_loop['a'], rtol=1e-12, atol=1e-14)
  assert info_unrolled['iterations'] == info_loop['iterations']
  if tol:
    assert info_loop['iterations'] < (2 * iterations + 1 if name == 'normal_cg' else iterations)
  np.testing.assert_allclose(info_unrolled['residual'], info_loop['residual'], rtol=1e-10, atol=1e-14)


def test_unrolled_implicit_solve_matches_the_scanned_one(x64):
  """Inner steps and solver unrolled: the same inner trajectory, hypergradient and diagnostics."""
  f = lambda t, p, b: jnp.sum((t['a'] - p['w'] * b) ** 2) + 0.1 * jnp.sum(t['a'] ** 4)
  l_prim = lambda t, p, b: jnp.sum(jnp.cos(t['a'])) + jnp.sum(p['w'] ** 2)
  phi, theta, batch = {'w': jnp.array([0.5, -1.0, 2.0])}, {'a': jnp.zeros(3)}, jnp.array([1.0, 2.0, 0.5])
  opt = optax.adam(0.1)
  out = []
  for unroll in (False, True):
    inner = bilevel.ImplicitSolve(f, opt, 4, bilevel.Solver('minres', iterations=5, unroll=unroll, tol=1e-6,
                                                            damping=0.0))
    out.append(jax.jit(lambda p: inner.value_and_grad(l_prim, p, theta, opt.init(theta), batch))(phi))
  chex.assert_trees_all_close(out[0], out[1], rtol=1e-12, atol=1e-14)


# ---------------------------------------------------------------------------------------- unrolled route

def test_unrolled_route_is_the_derivative_of_the_inner_steps(x64):
  """``UnrolledSolve``'s gradient is autodiff through ``inner_loop`` (written out here), its explicit part is
  d_phi L_prim at theta_T, and ``outer_solve`` picks it by name; central finite differences of the same
  truncated procedure confirm the derivative independently."""
  l_aux, l_prim, phi, batch, theta_star, _ = spen_problem()
  opt = optax.adam(1e-2, eps_root=1e-16)
  theta0 = jax.tree.map(lambda t: t + 0.1, theta_star)
  route = bilevel.outer_solve(l_aux, opt, 4, bilevel.Solver('unrolled'))
  assert isinstance(route, bilevel.UnrolledSolve)
  (loss, (theta_t, _, losses)), grad, diag = jax.jit(route.value_and_grad, static_argnums=0)(
      l_prim, phi, theta0, opt.init(theta0), batch)

  @jax.jit
  def procedure(p):
    theta = theta0
    state = opt.init(theta0)
    for _ in range(4):
      updates, state = opt.update(jax.grad(l_aux)(theta, p, batch), state, theta)
      theta = optax.apply_updates(theta, updates)
    return l_prim(theta, p, batch)

  assert rel_err(grad, jax.jit(jax.grad(procedure))(phi)) < 1e-10
  np.testing.assert_allclose(loss, procedure(phi), rtol=1e-12)
  flat_phi, unravel = ravel_pytree(phi)
  d = jax.random.normal(jax.random.PRNGKey(11), flat_phi.shape)
  d = d / jnp.linalg.norm(d)
  fd = (procedure(unravel(flat_phi + 1e-5 * d)) - procedure(unravel(flat_phi - 1e-5 * d))) / 2e-5
  np.testing.assert_allclose(ravel_pytree(grad)[0] @ d, fd, rtol=1e-5)
  explicit = ravel_pytree(jax.jit(jax.grad(l_prim, argnums=1))(theta_t, phi, batch))[0]
  through = ravel_pytree(grad)[0] - explicit
  np.testing.assert_allclose(diag['explicit_norm'], jnp.linalg.norm(explicit), rtol=1e-10)
  np.testing.assert_allclose(diag['implicit_norm'], jnp.linalg.norm(through), rtol=1e-10)
  assert diag['implicit_norm'] > 1e-6 and 0 < diag['stationarity'] < 1 and diag['residual'] == 0
  assert losses.shape == (4,)
  with pytest.raises(ValueError, match='outer_solve'):
    bilevel.ImplicitSolve(l_aux, opt, 4, bilevel.Solver('unrolled'))


def test_the_solver_config_is_the_dataclass_with_its_defaults():
  """One set of solver defaults: ``implicit.solver`` is ``bilevel.Solver``'s fields at their defaults (less
  ``unroll``, which ``implicit.unroll`` sets), and those are the values the recorded runs used where they set none."""
  from implicit_jax.engine import config as config_lib  # pylint: disable=import-outside-toplevel
  section = config_lib.base_config().implicit.solver.to_dict()
  assert set(section) == {f.name for f in dataclasses.fields(bilevel.Solver)} - {'unroll'}
  assert bilevel.Solver.from_config(section) == bilevel.Solver()
  assert section == {'name': 'normal_cg', 'iterations': 5, 'alpha': 0.03, 'power_iters': 0, 'tol': 1e-4,
                     'damping': 1e-2, 'hvp': 'exact', 'fd_eps': 1e-3, 'track_residual': True, 'warm_start': False,
                     'reuse': 'none', 'track_stationarity': True}
