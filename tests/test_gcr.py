"""The fused GCR route of the implicit term (``bilevel.implicit_gcr``), checked in float64 against independent routes:
MINRES's iterates and the dense Krylov least-squares minimiser, a dense solve, the two-pass products (``hvp`` and
``mixed_vjp``) and dense second derivatives; its warm start on a fixed system, and the memory it carries through
``ImplicitSolve`` and the implicit method's training state.
"""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from jax.flatten_util import ravel_pytree

from implicit_jax import bilevel
from implicit_jax.solvers import reuse
from implicit_jax.testing import dense_hessian, flat64, rel_err, spen_problem

# The library's functions and autodiff through jax.jit below: one compiled program per call signature instead of one
# per operation (eager), which is most of the time these small problems take.
hypergradient = jax.jit(bilevel.hypergradient, static_argnums=(0, 1, 5))
implicit_gcr = jax.jit(bilevel.implicit_gcr, static_argnums=(0, 5))


def coupled_quadratic(n=30, m=7, seed=6, spectrum=(-3.0, 5.0)):
  """``f(t, p) = 1/2 t'Ht - t'Bp`` with symmetric indefinite H: ``d_theta f = H t - B p``, cross term ``-B``.
  Returns ``(f, h, b)``."""
  kq, kb = jax.random.split(jax.random.PRNGKey(seed))
  q, _ = jnp.linalg.qr(jax.random.normal(kq, (n, n)))
  h = q @ jnp.diag(jnp.linspace(*spectrum, n)) @ q.T
  b = jax.random.normal(kb, (n, m))
  return (lambda t, p, batch: 0.5 * t['a'] @ (h @ t['a']) - t['a'] @ (b @ p['w'])), np.asarray(h), np.asarray(b)


def gcr(f, v, solver, memory=None, theta=None, phi=None):
  n, m = v.shape[0], 7
  theta = {'a': jnp.zeros(n)} if theta is None else theta
  phi = {'w': jnp.ones(m)} if phi is None else phi
  mem = None if memory is None else {'a': jnp.asarray(memory)}
  return implicit_gcr(f, theta, phi, None, {'a': jnp.asarray(v)}, solver, mem)


def test_fused_products_match_dense_second_derivatives(x64):
  l_aux, _, phi, batch, theta_star, _ = spen_problem()
  theta = jax.tree.map(lambda t: t + 0.3, theta_star)  # a generic point
  flat, unravel = ravel_pytree(theta)
  flat_phi, unravel_phi = ravel_pytree(phi)
  hess = dense_hessian(l_aux, theta, phi, batch)
  cross = jax.jit(jax.jacfwd(lambda p: ravel_pytree(jax.grad(l_aux)(theta, unravel_phi(p), batch))[0]))(flat_phi)
  v = jax.random.normal(jax.random.PRNGKey(3), flat.shape)
  hv, cv = jax.jit(bilevel.fused_products, static_argnums=0)(l_aux, theta, phi, batch, unravel(v))
  np.testing.assert_allclose(ravel_pytree(hv)[0], hess @ v, rtol=1e-10, atol=1e-12)
  np.testing.assert_allclose(ravel_pytree(cv)[0], cross.T @ v, rtol=1e-10, atol=1e-12)


def test_gcr_is_minres_and_the_krylov_least_squares_minimiser(x64):
  """Cold GCR with k passes: the minimiser of ||H u - v|| over span{v, ..., H^(k-1) v} (dense lstsq), the same
  iterate and residual as our MINRES, and an implicit term equal to -C^T u with that u."""
  f, h, b = coupled_quadratic()
  v = np.asarray(jax.random.normal(jax.random.PRNGKey(7), (30,)))
  previous = 1.0
  for k in (1, 2, 5, 9):
    implicit, u, info = gcr(f, v, bilevel.Solver('gcr', iterations=k, damping=0.0))
    krylov = np.stack([np.linalg.matrix_power(h, i) @ v for i in range(k)], axis=1)
    c = np.linalg.lstsq(h @ krylov, v, rcond=None)[0]
    np.testing.assert_allclose(u['a'], krylov @ c, rtol=1e-7, atol=1e-9)
    m_u, m_info = bilevel.solve_inverse_hvp(f, {'a': jnp.zeros(30)}, {'w': jnp.ones(7)}, None,
                                            {'a': jnp.asarray(v)},
                                            bilevel.Solver('minres', iterations=k, tol=0.0, damping=0.0))
    np.testing.assert_allclose(u['a'], m_u['a'], rtol=1e-8, atol=1e-10)
    explicit = np.linalg.norm(h @ np.asarray(u['a']) - v) / np.linalg.norm(v)
    np.testing.assert_allclose(info['residual'], explicit, rtol=1e-8)
    np.testing.assert_allclose(m_info['residual'], explicit, rtol=1e-8)
    np.testing.assert_allclose(implicit['w'], b.T @ np.asarray(u['a']), rtol=1e-8, atol=1e-10)  # -C^T u, C = -B
    assert 1e-3 < explicit <= previous and info['iterations'] == k  # not converged yet, never worse
    previous = explicit
  implicit, u, info = gcr(f, v, bilevel.Solver('gcr', iterations=30, damping=0.0))
  np.testing.assert_allclose(u['a'], np.linalg.solve(h, v), rtol=1e-7, atol=1e-9)
  assert info['residual'] < 1e-9


def test_the_compiled_gcr_does_not_grow_with_its_iterations(x64):
  """The basis lives in fixed-size buffers inside a loop: the traced program has as many operations at 40
  iterations as at 2 (unrolled in Python it grew as k^2: 9 s to compile at 8 iterations, 30 s at 16, none at 32)."""
  f, _, _ = coupled_quadratic()
  v = jax.random.normal(jax.random.PRNGKey(7), (30,))

  def size(k, unroll=False):
    solver = bilevel.Solver('gcr', iterations=k, damping=0.1, unroll=unroll)
    theta, phi = {'a': jnp.zeros(30)}, {'w': jnp.ones(7)}
    traced = jax.make_jaxpr(lambda v: bilevel.implicit_gcr(f, theta, phi, None, {'a': v}, solver))(v)
    return len(traced.jaxpr.eqns)

  assert size(2) == size(40)
  assert size(3, unroll=True) < size(6, unroll=True)  # the straight-line route Solver.unroll asks for


def test_gcr_damping_solves_the_shifted_system_and_reports_the_undamped_residual(x64):
  f, h, _ = coupled_quadratic()
  v = np.asarray(jax.random.normal(jax.random.PRNGKey(9), (30,)))
  _, u, info = gcr(f, v, bilevel.Solver('gcr', iterations=30, damping=0.7))
  np.testing.assert_allclose(u['a'], np.linalg.solve(h + 0.7 * np.eye(30), v), rtol=1e-7, atol=1e-9)
  undamped = np.linalg.norm(h @ np.asarray(u['a']) - v) / np.linalg.norm(v)
  np.testing.assert_allclose(info['residual'], undamped, rtol=1e-8)
  assert undamped > 1e-2  # the damped solution does not solve H u = v: the check is not 0 == 0


def test_warm_start_from_the_solution_and_from_zero(x64):
  f, h, _ = coupled_quadratic()
  v = np.asarray(jax.random.normal(jax.random.PRNGKey(7), (30,)))
  solver = bilevel.Solver('gcr', iterations=1, damping=0.0, warm_start=True)
  _, u, info = gcr(f, v, solver, memory=np.linalg.solve(h, v))
  assert info['residual'] < 1e-10 and info['iterations'] == 2
  # A zero memory (the first step) adds no direction: the cold iterate.
  _, u0, info0 = gcr(f, v, solver, memory=np.zeros(30))
  _, cold, cold_info = gcr(f, v, bilevel.Solver('gcr', iterations=1, damping=0.0))
  np.testing.assert_allclose(u0['a'], cold['a'], rtol=1e-12, atol=1e-14)
  np.testing.assert_allclose(info0['residual'], cold_info['residual'], rtol=1e-12)


@pytest.mark.parametrize('spectrum,steps,reached', [((0.5, 5.0), 60, 1e-6), ((-3.0, 5.0), 150, 0.25)])
def test_warm_start_on_a_fixed_system_never_loses_ground(x64, spectrum, steps, reached):
  """One pass per step plus the memory: the residual never grows from step to step. On a positive definite H it
  reaches the solve (the memory and the residual span what a restarted two-term minimal-residual method keeps);
  on an indefinite one it still falls, more slowly, where the cold one-pass iterate stays where it is."""
  f, h, b = coupled_quadratic(spectrum=spectrum)
  v = np.asarray(jax.random.normal(jax.random.PRNGKey(7), (30,)))
  solver = bilevel.Solver('gcr', iterations=1, damping=0.0, warm_start=True)
  memory, residuals = np.zeros(30), []
  for _ in range(steps):
    implicit, u, info = gcr(f, v, solver, memory=memory)
    memory = np.asarray(u['a'])
    residuals.append(float(info['residual']))
  assert all(later <= earlier * (1 + 1e-9) for earlier, later in zip(residuals, residuals[1:]))
  assert residuals[0] > 0.1 and residuals[-1] < reached
  np.testing.assert_allclose(implicit['w'], b.T @ memory, rtol=1e-8, atol=1e-10)
  if reached < 1e-3:
    np.testing.assert_allclose(memory, np.linalg.solve(h, v), rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize('warm', [False, True])
def test_custom_vjp_route_is_minres_and_its_memory_is_the_solution(x64, warm):
  """The training route on the SPEN problem at its stationary point: k fused passes give MINRES's k-iteration
  hypergradient (two-pass products); the warm route hands back its u as the next step's memory, and from the
  dense solution as memory it gives the dense-solve hypergradient."""
  l_aux, l_prim, phi, batch, theta_star, _ = spen_problem()
  opt = optax.sgd(1e-3)
  k = 4
  reference, ref_info = hypergradient(l_prim, l_aux, theta_star, phi, batch,
                                      bilevel.Solver('minres', iterations=k, tol=0.0, damping=0.0))
  inner = bilevel.ImplicitSolve(l_aux, opt, 1, bilevel.Solver('gcr', iterations=k, damping=0.0, warm_start=warm))
  step = jax.jit(lambda p, mem: inner.step(l_prim, p, theta_star, opt.init(theta_star), batch, mem))
  (_, (theta_t, _, _)), grad, diag, u = step(phi, None)
  assert rel_err(grad, reference) < 1e-8
  np.testing.assert_allclose(diag['residual'], ref_info['residual'], rtol=1e-8)
  assert diag['residual'] > 1e-4  # k passes do not solve the system: the comparison is not 0 == 0
  assert 0 < diag['grad_norm'] < 1e-9  # at theta*: the stationarity diagnostic is paid for, finite and right
  assert 'memory' not in diag  # the memory is an output of its own, not a diagnostic
  if not warm:
    assert u is None
    return
  g_theta = flat64(jax.jit(jax.grad(l_prim))(theta_t, phi, batch))
  hess = np.asarray(dense_hessian(l_aux, theta_t, phi, batch))
  residual = np.linalg.norm(hess @ flat64(u) - g_theta) / np.linalg.norm(g_theta)
  np.testing.assert_allclose(diag['residual'], residual, rtol=1e-8)
  unravel = ravel_pytree(theta_t)[1]
  exact, _ = hypergradient(l_prim, l_aux, theta_star, phi, batch, bilevel.Solver('dense', damping=0.0))
  _, grad2, diag2, _ = step(phi, unravel(jnp.asarray(np.linalg.solve(hess, g_theta))))
  assert rel_err(grad2, exact) < 1e-6 and diag2['residual'] < 1e-8


def test_gcr_settings_are_checked():
  with pytest.raises(ValueError, match='solver.warm_start'):
    bilevel.Solver('minres', warm_start=True, iterations=10, tol=1e-6, damping=0.0)
  with pytest.raises(ValueError, match='solver.hvp'):
    bilevel.Solver('gcr', hvp='fd', iterations=10, damping=0.0)
  with pytest.raises(ValueError, match='solver.iterations'):
    bilevel.Solver('gcr', iterations=0, damping=0.0)
  assert jnp.isnan(bilevel.implicit_gcr(
      lambda t, p, b: 0.5 * jnp.sum(t['a'] ** 2) * p['w'], {'a': jnp.ones(3)}, {'w': jnp.ones(())}, None,
      {'a': jnp.ones(3)}, bilevel.Solver('gcr', track_stationarity=False, iterations=10, damping=0.0))[2]['grad_norm'])


@pytest.mark.parametrize('form', ['in the program', 'by the caller'])
@pytest.mark.parametrize('name', ['gcr', 'minres'])
def test_reuse_computes_the_term_every_kth_step_and_reuses_it_between(x64, name, form):
  """reuse 'r2': the first call's term is the every-step route's; the second call, at another phi, returns the first
  call's term and diagnostics unchanged; the third computes again at its own phi. The step's form is chosen in the
  program from the carried count ('r2'), or by the caller ('r2h': ``fresh``, the training loop's ``Method.form``)."""
  l_aux, l_prim, phi, batch, theta_star, _ = spen_problem()
  opt = optax.sgd(1e-3)
  solver = bilevel.Solver(name, iterations=3, tol=0.0, damping=0.0)
  every = bilevel.ImplicitSolve(l_aux, opt, 1, solver)
  every_k = bilevel.ImplicitSolve(l_aux, opt, 1, bilevel.Solver(
      name, iterations=3, tol=0.0, damping=0.0, reuse='r2h' if form == 'by the caller' else 'r2'))
  # One jitted function per route, so that each call signature is compiled once (it was once per call).
  jitted = [(inner, jax.jit(lambda p, mem, fresh, inner=inner: inner.step(
      l_prim, p, theta_star, opt.init(theta_star), batch, mem, fresh), static_argnums=2))
            for inner in (every, every_k)]
  calls = iter(range(3))
  run = lambda inner, p, mem: next(f for i, f in jitted if i is inner)(
      p, mem, every_k.fresh(next(calls)) if inner is every_k and form == 'by the caller' else None)
  explicit = jax.jit(lambda theta, p: jax.grad(l_prim, argnums=1)(theta, p, batch))
  other = jax.tree.map(lambda a: a * 1.1, phi)
  memory = None
  for k, p in enumerate((phi, other, other)):
    (_, (theta_t, _, _)), grad, diag, memory = run(every_k, p, memory)
    _, reference, ref_diag, _ = run(every, p, None)
    assert float(memory['count']) == k + 1
    if k != 1:  # computed here
      assert rel_err(grad, reference) < 1e-12
      np.testing.assert_allclose(diag['residual'], ref_diag['residual'], rtol=1e-10)
      if k == 0:
        term_0, residual_0 = jax.tree.map(jnp.subtract, grad, explicit(theta_t, p)), diag['residual']
    else:  # reused: the first step's term beside this phi's explicit gradient
      assert rel_err(grad, jax.tree.map(jnp.add, explicit(theta_t, p), term_0)) < 1e-12
      assert rel_err(grad, reference) > 1e-6  # the reused term is not this phi's: the check is not 0 == 0
      assert diag['residual'] == residual_0 and diag['iterations'] == 0


def test_reuse_names_are_parsed_into_one_policy():
  """The names are the rows' suffixes (``implicit-cd-gcr-T1-r3h``), and each parses back to its own name."""
  assert [(p.period, p.by_host, p.reused) for p in map(reuse.Reuse.parse, ('none', 'r3', 'r3h', 'r12'))] == [
      (1, False, False), (3, False, True), (3, True, True), (12, False, True)]
  for name in ('none', 'r2', 'r3h', 'r10h'):
    assert reuse.Reuse.parse(name).name == name
  # the step that solves: by the caller for 'r<k>h' only, None where the program decides or every step solves
  assert [reuse.Reuse.parse('r3h').fresh(k) for k in range(7)] == [True, False, False, True, False, False, True]
  assert reuse.Reuse.parse('r3').fresh(0) is None and reuse.Reuse.parse('none').fresh(0) is None
  assert bilevel.Solver('gcr', reuse='r3h', iterations=1).reuse_policy == reuse.Reuse(3, True)


@pytest.mark.parametrize('name', ['r1', 'r0', 'r03', '3', 'r', 'rh', 'r3x', 'R3', 'refresh', '', 3, None])
def test_an_unknown_reuse_name_is_named_with_the_accepted_forms(name):
  with pytest.raises(ValueError, match=r"solver.reuse: unknown value .*; choose 'none' .*'r<k>'.*'r<k>h'"):
    bilevel.Solver('gcr', reuse=name, iterations=1, damping=0.0)


def test_reuse_settings_are_checked():
  with pytest.raises(ValueError, match='solver.reuse: reusing the implicit term needs'):
    bilevel.Solver('gcr', reuse='r2', warm_start=True, iterations=10, damping=0.0)
  with pytest.raises(ValueError, match="solver.reuse: .* not 'none'"):
    bilevel.Solver('none', reuse='r2h')
  with pytest.raises(ValueError, match='solver.reuse: two programs need a reused term'):
    reuse.Reuse(1, by_host=True)
  with pytest.raises(ValueError, match='solver.reuse: the period'):
    reuse.Reuse(0)


def test_a_vanishing_right_hand_side_gives_a_bounded_relative_residual():
  """Every solver's relative residual goes through ``hessian.relative_residual``. A float32 right-hand side whose
  entries all lie near 1e-20 (d_theta L_prim while L_prim sits at exactly 0) has a computed norm of 0, its squares
  flushed to zero, while a residual of 3e-19 entries does not: over the smallest normal number that ratio is
  ~1e20, which stopped a bibtex run that recovered. Floored where float32 resolves norms, it is ~28 (the exact
  ratio is 30), under the divergence bound; above the floor it is the plain ratio, to the bit."""
  from implicit_jax.hessian import norm, relative_residual  # pylint: disable=import-outside-toplevel
  v, r = jnp.full((100,), 1e-20, jnp.float32), jnp.full((100,), 3e-19, jnp.float32)
  assert float(norm(v)) == 0.0 and float(norm(r)) > 0.0  # the underflow this is about happens here
  assert float(norm(r) / jnp.maximum(norm(v), jnp.finfo(jnp.float32).tiny)) > 1e19  # the former ratio
  assert 1.0 < float(jax.jit(relative_residual)(norm(r), norm(v))) < 30.0
  for a, b in ((0.37, 1.9), (2.5e-3, 4e-12), (7.0, 1e-17)):
    a, b = jnp.float32(a), jnp.float32(b)
    assert relative_residual(a, b) == a / b
