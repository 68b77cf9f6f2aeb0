"""The implicit gradient on sequences, checked against independent routes in float64.

``test_bilevel.py`` checks the solver core on a multi-label problem. Here the losses are the tagging task's own
(``implicit.make_losses``: BiLSTM inference net, Eq. 7 energy, masked token cross-entropy, CD primary loss over
sampled tag sequences), so what is checked is the plumbing a sequence task adds: masks, padding, the per-token
simplex relaxation. At a Newton-polished stationary point of L_aux (plus a weight decay that makes it a strict
minimum), our dense-solve hypergradient is compared with jaxopt's implicit differentiation (``root_vjp``), the
training route (``ImplicitSolve``'s custom_vjp with the tagging configs' default solver run to convergence) with it,
and the hypergradient of a batch with extra padding with that of the same sentences padded less.
"""

import functools
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from jax.flatten_util import ravel_pytree

from implicit_jax import bilevel, methods, tasks
from implicit_jax.engine import data
from implicit_jax.methods import implicit
from tests.conftest import float64, load_config
from implicit_jax.testing import dense_hessian, rel_err

WEIGHT_DECAY = 0.05


def to64(tree):
  return jax.tree.map(lambda a: jnp.asarray(a, jnp.float64) if jnp.issubdtype(a.dtype, jnp.floating) else a, tree)


def pad_to(batch, length):
  """The same sentences with padding up to ``length`` tokens: mask, word and tag 0 there, and uniform noise (the
  sampler's input, drawn for every padded position in training) of 0.5."""
  extra = length - batch['mask'].shape[1]
  return {k: jnp.pad(v, [(0, 0), (0, extra)] + [(0, 0)] * (v.ndim - 2)) if v.ndim >= 2 and k != 'noise' else v
          for k, v in batch.items()} | {'noise': jnp.pad(batch['noise'], [(0, 0), (0, 0), (0, extra), (0, 0)],
                                                          constant_values=0.5)}


@functools.lru_cache(maxsize=None)
def problem():
  """The tagging task's L_aux (+ weight decay) and L_prim on 4 sentences, and a stationary point theta*."""
  config = load_config('tiny_tagging')
  config.model.encoder = 'bilstm'
  config.model.embedding_dim = config.model.hidden = config.model.energy_hidden = 3
  config.model.dropout = 0.0
  config.implicit.primary_loss = 'cd'
  task = tasks.get_task(config)
  with float64():
    l_aux0, l_prim, infnet, energy = implicit.make_losses(task, config)
    params = to64(jax.jit(lambda key: methods.init_params(task, key, {'theta': infnet, 'phi': energy}))(
        jax.random.key(0)))  # jitted: one program, not one per operation
    batch = next(data.train_batches(task, 4, np.random.default_rng(0)))
    batch = {k: jnp.asarray(v) for k, v in batch.items()}                 # y is already one-hot (space.gold)
    batch = to64(implicit.step_batch(batch, jax.random.key(1), task.space, config.implicit.negatives))

    def l_aux(theta, phi, b):
      # Anisotropic along each leaf's last axis: under an isotropic decay a rotation R of the word vectors
      # (table E -> E R, LSTM input weights W -> R^T W) is a symmetry of L_aux, and its minima a 3-dimensional
      # manifold (three zero eigenvalues of the Hessian), not a point the implicit function theorem can use.
      decay = sum(jnp.sum(w ** 2 * (1.0 + jnp.arange(w.shape[-1]) / w.shape[-1])) for w in jax.tree.leaves(theta))
      return l_aux0(theta, phi, b) + 0.5 * WEIGHT_DECAY * decay

    opt = optax.adam(3e-2)
    theta, _, _ = jax.jit(bilevel.inner_loop, static_argnums=(0, 1, 2))(
        l_aux, opt, 1500, params['phi'], params['theta'], opt.init(params['theta']), batch)
    theta_star = newton(l_aux, theta, params['phi'], batch, 20)
  return l_aux, l_prim, params['phi'], batch, theta_star


def newton(f, theta, phi, batch, steps):
  """``steps`` Newton steps on ``f(., phi, batch)`` with the dense Hessian: a Python loop over the programs the
  checks below compile anyway (``dense_hessian``, ``grad_of``), not a loop of its own to compile."""
  flat, unravel = ravel_pytree(theta)
  for _ in range(steps):
    g = ravel_pytree(grad_of(f)(unravel(flat), phi, batch))[0]
    flat = flat - jnp.linalg.solve(dense_hessian(f, unravel(flat), phi, batch), g)
  return unravel(flat)


@functools.lru_cache(maxsize=None)
def grad_of(f):
  return jax.jit(jax.grad(f))


def test_tagging_problem_is_solved_to_a_strict_minimum(x64):
  l_aux, _, phi, batch, theta_star = problem()
  assert float(jnp.min(batch['mask'])) == 0.0 and float(jnp.max(batch['mask'])) == 1.0  # padding is present
  assert float(jnp.linalg.norm(ravel_pytree(grad_of(l_aux)(theta_star, phi, batch))[0])) < 1e-10
  eigs = np.linalg.eigvalsh(np.asarray(dense_hessian(l_aux, theta_star, phi, batch)))
  # The implicit function theorem applies: no zero eigenvalue, the smallest far above float64 round-off (an
  # isotropic decay gave three of size 1e-16: the rotation symmetry of the word vectors).
  assert eigs.min() > 1e-6 * eigs.max()


@functools.lru_cache(maxsize=None)
def dense_hypergradient():
  l_aux, l_prim, phi, batch, theta_star = problem()
  with float64():
    return dense_solve(l_prim, l_aux)(theta_star, phi, batch)


def dense_solve(l_prim, l_aux):
  solver = bilevel.Solver('dense', damping=0.0)
  return jax.jit(lambda theta, phi, b: bilevel.hypergradient(l_prim, l_aux, theta, phi, b, solver))


@pytest.fixture
def dense_grad(x64):
  grad, info = dense_hypergradient()
  # The implicit term is 15% of the explicit one here: an error in it would show far above the tolerances below.
  assert info['residual'] < 1e-10 and info['implicit_norm'] > 0.05 * info['explicit_norm']
  return grad


def test_tagging_hypergradient_matches_jaxopt_implicit_diff(dense_grad):
  with warnings.catch_warnings():
    warnings.simplefilter('ignore', DeprecationWarning)
    import jaxopt  # pylint: disable=import-outside-toplevel
  l_aux, l_prim, phi, batch, theta_star = problem()
  solve = functools.partial(jaxopt.linear_solve.solve_cg, tol=1e-14, maxiter=2000)

  @jax.jit  # one program
  def reference(p):
    # jaxopt's implicit differentiation of the root theta*(phi) of grad L_aux, by its own linear solve: what its
    # custom_root does to a solver's output (it never differentiates the solver), without running one here.
    g_theta, g_phi = jax.grad(l_prim, argnums=(0, 1))(theta_star, p, batch)
    through, = jaxopt.implicit_diff.root_vjp(lambda theta, q: jax.grad(l_aux)(theta, q, batch), theta_star, (p,),
                                             g_theta, solve=solve)
    return jax.tree.map(jnp.add, g_phi, through)

  assert rel_err(dense_grad, reference(phi)) < 1e-6


def test_training_route_agrees_on_sequences(dense_grad):
  """``ImplicitSolve`` (the custom_vjp training uses) with the tagging configs' default solver (normal CG) run to
  convergence. The route is the same for every solver; test_bilevel.py and test_gcr.py check each solver's
  answer."""
  solver = bilevel.Solver('normal_cg', iterations=600, tol=1e-15, damping=0.0)
  l_aux, l_prim, phi, batch, theta_star = problem()
  opt = optax.sgd(1e-4)
  inner = bilevel.ImplicitSolve(l_aux, opt, 1, solver)  # one tiny step from theta*: stays there
  _, grad, diag = jax.jit(lambda p: inner.value_and_grad(l_prim, p, theta_star, opt.init(theta_star), batch))(phi)
  assert rel_err(grad, dense_grad) < 1e-6 and float(diag['residual']) < 1e-6


def test_extra_padding_leaves_the_hypergradient_unchanged(dense_grad):
  l_aux, l_prim, phi, batch, theta_star = problem()
  padded, _ = dense_solve(l_prim, l_aux)(theta_star, phi, pad_to(batch, batch['mask'].shape[1] + 5))
  assert rel_err(padded, dense_grad) < 1e-9
