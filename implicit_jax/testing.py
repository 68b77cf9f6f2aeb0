"""Float64 reference problems for the implicit-gradient core, shared by the tests (tests/test_bilevel.py,
tests/test_proximal.py) and experiments/gradient_checks.py, which reports the same checks as relative errors.

* ``ridge_problem``: ridge regression with the outer variable in the regulariser, closed-form theta*(phi);
* ``spen_problem``: a small SPEN-like MLC problem (MLP inference net, local + global energy, L_aux = BCE + lambda E
  + weight decay) solved to stationarity by Newton's method;
* ``proximal_problem``: Eq. 6 as trained, made proximal around a random initialisation (``implicit.proximal``).

And the inputs of the fault checks shared by tests/test_faults.py and tests/test_predict.py:

* ``rewrite_arff``: an ARFF's rows rewritten with its label columns reordered or renamed, or its values redeclared;
* ``MAIN_WITH_SIGINT``: ``python -c`` code running ``implicit_jax.main`` with Python's SIGINT handler restored.
"""

from __future__ import annotations

import contextlib
import functools

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax.flatten_util import ravel_pytree

from implicit_jax import bilevel, losses
from implicit_jax.spaces.binary import Binary
from implicit_jax.tasks.mlc.models import MLCEnergy, MLPInferenceNet


@contextlib.contextmanager
def float64():
  """Gradient checks run in float64 so that 1e-6 agreements test the math, not round-off."""
  previous = jax.config.jax_enable_x64
  jax.config.update('jax_enable_x64', True)
  try:
    yield
  finally:
    jax.config.update('jax_enable_x64', previous)


def flat64(tree):
  return np.concatenate([np.ravel(np.asarray(leaf, np.float64)) for leaf in jax.tree.leaves(tree)])


def rel_err(a, b):
  a, b = flat64(a), flat64(b)
  return float(np.linalg.norm(a - b) / np.linalg.norm(b))


@functools.partial(jax.jit, static_argnums=0)
def dense_hessian(f, theta, phi, batch):
  """The materialised d_theta d_theta f, the reference the matrix-free products are checked against."""
  flat, unravel = ravel_pytree(theta)
  # jitted: one program; eagerly, jacfwd-of-jacrev through a BiLSTM dispatches (and compiles) op by op
  return jax.jit(lambda t, p, b: jax.hessian(lambda u: f(unravel(u), p, b))(t))(flat, phi, batch)


# ------------------------------------------------------------------------------------------------ ridge


def ridge_problem():
  k1, k2, k3 = jax.random.split(jax.random.PRNGKey(0), 3)
  x = jax.random.normal(k1, (30, 6))
  y = x @ jnp.arange(1.0, 7.0) + jax.random.normal(k2, (30,))
  xv = jax.random.normal(k3, (12, 6))
  yv = xv @ jnp.ones(6)
  batch = {'x': x, 'y': y, 'xv': xv, 'yv': yv}

  def l_aux(w, phi, b):  # ridge, one regularisation strength per coordinate: lambda = exp(phi)
    return 0.5 * jnp.sum((b['x'] @ w['w'] - b['y']) ** 2) + 0.5 * jnp.sum(jnp.exp(phi['log_lam']) * w['w'] ** 2)

  def l_prim(w, phi, b):  # validation error
    del phi
    return 0.5 * jnp.sum((b['xv'] @ w['w'] - b['yv']) ** 2)

  def theta_star(phi):
    a = x.T @ x + jnp.diag(jnp.exp(phi['log_lam']))
    return {'w': jnp.linalg.solve(a, x.T @ y)}

  phi = {'log_lam': jnp.linspace(-1.0, 2.0, 6)}
  exact = jax.grad(lambda p: l_prim(theta_star(p), p, batch))(phi)  # autodiff through the closed form
  return l_aux, l_prim, theta_star, phi, batch, exact


# ------------------------------------------------------------------------------------------- SPEN-like

LAMBDA, WEIGHT_DECAY = 0.5, 0.1


def tiny_spen(seed):
  """A float64 batch of 8 examples with 3 labels, an MLP inference net and a SPEN energy with their initial
  parameters: ``(batch, net, energy, theta0, phi, space)``. Call inside ``float64()``."""
  kx, ky, kt, kp = jax.random.split(jax.random.PRNGKey(seed), 4)
  batch = {'x': jax.random.normal(kx, (8, 4)), 'y': (jax.random.uniform(ky, (8, 3)) < 0.4).astype(jnp.float64)}
  net = MLPInferenceNet(3, hidden=(5,), act='tanh')
  energy = MLCEnergy(3, feature_hidden=(4,), feature_dim=4, global_hidden=3)
  to64 = lambda tree: jax.tree.map(lambda a: jnp.asarray(a, jnp.float64), tree)  # Flax inits float32
  return batch, net, energy, to64(net.init(kt, batch)), to64(energy.init(kp, batch, batch['y'])), Binary((3,))


def newton_solver(f, batch, steps):
  """``newton(theta, phi)``: ``steps`` Newton steps on ``f(., phi, batch)`` with the dense Hessian, jitted."""

  @jax.jit
  def newton(theta, phi):
    flat, unravel = ravel_pytree(theta)
    g = lambda t: f(unravel(t), phi, batch)
    step = lambda _, t: t - jnp.linalg.solve(jax.hessian(g)(t), jax.grad(g)(t))
    return unravel(jax.lax.fori_loop(0, steps, step, flat))

  return newton


@functools.lru_cache(maxsize=None)
def spen_problem():
  """Tiny MLC problem; returns losses, phi, batch and a stationary point theta* found by Newton's method."""
  with float64():
    batch, net, energy, theta0, phi, space = tiny_spen(1)

    def l_aux(theta, phi, b):  # Eq. 6 plus weight decay, so that a strict local minimum exists
      logits = net.apply(theta, b)
      e = jnp.mean(energy.apply(phi, b, jax.nn.sigmoid(logits)))
      decay = 0.5 * WEIGHT_DECAY * sum(jnp.sum(w ** 2) for w in jax.tree.leaves(theta))
      return space.local_loss(logits, b['y']) + LAMBDA * e + decay

    def l_prim(theta, phi, b):  # SSVM margin with the inference net's relaxed output as negative
      y_bar = jax.nn.sigmoid(net.apply(theta, b))
      return losses.ssvm_margin(energy.apply(phi, b, y_bar), energy.apply(phi, b, b['y']),
                                space.cost('l1')(y_bar, b['y']))

    newton = newton_solver(l_aux, batch, 30)
    opt = optax.adam(1e-2)
    theta, _, _ = jax.jit(bilevel.inner_loop, static_argnums=(0, 1, 2))(l_aux, opt, 3000, phi, theta0,
                                                                         opt.init(theta0), batch)
    theta_star = newton(theta, phi)
    return l_aux, l_prim, phi, batch, theta_star, newton


# -------------------------------------------------------------------------------------------- proximal

# 150 steps at 1 / lambda_max contract the error by (1 - 0.24 / 1.62)^150 ~ 4e-11 (the spectrum of H + mu I here)
PROX_MU, PROX_LAMBDA, PROX_T_INNER = 1.0, 1.0, 150


@functools.lru_cache(maxsize=None)
def proximal_problem():
  """Eq. 6 exactly as trained (no weight decay), made proximal around a random initialisation ``anchor``:
  ``(l_aux, l_prox, l_prim, phi, batch, anchor, newton)``."""
  from implicit_jax.methods import implicit  # pylint: disable=import-outside-toplevel
  with float64():
    batch, net, energy, anchor, phi, space = tiny_spen(3)

    def l_aux(theta, phi, b):
      logits = net.apply(theta, b)
      return space.local_loss(logits, b['y']) + PROX_LAMBDA * jnp.mean(energy.apply(phi, b, jax.nn.sigmoid(logits)))

    def l_prim(theta, phi, b):
      y_bar = jax.nn.sigmoid(net.apply(theta, b))
      return losses.contrastive_divergence(energy.apply(phi, b, y_bar)[None], energy.apply(phi, b, b['y']),
                                           space.cost('l1')(y_bar, b['y'])[None])

    batch = dict(batch, anchor=anchor)
    l_prox = implicit.proximal(l_aux, PROX_MU)
    return l_aux, l_prox, l_prim, phi, batch, anchor, newton_solver(l_prox, batch, 20)


# `python -m implicit_jax.main` with SIGINT as a terminal delivers it: a runner started in the background (CI,
# nohup, `&`) ignores SIGINT, its children inherit that, and a Python started so never raises KeyboardInterrupt.
# The handler is restored in the child itself: a preexec_fn would fork a multithreaded JAX process.
MAIN_WITH_SIGINT = ('import runpy, signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); '
                    "sys.argv[0] = 'implicit_jax.main'; runpy.run_module('implicit_jax.main', run_name='__main__')")


def rewrite_arff(source, path, label_order=None, rename_label=None, nominal=None, num_labels: int = 159):
  """``source``'s rows written to ``path`` with the label columns in ``label_order`` (names moved with their
  columns), ``rename_label`` (old, new), every attribute declared with the values ``nominal`` (default '{0,1}';
  rows dense then, so that no value is implied by the declared order)."""
  from implicit_jax.tasks.mlc.arff import read_mulan  # pylint: disable=import-outside-toplevel
  data = read_mulan(source, num_labels=num_labels)
  order = np.arange(num_labels) if label_order is None else np.asarray(label_order)
  names = list(data.feature_names) + [data.label_names[j] for j in order]
  if rename_label:
    names = [rename_label[1] if n == rename_label[0] else n for n in names]
  rows = np.concatenate([data.x, data.y[:, order]], axis=1).astype(int)
  if nominal is None:
    body = ['{' + ','.join(f'{j} 1' for j in np.flatnonzero(r)) + '}' for r in rows]
  else:
    body = [','.join(map(str, r)) for r in rows]
  path.write_text('@relation rows\n' + ''.join(f"@attribute '{n}' {nominal or '{0,1}'}\n" for n in names) +
                  '@data\n' + '\n'.join(body) + '\n')
  return path
