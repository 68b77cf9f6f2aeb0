"""Second-order products of a loss ``f(theta, phi, batch) -> scalar`` and the system a solver is handed.

``hvp`` (``H v``, H = d_theta d_theta f), ``fd_hvp`` (the paper's finite-difference one), ``mixed_vjp``
(``C^T u``, C = d_phi d_theta f), ``fused_products`` (both from one pass), ``power_iteration`` (the largest
|eigenvalue|), and ``Operator``: ``(H + damping I)`` as the ``matvec`` of the solver contract
(``implicit_jax/plugins.py``). ``theta`` and ``phi`` are pytrees; the pytree arithmetic is kept here (four
one-liners read better than a dependency on optax's private helpers).
"""

from __future__ import annotations

from typing import Any, Callable

import jax
import jax.numpy as jnp

from implicit_jax.loops import fori

PyTree = Any
Loss = Callable[[PyTree, PyTree, PyTree], jax.Array]  # f(theta, phi, batch) -> scalar


def vdot(a: PyTree, b: PyTree) -> jax.Array:
  return sum(jnp.vdot(x, y) for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)))


def axpy(alpha, x: PyTree, y: PyTree) -> PyTree:
  """alpha * x + y."""
  return jax.tree.map(lambda xi, yi: alpha * xi + yi, x, y)


def scale(alpha, x: PyTree) -> PyTree:
  return jax.tree.map(lambda xi: alpha * xi, x)


def norm(x: PyTree) -> jax.Array:
  return jnp.sqrt(vdot(x, x))


def relative_residual(r_norm: jax.Array, v_norm: jax.Array) -> jax.Array:
  """A solver's relative residual ``||A u - v|| / ||v||``, with ``||v||`` floored at the square root of the dtype's
  smallest normal number, the least norm whose square ``norm`` resolves. A right-hand side whose entries all lie
  below it (d_theta L_prim while L_prim sits at exactly 0) has a computed norm of 0, its squares flushed to zero,
  while a residual a little larger does not: over the smallest normal number alone that ratio read 1.8e20 for one
  step of a bibtex run that recovered, and the divergence check stopped it (experiments/sweep.py, bibtex-fast's
  T1-gcr1-lr7.5e-4-e80). Above the floor, the plain ratio, to the bit."""
  return r_norm / jnp.maximum(v_norm, jnp.sqrt(jnp.finfo(v_norm.dtype).tiny))


def check_tangent(theta: PyTree, v: PyTree, what: str = 'v') -> None:
  """Raises a ValueError naming ``what`` when ``v`` is not a tangent of ``theta`` (structure, shapes)."""
  t_def, v_def = jax.tree.structure(theta), jax.tree.structure(v)
  if t_def != v_def:
    raise ValueError(f'{what}: pytree structure {v_def} does not match theta {t_def}')
  for path_leaf, vl in zip(jax.tree_util.tree_leaves_with_path(theta), jax.tree.leaves(v)):
    path, tl = path_leaf
    if jnp.shape(tl) != jnp.shape(vl):
      raise ValueError(f'{what}{jax.tree_util.keystr(path)}: shape {jnp.shape(vl)} does not match theta '
                       f'shape {jnp.shape(tl)}')


def hvp(f: Loss, theta: PyTree, phi: PyTree, batch: PyTree, v: PyTree) -> PyTree:
  """``d_theta d_theta f(theta, phi, batch) v`` by forward-over-reverse: exact, about 2-3 gradients of cost."""
  check_tangent(theta, v)
  grad_theta = lambda t: jax.grad(f)(t, phi, batch)
  return jax.jvp(grad_theta, (theta,), (v,))[1]


def fd_hvp(f: Loss, theta: PyTree, phi: PyTree, batch: PyTree, v: PyTree, eps: float = 1e-3) -> PyTree:
  """The paper's HVP: central difference of gradients along v, ``(g(theta + h v) - g(theta - h v)) / 2h``.

  ``h = eps / ||v||`` so the perturbation has length eps whatever the scale of v. Error is O(h^2) times the
  third derivative, and float32 round-off grows like ``1 / h``: prefer ``hvp``.
  """
  check_tangent(theta, v)
  vnorm = norm(v)
  h = eps / jnp.maximum(vnorm, jnp.finfo(vnorm.dtype).tiny)
  g = lambda t: jax.grad(f)(t, phi, batch)
  plus, minus = g(axpy(h, v, theta)), g(axpy(-h, v, theta))
  return jax.tree.map(lambda a, b: (a - b) / (2 * h), plus, minus)


def mixed_vjp(f: Loss, theta: PyTree, phi: PyTree, batch: PyTree, u: PyTree) -> PyTree:
  """``[d_phi d_theta f]^T u``: the phi-gradient of ``<d_theta f(theta, phi), u>``, one VJP of the gradient."""
  check_tangent(theta, u, 'u')
  _, pullback = jax.vjp(lambda p: jax.grad(f)(theta, p, batch), phi)
  return pullback(u)[0]


def fused_products(f: Loss, theta: PyTree, phi: PyTree, batch: PyTree, d: PyTree) -> tuple[PyTree, PyTree]:
  """``(H d, [d_phi d_theta f]^T d)`` in one pass: the (theta, phi)-gradient of the directional derivative
  ``<d_theta f, d> = d/de f(theta + e d, phi)``, reverse-over-forward. ``hvp`` and ``mixed_vjp`` give the same
  two products by two passes that each re-run the network."""
  check_tangent(theta, d)
  directional = lambda t, p: jax.jvp(lambda s: f(s, p, batch), (t,), (d,))[1]
  return tuple(jax.grad(directional, argnums=(0, 1))(theta, phi))


def power_iteration(matvec, v: PyTree, iterations: int, unroll: bool = False) -> jax.Array:
  """Largest |eigenvalue| of the operator, estimated by ``iterations`` matvecs started from v."""
  def body(_, carry):
    x, _ = carry
    x = scale(1.0 / jnp.maximum(norm(x), 1e-30), x)
    hx = matvec(x)
    return hx, norm(hx)

  _, lam = fori(0, iterations, body, (v, jnp.zeros((), norm(v).dtype)), unroll)
  return lam



class Operator:
  """What a solver is handed as ``matvec``: the system ``(H + damping I) u = v``, H the Hessian of ``f`` in theta
  at ``(theta, phi, batch)``, posed as products (the solver contract of ``implicit_jax/plugins.py``).

  ``matvec(x)`` is ``(H + damping I) x``; ``hessian(x)`` is ``H x``; ``fused(d)`` is ``(H d, C^T d)``, ``C = d_phi
  d_theta f``, from one pass (``fused_products``); ``gradient()`` is ``d_theta f``; ``memory`` is the previous
  step's u with ``solver.warm_start`` (zeros at the first step), else None. With ``linearize`` (the default for a
  solver: its ``linearize`` attribute) and exact HVPs, the gradient is linearised once here, so that every product
  then costs one tangent pass instead of re-running the primal forward and backward passes; a solver that makes
  fused products only (``gcr``) or none (``none``) says ``linearize = False``.
  """

  def __init__(self, f: Loss, theta: PyTree, phi: PyTree, batch: PyTree, solver, linearize: bool = True,
               memory: PyTree | None = None):
    self.f, self.theta, self.phi, self.batch, self.damping = f, theta, phi, batch, solver.damping
    self.memory = memory
    self._grad = None
    if solver.hvp == 'fd':
      self._product = lambda x: fd_hvp(f, theta, phi, batch, x, solver.fd_eps)
      if linearize:
        self._grad = jax.grad(f)(theta, phi, batch)
    elif linearize:
      self._grad, self._product = jax.linearize(lambda t: jax.grad(f)(t, phi, batch), theta)
    else:
      self._product = lambda x: hvp(f, theta, phi, batch, x)

  def __call__(self, x: PyTree) -> PyTree:
    return axpy(self.damping, x, self._product(x)) if self.damping else self._product(x)

  def hessian(self, x: PyTree) -> PyTree:
    return self._product(x)

  def fused(self, d: PyTree) -> tuple[PyTree, PyTree]:
    return fused_products(self.f, self.theta, self.phi, self.batch, d)

  def gradient(self) -> PyTree:
    return jax.grad(self.f)(self.theta, self.phi, self.batch) if self._grad is None else self._grad
