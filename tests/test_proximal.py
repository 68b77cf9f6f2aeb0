"""The proximal inner problem (``implicit.proximal``) and the curvature-set inner step
(``implicit.inner_curvature_step``): with ``L_aux + mu/2 ||theta - theta_t||^2`` a few gradient steps reach the
stationary point, and the implicit gradient after them is the exact derivative of the outer loss through
``theta*(phi)``, checked in float64 against routes that share no code with ``bilevel``'s solvers: central finite
differences with theta* re-solved by Newton's method, jaxopt's ``custom_root``, and a dense Hessian's spectrum.
"""

import functools
import warnings

import chex
import jax
import numpy as np
import optax
import pytest

from implicit_jax import bilevel, methods, tasks
from implicit_jax.engine import data
from implicit_jax.methods import implicit
from tests.conftest import float64, load_config
# The problem is shared with experiments/gradient_checks.py, which reports these checks as numbers.
from implicit_jax.testing import PROX_MU as MU, PROX_T_INNER as T_INNER
from implicit_jax.testing import dense_hessian, rel_err
from implicit_jax.testing import proximal_problem as problem
from tests.test_bilevel import assert_directional_fd


def test_proximal_term_shifts_the_hessian_by_mu_and_centres_at_the_anchor(x64):
  l_aux, l_prox, _, phi, batch, anchor, _ = problem()
  h, h_prox = dense_hessian(l_aux, anchor, phi, batch), dense_hessian(l_prox, anchor, phi, batch)
  np.testing.assert_allclose(h_prox, h + MU * np.eye(len(h)), atol=1e-12)
  # At the anchor the proximal term neither adds value nor gradient.
  np.testing.assert_allclose(l_prox(anchor, phi, batch), l_aux(anchor, phi, batch), rtol=1e-14)
  chex.assert_trees_all_close(jax.grad(l_prox)(anchor, phi, batch), jax.grad(l_aux)(anchor, phi, batch),
                              atol=1e-14)
  # Eq. 6 alone is indefinite here (the premise of the IFT fails at the warm start); mu makes it positive definite.
  eigs, eigs_prox = np.linalg.eigvalsh(h), np.linalg.eigvalsh(h_prox)
  assert eigs.min() < 0 < eigs_prox.min()


def test_curvature_is_the_largest_eigenvalue_of_the_dense_hessian(x64):
  _, l_prox, _, phi, batch, anchor, _ = problem()
  top = np.abs(np.linalg.eigvalsh(dense_hessian(l_prox, anchor, phi, batch))).max()
  # The two largest eigenvalues here are 1% apart, so power iteration needs thousands of steps to converge; a
  # short run is a lower bound (||H x|| <= lambda_max for unit x), which is what makes 1 / estimate a safe cap
  # on the step as long as it stays above lambda_max / 2.
  np.testing.assert_allclose(float(implicit.curvature(l_prox, anchor, phi, batch, iterations=3000)), top,
                             rtol=1e-9)
  for k in (1, 5, 20):
    assert top / 2 < implicit.curvature(l_prox, anchor, phi, batch, iterations=k) <= top * (1 + 1e-12)


@pytest.fixture(scope='module')
def solved():
  """T_INNER steps of gradient descent at 1 / lambda_max from the anchor, and the implicit gradient there (in
  float64; computed once for the tests below, which read it)."""
  with float64():
    _, l_prox, l_prim, phi, batch, anchor, _ = problem()
    lam = implicit.curvature(l_prox, anchor, phi, batch, iterations=3000)
    opt = optax.sgd(1.0 / lam)
    solve = bilevel.ImplicitSolve(l_prox, opt, T_INNER, bilevel.Solver('cg', iterations=200, tol=1e-13,
                                                                       damping=0.0))
    (_, (theta, _, _)), grad, diag = jax.jit(solve.value_and_grad, static_argnums=0)(
        l_prim, phi, anchor, opt.init(anchor), batch)
  return theta, grad, diag, opt


def test_gradient_steps_reach_the_proximal_stationary_point(solved, x64):
  theta, _, diag, _ = solved
  _, l_prox, _, phi, batch, _, newton = problem()
  assert diag['stationarity'] < 1e-8
  assert rel_err(theta, newton(theta, phi)) < 1e-8
  eigs = np.linalg.eigvalsh(dense_hessian(l_prox, theta, phi, batch))
  assert eigs.min() > 0  # a strict minimum: the implicit function theorem applies


def test_implicit_gradient_matches_finite_differences_through_the_re_solved_minimum(solved, x64):
  theta, grad, _, _ = solved
  _, _, l_prim, phi, batch, _, newton = problem()
  outer = lambda p: l_prim(newton(theta, p), p, batch)
  assert_directional_fd(grad, outer, phi, first_key=20, atol=1e-10)


def test_implicit_gradient_matches_jaxopt_custom_root(solved, x64):
  with warnings.catch_warnings():
    warnings.simplefilter('ignore', DeprecationWarning)
    import jaxopt  # pylint: disable=import-outside-toplevel
  theta, grad, _, _ = solved
  _, l_prox, l_prim, phi, batch, _, newton = problem()
  optimality = lambda t, p: jax.grad(l_prox)(t, p, batch)

  @jaxopt.implicit_diff.custom_root(optimality, solve=functools.partial(jaxopt.linear_solve.solve_cg, tol=1e-14,
                                                                           maxiter=1000))
  def inner(init, p):
    return newton(init, p)

  reference = jax.jit(jax.grad(lambda p: l_prim(inner(theta, p), p, batch)))(phi)  # one program, not one per op
  assert rel_err(grad, reference) < 1e-8


def test_implicit_gradient_equals_the_derivative_of_the_converged_inner_steps(solved, x64):
  """Once the steps converge, backprop through them (the truncated procedure's true derivative) and the IFT agree:
  the proximal problem closes the gap docs/stationarity.md measures for Eq. 6."""
  _, grad, _, opt = solved
  _, l_prox, l_prim, phi, batch, anchor, _ = problem()
  unrolled = bilevel.UnrolledSolve(l_prox, opt, 2 * T_INNER)
  _, reference, diag = jax.jit(unrolled.value_and_grad, static_argnums=0)(l_prim, phi, anchor, opt.init(anchor), batch)
  assert diag['stationarity'] < 1e-12
  assert rel_err(grad, reference) < 1e-6
  # With mu = 0 the same number of steps leave Eq. 6 far from stationary: the premise fails there.
  l_aux = problem()[0]
  eq6 = bilevel.UnrolledSolve(l_aux, opt, T_INNER)
  assert jax.jit(eq6.value_and_grad, static_argnums=0)(
      l_prim, phi, anchor, opt.init(anchor), batch)[2]['stationarity'] > 1e-3


def tiny(**implicit_overrides):
  config = load_config('tiny')
  for key, value in implicit_overrides.items():
    setattr(config.implicit, key, value)
  return config


def test_training_step_uses_the_curvature_step_and_logs_it():
  config = tiny(proximal=1.0, inner_curvature_step=20, inner_steps=10)
  config.implicit.inner_optimizer.learning_rate = 100.0  # a cap above 1 / lambda_max: the estimate sets the step
  config.implicit.solver.name = 'cg'
  task = tasks.get_task(config)
  m = methods.build(task, config)
  state = m.init(jax.random.key(0))
  batch = next(data.train_batches(task, 16, np.random.default_rng(0)))
  _, metrics = jax.jit(m.train_step)(state, batch, jax.random.key(1))
  chex.assert_tree_all_finite(metrics)
  np.testing.assert_allclose(metrics['inner_lr'], 1.0 / metrics['lambda_max'], rtol=1e-6)
  # The same step without the proximal term and with the default inner optimiser stays far from stationary.
  base = tiny(inner_steps=10)
  m0 = methods.build(tasks.get_task(base), base)
  _, metrics0 = jax.jit(m0.train_step)(m0.init(jax.random.key(0)), batch, jax.random.key(1))
  assert metrics['stationarity'] < 0.5 * metrics0['stationarity']

  config.implicit.inner_optimizer.learning_rate = 1e-3  # a cap below 1 / lambda_max: the cap holds
  m = methods.build(task, config)
  _, metrics = jax.jit(m.train_step)(state, batch, jax.random.key(1))
  np.testing.assert_allclose(metrics['inner_lr'], 1e-3, rtol=1e-6)


@pytest.mark.parametrize('field,value', [('proximal', -1.0), ('inner_curvature_step', -2)])
def test_bad_settings_name_the_field(field, value):
  config = tiny(**{field: value})
  with pytest.raises(ValueError, match=f'implicit.{field}'):
    methods.build(tasks.get_task(config), config)
