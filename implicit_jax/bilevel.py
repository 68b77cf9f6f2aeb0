"""The implicit (IFT) outer gradient of the bi-level problem: the paper's math in one place.

Shankar & Piratla, Eq. 2-4 and Algorithm 1::

    theta*(phi) = argmin_theta  L_aux(theta, phi)         inner problem, approximated by T optax steps
    min_phi     L_prim(theta*(phi), phi)                 outer problem

    dL_prim/dphi = d_phi L_prim  -  [d_phi d_theta L_aux]^T  H^{-1}  d_theta L_prim,   H = d_theta d_theta L_aux

H^{-1} is never formed. ``u = H^{-1} d_theta L_prim`` comes from an inverse-HVP solver (Neumann series, CG,
MINRES, a dense solve for small problems) built on Hessian-vector products, and ``[d_phi d_theta L_aux]^T u`` is
one VJP.

Every loss here has the signature ``f(theta, phi, batch) -> scalar``: ``theta`` (inner variable) and ``phi``
(outer variable) are arbitrary pytrees (Flax parameter dicts), ``batch`` is data and is not differentiated.
Passing the data as an argument, never through a closure, is what keeps ``jax.custom_vjp`` sound.

Public pieces:
  * ``Solver``: validated inverse-HVP solver settings (``SOLVERS``: ``neumann``, ``cg``, ``normal_cg``,
    ``minres``, ``dense``, ``identity``, ``none``; ``gcr``, whose fused pass ``implicit_gcr`` returns the implicit
    term itself; ``unrolled`` names the route that differentiates through the inner steps instead of solving; or
    the import path of a solver outside the package, whose protocol ``implicit_jax/plugins.py`` defines).
  * ``hvp``, ``fd_hvp``, ``mixed_vjp``: the second-order products.
  * ``solve_inverse_hvp``: ``u ~= (H + damping I)^{-1} v`` with diagnostics.
  * ``inner_loop``: T optimiser steps on L_aux inside ``lax.scan`` (plain autodiff: the unrolled reference).
  * ``ImplicitSolve``: ``inner_loop`` wrapped in ``jax.custom_vjp`` so that
    ``jax.grad(lambda phi: L_prim(solve(phi, ...)[0], phi, batch))`` is explicit + implicit term; its
    ``value_and_grad`` also returns diagnostics (solver residual, explicit and implicit term norms).
  * ``UnrolledSolve``: the same interface, differentiating through the T inner steps: the truncated procedure's
    true derivative, the reference the implicit term is measured against. ``outer_solve`` picks one by name.
  * ``hypergradient``: the same gradient at a given stationary point theta*, without running an inner loop.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Mapping

import jax
import jax.numpy as jnp
import ml_collections
import optax
from jax.flatten_util import ravel_pytree

from implicit_jax import plugins

PyTree = Any
Loss = Callable[[PyTree, PyTree, PyTree], jax.Array]  # f(theta, phi, batch) -> scalar

SOLVERS = ('neumann', 'cg', 'normal_cg', 'minres', 'gcr', 'dense', 'identity', 'none', 'unrolled')
HVP_MODES = ('exact', 'fd')


# --------------------------------------------------------------------------------------------------------------
# Settings


@dataclasses.dataclass(frozen=True)
class Solver:
  """Inverse-HVP solver settings. Validated on construction; errors name the offending field.

  Attributes:
    name: ``normal_cg`` (CG on the normal equations ``(H^2 + damping I) u = H v``: two HVPs per iteration, but
      the residual never exceeds ``||v||`` when H is indefinite, as the inner Hessian of a neural network
      usually is), ``minres`` (MINRES on ``H + damping I``: one HVP per iteration, symmetric indefinite H
      allowed, the residual ``||(H + damping I) u - v||`` minimised over the Krylov space and non-increasing),
      ``gcr`` (the same minimal-residual iterate over the same Krylov space, by generalised conjugate residuals
      whose every product is fused: one reverse-over-forward pass of L_aux gives ``H d`` and the cross term
      ``[d_phi d_theta L_aux]^T d`` of a direction together, so the implicit term needs neither a linearisation
      nor a separate mixed VJP: one pass in all for ``iterations = 1``; see ``implicit_gcr``),
      ``cg`` (conjugate gradient on ``H + damping I``; needs it positive definite), ``neumann``
      (K-term Neumann series ``alpha * sum_k (I - alpha H)^k v``), ``dense`` (materialise H and solve: small
      models and tests only), ``identity`` (``H^{-1} ~= alpha I``, the K = 0 Neumann truncation) or ``none``
      (drop the implicit term: the biased gradient the paper attributes to InfNet+, kept as an ablation), or
      ``unrolled`` (no solve: reverse-mode through the inner steps, ``UnrolledSolve``; memory grows with T). Any
      other name is the import path of a solve function outside the package (``implicit_jax/plugins.py``: it
      gets ``(H + damping I)`` as a matvec and returns u), checked here to import.
    iterations: Neumann terms K (each costs one HVP), the maximum number of CG / MINRES iterations, or the
      number of GCR passes (``gcr`` runs them all: with one or two, a tolerance would save nothing).
    alpha: Neumann step. Convergence needs ``0 < alpha < 2 / lambda_max(H)``. With ``power_iters > 0`` it is an
      upper bound, lowered to ``1 / lambda_max`` estimated on the fly.
    power_iters: power iterations (HVPs) that estimate ``lambda_max(H)`` for the Neumann step; 0 disables.
    tol: CG and MINRES stop when the residual of the system they solve falls below ``tol`` times that of u = 0.
    damping: ``delta`` in ``H + delta I`` (``H^2 + delta I`` for ``normal_cg``): regularises the solve.
    hvp: ``exact`` (forward-over-reverse, ``jax.jvp`` of ``jax.grad``) or ``fd`` (the paper's central finite
      difference of gradients; approximate, kept for comparison).
    fd_eps: length of the finite-difference HVP's perturbation ``h v`` (``h = fd_eps / ||v||``).
    track_residual: report ``||H u - v|| / ||v||`` on the undamped H for every solver, so that solvers compare
      and the bias damping adds shows; costs one HVP, except for ``normal_cg`` and ``dense`` (and ``cg`` and
      ``minres`` without damping), which have it anyway.
    warm_start: ``gcr`` only: the solution of the previous outer step (``memory``, carried in the training
      state) is one more direction of the subspace, and the Krylov space grows from the residual it leaves, so
      that an inner system that changes little between steps starts nearly solved. Costs one fused pass.
    refresh: the implicit term is computed on every ``refresh``-th outer step and reused (with the diagnostics
      of that step) on the steps in between, carried in the training state as ``memory``; 1: every step.
    track_stationarity: ``gcr`` only: report ``||d_theta L_aux||`` at theta_T (``grad_norm`` and the
      ``stationarity`` diagnostic), which costs one gradient of L_aux there; the other solvers have it for free
      from their linearisation. False: NaN.
    unroll: run the solver's iterations as straight-line code instead of an XLA loop (``while_loop``): the
      same iterates, more compile time. XLA:CPU runs convolution gradients inside loops several times slower
      than outside them (jax-ml/jax#12868); convolutional tasks on CPU want it.
  """

  # The defaults are the implicit method's (``implicit.solver``, built from them by ``default_config``): the
  # values every recorded run that did not set a field ran with. A damped, truncated solve; an exact one (as the
  # gradient checks want) sets ``damping=0.0`` and its own ``iterations`` and ``tol``.
  name: str = 'normal_cg'
  iterations: int = 5
  alpha: float = 0.03
  power_iters: int = 0
  tol: float = 1e-4
  damping: float = 1e-2
  hvp: str = 'exact'
  fd_eps: float = 1e-3
  track_residual: bool = True
  warm_start: bool = False
  refresh: int = 1
  track_stationarity: bool = True
  unroll: bool = False

  def __post_init__(self):
    if self.name not in SOLVERS:
      plugin_solve(self)  # a name that is no import path, or does not import, is named here
    if self.hvp not in HVP_MODES:
      raise ValueError(f'solver.hvp: unknown HVP mode {self.hvp!r}; choose one of {HVP_MODES}')
    if isinstance(self.refresh, bool) or not isinstance(self.refresh, int) or self.refresh < 1:
      raise ValueError(f'solver.refresh must be a positive integer, got {self.refresh!r}')
    if self.refresh > 1 and (self.warm_start or self.name in ('none', 'unrolled')):
      raise ValueError(f'solver.refresh: reusing the implicit term needs a solver that computes one and keeps no '
                       f'other memory, not {self.name!r}{" with warm_start" if self.warm_start else ""}')
    for field in ('iterations', 'power_iters'):
      value = getattr(self, field)
      if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f'solver.{field} must be a non-negative integer, got {value!r}')
    if self.name == 'gcr' and self.hvp != 'exact':
      raise ValueError("solver.hvp: 'gcr' fuses exact products (reverse-over-forward); use hvp='exact'")
    if self.warm_start and self.name != 'gcr':
      raise ValueError(f"solver.warm_start: only 'gcr' carries its solution between steps, not {self.name!r}")
    if self.name in ('cg', 'minres', 'gcr') and self.iterations < 1:
      raise ValueError(f'solver.iterations must be >= 1 for {self.name}, got {self.iterations}')
    for field, positive in (('alpha', True), ('fd_eps', True), ('tol', False), ('damping', False)):
      value = getattr(self, field)
      if not isinstance(value, (int, float)) or isinstance(value, bool) or value != value:
        raise ValueError(f'solver.{field} must be a number, got {value!r}')
      if value < 0 or (positive and value == 0):
        raise ValueError(f'solver.{field} must be {"> 0" if positive else ">= 0"}, got {value}')

  @classmethod
  def from_config(cls, config: Mapping[str, Any]) -> 'Solver':
    """Builds from an ``ml_collections.ConfigDict`` (or dict); unknown keys are an error naming the key."""
    known = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(config.keys()) - known)
    if unknown:
      raise ValueError(f'solver: unknown field(s) {unknown}; valid fields are {sorted(known)}')
    return cls(**dict(config.items()))


# Set by the method's own ``implicit.unroll`` (one switch for its inner steps and its solver), not by the section.
NOT_IN_CONFIG = ('unroll',)


def default_config() -> ml_collections.ConfigDict:
  """``implicit.solver``: every field of ``Solver`` (documented there) but ``NOT_IN_CONFIG``, at its default: one
  set of defaults for the dataclass and the config."""
  return ml_collections.ConfigDict({f.name: f.default for f in dataclasses.fields(Solver)
                                    if f.name not in NOT_IN_CONFIG})


def plugin_solve(solver: Solver) -> Callable:
  """The solve function of a plug-in solver, ``solver.name`` being its import path (not one of ``SOLVERS``)."""
  return plugins.solver(solver.name, SOLVERS)


# --------------------------------------------------------------------------------------------------------------
# Pytree arithmetic (kept local: four one-liners read better than a dependency on optax's private helpers)


def _vdot(a: PyTree, b: PyTree) -> jax.Array:
  return sum(jnp.vdot(x, y) for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)))


def _axpy(alpha, x: PyTree, y: PyTree) -> PyTree:
  """alpha * x + y."""
  return jax.tree.map(lambda xi, yi: alpha * xi + yi, x, y)


def _scale(alpha, x: PyTree) -> PyTree:
  return jax.tree.map(lambda xi: alpha * xi, x)


def _norm(x: PyTree) -> jax.Array:
  return jnp.sqrt(_vdot(x, x))


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


# --------------------------------------------------------------------------------------------------------------
# Second-order products


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
  vnorm = _norm(v)
  h = eps / jnp.maximum(vnorm, jnp.finfo(vnorm.dtype).tiny)
  g = lambda t: jax.grad(f)(t, phi, batch)
  plus, minus = g(_axpy(h, v, theta)), g(_axpy(-h, v, theta))
  return jax.tree.map(lambda a, b: (a - b) / (2 * h), plus, minus)


def mixed_vjp(f: Loss, theta: PyTree, phi: PyTree, batch: PyTree, u: PyTree) -> PyTree:
  """``[d_phi d_theta f]^T u``: the phi-gradient of ``<d_theta f(theta, phi), u>``, one VJP of the gradient."""
  check_tangent(theta, u, 'u')
  _, pullback = jax.vjp(lambda p: jax.grad(f)(theta, p, batch), phi)
  return pullback(u)[0]


# --------------------------------------------------------------------------------------------------------------
# Inverse-HVP solvers


def while_loop(cond, body, init, maxiter: int, unroll: bool = False):
  """``jax.lax.while_loop(cond, body, init)`` for a loop known to stop within ``maxiter`` iterations; with
  ``unroll``, ``maxiter`` copies of ``body`` in straight-line code, each kept only while ``cond`` holds (the
  same iterates as the loop, every iteration computed)."""
  if not unroll:
    return jax.lax.while_loop(cond, body, init)
  state = init
  for _ in range(maxiter):
    active = cond(state)
    state = jax.tree.map(lambda new, old: jnp.where(active, new, old), body(state), state)
  return state


def scan(step, init, length: int, unroll: bool = False):
  """``jax.lax.scan(step, init, None, length)``, with ``unroll`` as straight-line code: XLA unrolls two trips and
  more, but keeps a one-trip loop as a loop, with the slow convolution gradients loops have on CPU."""
  if not unroll or length != 1:  # XLA does unroll two trips and more
    return jax.lax.scan(step, init, None, length=length, unroll=bool(unroll))
  carry, out = step(init, None)
  return carry, jax.tree.map(lambda x: x[None], out)


def _fori(lower, upper, body, init, unroll: bool = False):
  """``jax.lax.fori_loop``; with ``unroll`` (and static bounds), straight-line code (see ``scan``)."""
  if unroll and upper == lower:
    return init
  if not unroll or upper - lower != 1:
    return jax.lax.fori_loop(lower, upper, body, init, unroll=bool(unroll) or None)
  return body(lower, init)


def _neumann(matvec, v, iterations, alpha, unroll=False):
  # p_k = (I - alpha H)^k v;  u = alpha * sum_{k=0..K} p_k  (K HVPs, K + 1 terms).
  def body(_, carry):
    p, acc = carry
    p = _axpy(-alpha, matvec(p), p)
    return p, jax.tree.map(jnp.add, acc, p)

  _, acc = _fori(0, iterations, body, (v, v), unroll)
  return _scale(alpha, acc)


def _cg(matvec, v, maxiter, tol, carried=None, unroll=False):
  """Conjugate gradient from u = 0; stops on tolerance, max iterations or non-positive curvature.

  With ``carried`` (a pytree of zeros), ``matvec(p)`` returns ``(A p, w(p))`` for a linear map w, and CG also
  returns ``w(x)``, accumulated with the same steps as x: normal_cg gets ``H u`` for its residual this way from
  the ``H p`` it computes anyway, instead of one more HVP at the end.
  """
  zero = jax.tree.map(jnp.zeros_like, v)
  rs0 = _vdot(v, v)
  stop_at = (tol ** 2) * rs0
  apply = matvec if carried is not None else (lambda p: (matvec(p), ()))

  def cond(state):
    k, _, _, _, rs, broken, _ = state
    return (k < maxiter) & (rs > stop_at) & ~broken

  def body(state):
    k, x, r, p, rs, _, wx = state
    ap, wp = apply(p)
    pap = _vdot(p, ap)
    broken = ~(pap > 0)  # the operator is not positive definite along p: stop with the current iterate
    step = jnp.where(broken, 0.0, rs / jnp.where(broken, 1.0, pap))
    x = _axpy(step, p, x)
    wx = _axpy(step, wp, wx)
    r = _axpy(-step, ap, r)
    rs_new = _vdot(r, r)
    p = _axpy(rs_new / jnp.where(rs > 0, rs, 1.0), p, r)
    return k + 1, x, r, p, jnp.where(broken, rs, rs_new), broken, wx

  init = (jnp.zeros((), jnp.int32), zero, v, v, rs0, jnp.array(False), () if carried is None else carried)
  k, x, _, _, rs, _, wx = while_loop(cond, body, init, maxiter, unroll)
  out = (x, k, jnp.sqrt(rs / jnp.where(rs0 > 0, rs0, 1.0)))
  return out if carried is None else out + (wx,)


def _minres(matvec, v, maxiter, tol, unroll=False):
  """MINRES (Paige & Saunders 1975) from u = 0 for a symmetric, possibly indefinite operator.

  Lanczos builds an orthonormal basis of the Krylov space K_k(A, v) with a three-term recurrence; Givens
  rotations keep the QR factorisation of its tridiagonal matrix, so that u_k minimises ``||A u - v||`` over
  K_k(A, v) at one matvec and a few axpys per iteration. The residual norm comes out of the recurrence
  (``phibar``), non-increasing in k. Same layout as scipy.sparse.linalg.minres without preconditioner.
  Returns ``(u, iterations, ||A u - v|| / ||v||)``.
  """
  zero = jax.tree.map(jnp.zeros_like, v)
  beta1 = _norm(v)
  dtype = beta1.dtype
  tiny = jnp.finfo(dtype).tiny
  # Below round-off the Lanczos vectors are noise: stop there even with tol = 0.
  stop_at = jnp.maximum(tol, jnp.finfo(dtype).eps) * beta1
  f = lambda value: jnp.asarray(value, dtype)

  def cond(state):
    k, beta, phibar = state[0], state[7], state[10]
    return (k < maxiter) & (phibar > stop_at) & (beta > tiny)

  def body(state):
    k, x, w, w2, r1, r2, y, beta, oldb, dbar, phibar, epsln, cs, sn = state
    vk = _scale(1.0 / beta, y)                                      # Lanczos vector
    y = matvec(vk)
    y = _axpy(-jnp.where(k > 0, beta / jnp.where(oldb > 0, oldb, 1.0), 0.0), r1, y)
    alfa = _vdot(vk, y)
    y = _axpy(-alfa / beta, r2, y)
    r1, r2, oldb = r2, y, beta
    beta = _norm(y)
    # Apply the previous rotation to the new column of the tridiagonal matrix, then make the next one.
    oldeps = epsln
    delta = cs * dbar + sn * alfa
    gbar = sn * dbar - cs * alfa
    epsln = sn * beta
    dbar = -cs * beta
    gamma = jnp.maximum(jnp.sqrt(gbar ** 2 + beta ** 2), tiny)
    cs, sn = gbar / gamma, beta / gamma
    phi, phibar = cs * phibar, sn * phibar
    w1, w2 = w2, w
    w = _scale(1.0 / gamma, _axpy(-delta, w2, _axpy(-oldeps, w1, vk)))
    x = _axpy(phi, w, x)
    return k + 1, x, w, w2, r1, r2, y, beta, oldb, dbar, phibar, epsln, cs, sn

  init = (jnp.zeros((), jnp.int32), zero, zero, zero, v, v, v, beta1, f(0), f(0), beta1, f(0), f(-1), f(0))
  state = while_loop(cond, body, init, maxiter, unroll)
  k, x, phibar = state[0], state[1], state[10]
  return x, k, phibar / jnp.where(beta1 > 0, beta1, 1.0)


def _dense(product, v, damping=0.0):
  """``(H + damping I)^{-1} v`` by a dense solve, and ``||H u - v|| / ||v||`` (undamped H)."""
  flat_v, unravel = ravel_pytree(v)
  # Columns H e_i by vmapped HVPs: forward-over-reverse, the same product the iterative solvers use.
  basis = jnp.eye(flat_v.size, dtype=flat_v.dtype)
  h = jax.vmap(lambda e: ravel_pytree(product(unravel(e)))[0])(basis).T
  u = jnp.linalg.solve(h + damping * basis, flat_v)
  residual = jnp.linalg.norm(h @ u - flat_v) / jnp.maximum(jnp.linalg.norm(flat_v), jnp.finfo(flat_v.dtype).tiny)
  return unravel(u), residual


def power_iteration(matvec, v: PyTree, iterations: int, unroll: bool = False) -> jax.Array:
  """Largest |eigenvalue| of the operator, estimated by ``iterations`` matvecs started from v."""
  def body(_, carry):
    x, _ = carry
    x = _scale(1.0 / jnp.maximum(_norm(x), 1e-30), x)
    hx = matvec(x)
    return hx, _norm(hx)

  _, lam = _fori(0, iterations, body, (v, jnp.zeros((), _norm(v).dtype)), unroll)
  return lam


def _numeric(value) -> bool:
  if isinstance(value, (bool, int, float)):
    return True
  dtype = getattr(value, 'dtype', None)
  return dtype is not None and (jnp.issubdtype(dtype, jnp.number) or jnp.issubdtype(dtype, jnp.bool_))


def plugin_count(name: str, info: Mapping) -> Any:
  """The ``iterations`` a solver's ``info`` reports (NaN: none), once every value of ``info`` is checked to be
  numeric. Checked as the step is traced: a string or an object would fail later inside JAX, naming no solver."""
  for path, value in jax.tree_util.tree_leaves_with_path(info, is_leaf=lambda x: x is None):
    if not _numeric(value):
      raise ValueError(f'solver.name: {name!r} returned info{jax.tree_util.keystr(path)} = {value!r}, a '
                       f"{type(value).__name__}, not a number (info's values are numbers or arrays of numbers; see "
                       'implicit_jax/plugins.py)')
  count = info.get('iterations', jnp.nan)
  if jnp.size(count) != 1:
    raise ValueError(f"solver.name: {name!r} returned info['iterations'] of shape {jnp.shape(count)}, not one number "
                     '(the matvec calls it made)')
  return jnp.reshape(count, ())


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

  def __init__(self, f: Loss, theta: PyTree, phi: PyTree, batch: PyTree, solver: Solver, linearize: bool = True,
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
    return _axpy(self.damping, x, self._product(x)) if self.damping else self._product(x)

  def hessian(self, x: PyTree) -> PyTree:
    return self._product(x)

  def fused(self, d: PyTree) -> tuple[PyTree, PyTree]:
    return fused_products(self.f, self.theta, self.phi, self.batch, d)

  def gradient(self) -> PyTree:
    return jax.grad(self.f)(self.theta, self.phi, self.batch) if self._grad is None else self._grad


# The built-in solvers, each ``solve(matvec, v, solver) -> (u, info)`` as a plug-in is (implicit_jax/plugins.py);
# ``matvec`` an ``Operator``. Besides ``iterations`` (the products spent), ``info`` may hold ``residual``
# (``||H u - v|| / ||v||`` on the undamped H, when the solve has it for free), ``alpha`` (the Neumann step) and
# ``implicit`` (the implicit term ``-C^T u`` itself, when fused products gave it; else it is one mixed VJP of u).


def _dtype(v):
  return _norm(v).dtype


def _neumann_solve(matvec, v, solver, terms):
  dtype = _dtype(v)
  alpha = jnp.asarray(solver.alpha, dtype)
  if solver.power_iters:
    lam = power_iteration(matvec, v, solver.power_iters, solver.unroll)
    alpha = jnp.minimum(alpha, 1.0 / jnp.maximum(lam, 1e-12))
  u = _neumann(matvec, v, terms, alpha, solver.unroll)
  return u, {'alpha': alpha, 'iterations': jnp.asarray(terms + solver.power_iters, dtype)}


def solve_neumann(matvec, v, solver):
  """``alpha * sum_{k=0..K} (I - alpha A)^k v``, K = ``solver.iterations``."""
  return _neumann_solve(matvec, v, solver, solver.iterations)


def solve_identity(matvec, v, solver):
  """``alpha v``: the K = 0 Neumann truncation."""
  return _neumann_solve(matvec, v, solver, 0)


def solve_cg(matvec, v, solver):
  """Conjugate gradient on ``H + damping I`` (``_cg``)."""
  u, k, solved = _cg(matvec, v, solver.iterations, solver.tol, unroll=solver.unroll)
  # Undamped, the system solved is H u = v itself: its recurrence residual is the one reported.
  return u, ({'iterations': k} if solver.damping else {'iterations': k, 'residual': solved})


def solve_minres(matvec, v, solver):
  """MINRES on ``H + damping I`` (``_minres``)."""
  u, k, solved = _minres(matvec, v, solver.iterations, solver.tol, solver.unroll)
  return u, ({'iterations': k} if solver.damping else {'iterations': k, 'residual': solved})


def solve_normal_cg(matvec, v, solver):
  """CG on the normal equations ``(H^2 + damping I) u = H v``."""
  product = matvec.hessian

  def normal(x):  # H is symmetric, so H^T H = H^2; damping regularises the normal equations rather than H.
    hx = product(x)
    return _axpy(solver.damping, x, product(hx)), hx

  u, k, _, hu = _cg(normal, product(v), solver.iterations, solver.tol, jax.tree.map(jnp.zeros_like, v),
                    solver.unroll)
  info = {'iterations': 2 * k + 1}
  if solver.track_residual:  # H u accumulated inside CG: the residual costs no HVP
    info['residual'] = _norm(_axpy(-1.0, v, hu)) / jnp.maximum(_norm(v), jnp.finfo(_dtype(v)).tiny)
  return u, info


def solve_dense(matvec, v, solver):
  """A dense solve of the materialised ``H + damping I`` (small problems)."""
  u, residual = _dense(matvec.hessian, v, solver.damping)
  return u, {'iterations': ravel_pytree(v)[0].size, 'residual': residual}


def solve_none(matvec, v, solver):
  """No solve: the implicit term is dropped (zero)."""
  del solver
  return (jax.tree.map(jnp.zeros_like, v),
          {'iterations': 0, 'residual': jnp.ones((), _dtype(v)),
           'implicit': jax.tree.map(jnp.zeros_like, matvec.phi)})


solve_none.linearize = False  # no product: the stationarity diagnostic takes one gradient


def solve_gcr(matvec, v, solver):
  """GCR with fused products (``implicit_gcr``); ``info['implicit']`` is the implicit term."""
  implicit, u, info = _gcr(matvec, v, solver)
  return u, dict(info, implicit=implicit)


solve_gcr.linearize = False  # fused products (reverse-over-forward) only


# name -> solve: the one table the IFT backward pass (``solve_inverse_hvp``) reads; a name outside it is a plug-in.
BUILT_IN = {'neumann': solve_neumann, 'cg': solve_cg, 'normal_cg': solve_normal_cg, 'minres': solve_minres,
            'gcr': solve_gcr, 'dense': solve_dense, 'identity': solve_identity, 'none': solve_none}


def solve_function(solver: Solver) -> Callable:
  """The ``solve`` that ``solver.name`` names: a built-in one (``BUILT_IN``) or a plug-in's."""
  if solver.name == 'unrolled':
    raise ValueError(f'solver.name: {solver.name!r} is not an inverse-HVP solver (see outer_solve)')
  return BUILT_IN[solver.name] if solver.name in BUILT_IN else plugin_solve(solver)


def _solve(f: Loss, theta: PyTree, phi: PyTree, batch: PyTree, v: PyTree, solver: Solver,
           memory: PyTree | None = None):
  """``(operator, u, info, implicit)``: ``solve_function(solver)`` called through the solver contract on
  ``(H + damping I) u = v``, its output checked and its ``info`` completed (``solve_inverse_hvp``); ``implicit`` is
  the term the solver gave (``info['implicit']``) or None."""
  check_tangent(theta, v)
  solve = solve_function(solver)
  operator = Operator(f, theta, phi, batch, solver, getattr(solve, 'linearize', True), memory)
  out = solve(operator, v, solver)
  if not (isinstance(out, tuple) and len(out) == 2 and isinstance(out[1], Mapping)):
    raise ValueError(f'solver.name: {solver.name!r} returned a {type(out).__name__}, not (u, info: dict)')
  u, given = out
  check_tangent(theta, u, f'solver.name: the u of {solver.name!r}')
  dtype = _dtype(v)
  iterations = jnp.asarray(plugin_count(solver.name, given), dtype)
  implicit = given.get('implicit')
  if implicit is not None:
    check_tangent(phi, implicit, f"solver.name: the info['implicit'] of {solver.name!r}")
  residual = given.get('residual')
  if residual is None:
    if solver.track_residual:
      r = _axpy(-1.0, v, operator.hessian(u))
      residual = _norm(r) / jnp.maximum(_norm(v), jnp.finfo(dtype).tiny)
    else:
      residual = jnp.full((), jnp.nan, dtype)
  grad_norm = given['grad_norm'] if 'grad_norm' in given else _norm(operator.gradient())
  info = {'residual': jnp.asarray(residual).astype(dtype), 'alpha': jnp.asarray(given.get('alpha', 0.0), dtype),
          'iterations': iterations, 'grad_norm': jnp.asarray(grad_norm).astype(dtype)}
  return operator, u, info, implicit


def solve_inverse_hvp(f: Loss, theta: PyTree, phi: PyTree, batch: PyTree, v: PyTree,
                      solver: Solver) -> tuple[PyTree, dict[str, jax.Array]]:
  """``u ~= (H + damping I)^{-1} v`` with ``H = d_theta d_theta f(theta, phi, batch)``, by the solver
  ``solver.name`` names, called through the solver contract (``solve_function``).

  Returns u and diagnostics (same keys for every solver, so they can be logged uniformly): ``residual``
  (``||H u - v|| / ||v||`` on the undamped H whatever the solver solved, NaN when not tracked), ``alpha``
  (Neumann/identity step used, 0 for
  other solvers), ``iterations`` (HVPs spent in the solve, excluding the residual check) and ``grad_norm``
  (``||d_theta f||`` at theta: how far theta is from the stationary point the solve assumes; with exact HVPs it
  comes free with the linearisation).
  """
  _, u, info, _ = _solve(f, theta, phi, batch, v, solver)
  return u, info


def fused_products(f: Loss, theta: PyTree, phi: PyTree, batch: PyTree, d: PyTree) -> tuple[PyTree, PyTree]:
  """``(H d, [d_phi d_theta f]^T d)`` in one pass: the (theta, phi)-gradient of the directional derivative
  ``<d_theta f, d> = d/de f(theta + e d, phi)``, reverse-over-forward. ``hvp`` and ``mixed_vjp`` give the same
  two products by two passes that each re-run the network."""
  check_tangent(theta, d)
  directional = lambda t, p: jax.jvp(lambda s: f(s, p, batch), (t,), (d,))[1]
  return tuple(jax.grad(directional, argnums=(0, 1))(theta, phi))


def implicit_gcr(l_aux: Loss, theta: PyTree, phi: PyTree, batch: PyTree, v: PyTree, solver: Solver,
                 memory: PyTree | None = None) -> tuple[PyTree, PyTree, dict[str, jax.Array]]:
  """``(implicit, u, info)`` of the ``gcr`` solver (``_gcr``): the implicit term ``-[d_phi d_theta L_aux]^T u``,
  ``u ~= (H + damping I)^{-1} v`` and ``info`` as ``solve_inverse_hvp``'s (``iterations`` counts passes; ``grad_norm``
  NaN unless ``solver.track_stationarity``). ``memory`` (``solver.warm_start``): a previous solution."""
  if solver.name != 'gcr':
    raise ValueError(f"solver.name: implicit_gcr runs 'gcr', not {solver.name!r}")
  _, u, info, implicit = _solve(l_aux, theta, phi, batch, v, solver, memory)
  return implicit, u, info


def _gcr(matvec, v: PyTree, solver: Solver) -> tuple[PyTree, PyTree, dict[str, jax.Array]]:
  """The implicit term ``-[d_phi d_theta L_aux]^T u`` with ``u ~= (H + damping I)^{-1} v`` by generalised conjugate
  residuals (Eisenstat, Elman & Schultz 1983), every product fused (``fused_products``).

  Each iteration takes the current residual r as a new direction p, gets ``A p`` (``A = H + damping I``) and
  ``C^T p`` (``C = d_phi d_theta L_aux``) from one pass, orthogonalises ``A p`` against the earlier ones and
  moves u to the minimiser of ``||A u - v||`` over all directions so far. Started from u = 0 this is MINRES's
  iterate (the directions span the Krylov space K_k(A, v)), so H may be indefinite; unlike MINRES it keeps every
  direction, and ``C^T u`` is accumulated with u from the products already made: no separate mixed VJP.

  ``memory`` (``solver.warm_start``): a previous solution, made the first direction (one more pass), so that the
  Krylov space grows from the residual it leaves. Returns ``(implicit, u, info)``; ``info`` as
  ``solve_inverse_hvp``'s (``residual`` on the undamped H; ``iterations`` counts passes) but for ``grad_norm``,
  which ``solver.track_stationarity`` pays one gradient for.
  """
  theta, phi, memory = matvec.theta, matvec.phi, matvec.memory
  dtype = _norm(v).dtype
  tiny = jnp.finfo(dtype).tiny
  size = solver.iterations + (memory is not None)
  # The basis in fixed-size buffers, (p, q = A p / ||A p||, H p, C^T p) stacked along a first axis of ``size``,
  # each direction scaled by the same 1 / ||A p||: the loop body is traced once whatever the number of
  # iterations, so the compiled program does not grow with it (as a list of directions in Python grew as k^2).
  stack = lambda tree: jax.tree.map(lambda leaf: jnp.zeros((size,) + jnp.shape(leaf), jnp.result_type(leaf)), tree)
  basis = (stack(v), stack(v), stack(v), stack(phi))
  zero_t = jax.tree.map(jnp.zeros_like, v)
  start = (zero_t, zero_t, jax.tree.map(jnp.zeros_like, phi), v, basis)  # x, H x, C^T x, r = v - A x

  def add(i, p, state):
    x, hx, cx, r, basis = state
    hp, cp = matvec.fused(p)
    ap = _axpy(solver.damping, p, hp) if solver.damping else hp

    def orthogonalise(j, vectors):  # modified Gram-Schmidt of A p against the earlier images, one at a time
      ap, p, hp, cp = vectors
      p_j, q_j, hp_j, cp_j = jax.tree.map(lambda b: b[j], basis)
      beta = _vdot(ap, q_j)
      return _axpy(-beta, q_j, ap), _axpy(-beta, p_j, p), _axpy(-beta, hp_j, hp), _axpy(-beta, cp_j, cp)

    ap, p, hp, cp = _fori(0, i, orthogonalise, (ap, p, hp, cp), solver.unroll)
    norm = _norm(ap)
    # A direction whose image vanishes (a zero memory at the first step, or a solved system) adds nothing.
    scale = jnp.where(norm > jnp.finfo(dtype).eps * _norm(v), 1.0 / jnp.maximum(norm, tiny), 0.0)
    p, q, hp, cp = _scale(scale, p), _scale(scale, ap), _scale(scale, hp), _scale(scale, cp)
    alpha = _vdot(r, q)
    basis = jax.tree.map(lambda b, new: b.at[i].set(new), basis, (p, q, hp, cp))
    return _axpy(alpha, p, x), _axpy(alpha, hp, hx), _axpy(alpha, cp, cx), _axpy(-alpha, q, r), basis

  state, first = start, 0
  if memory is not None:
    check_tangent(theta, memory, 'memory')
    state, first = add(0, memory, state), 1
  next_direction = lambda i, state: add(i, state[3], state)  # the current residual
  if solver.unroll:  # straight-line code (``Solver.unroll``): the same iterates, the graph growing as k^2
    for i in range(first, size):
      state = next_direction(i, state)
  else:
    state = jax.lax.fori_loop(first, size, next_direction, state)
  x, hx, cx, r, _ = state
  vnorm = jnp.maximum(_norm(v), tiny)
  residual = _norm(_axpy(-1.0, v, hx)) / vnorm if solver.damping else _norm(r) / vnorm
  info = {'residual': residual, 'iterations': size}
  if not solver.track_stationarity:  # else the caller pays one gradient for it (Operator.gradient)
    info['grad_norm'] = jnp.full((), jnp.nan, dtype)
  return _scale(-1.0, cx), x, info


def implicit_vjp(l_aux: Loss, theta: PyTree, phi: PyTree, batch: PyTree, g_theta: PyTree, solver: Solver,
                 memory: PyTree | None = None) -> tuple[PyTree, dict[str, jax.Array]]:
  """The implicit term ``-[d_phi d_theta L_aux]^T H^{-1} g_theta`` (a phi-shaped pytree) and diagnostics; with
  ``solver.warm_start``, ``memory`` is the previous solution and the diagnostics hold this one as ``memory``."""
  _, u, info, implicit = _solve(l_aux, theta, phi, batch, g_theta, solver, memory)
  if implicit is None:  # the solver gave u alone: the term is one mixed VJP of it
    implicit = _scale(-1.0, mixed_vjp(l_aux, theta, phi, batch, u))
  return implicit, (dict(info, memory=u) if solver.warm_start else info)


# --------------------------------------------------------------------------------------------------------------
# The inner problem


def inner_loop(l_aux: Loss, optimizer: optax.GradientTransformation, num_steps: int, phi: PyTree,
               theta0: PyTree, opt_state0: PyTree, batch: PyTree, unroll: bool = False):
  """``num_steps`` optimiser steps on ``L_aux(., phi, batch)`` from the warm start ``(theta0, opt_state0)``.

  Plain JAX: differentiating through it is unrolled differentiation (memory grows with ``num_steps``).
  Returns ``(theta_T, opt_state_T, losses)`` with ``losses[t] = L_aux(theta_t)`` before step t. ``unroll``:
  the steps as straight-line code (``Solver.unroll`` says why).
  """
  theta, state, losses, _ = _inner_scan(l_aux, optimizer, num_steps, phi, theta0, opt_state0, batch, unroll)
  return theta, state, losses


def _inner_scan(l_aux, optimizer, num_steps, phi, theta0, opt_state0, batch, unroll=False):
  """``inner_loop``, also returning ``||d_theta L_aux(theta_t)||`` before each step."""
  def step(carry, _):
    theta, state = carry
    loss, grad = jax.value_and_grad(l_aux)(theta, phi, batch)
    updates, state = optimizer.update(grad, state, theta)
    return (optax.apply_updates(theta, updates), state), (loss, _norm(grad))

  (theta, state), (losses, norms) = scan(step, (theta0, opt_state0), num_steps, unroll)
  return theta, state, losses, norms


def hypergradient(l_prim: Loss, l_aux: Loss, theta_star: PyTree, phi: PyTree, batch: PyTree,
                  solver: Solver) -> tuple[PyTree, dict[str, jax.Array]]:
  """Total derivative of ``L_prim(theta*(phi), phi)`` at a given stationary point ``theta*`` of L_aux."""
  g_theta, g_phi = jax.grad(l_prim, argnums=(0, 1))(theta_star, phi, batch)
  implicit, info = implicit_vjp(l_aux, theta_star, phi, batch, g_theta, solver)
  return jax.tree.map(jnp.add, g_phi, implicit), _diagnostics(g_phi, implicit, info)


def _diagnostics(explicit, implicit, info):
  """Norms of the two terms of the hypergradient and the cosine between them (0 when either is zero)."""
  e, i = _norm(explicit), _norm(implicit)
  cosine = _vdot(explicit, implicit) / jnp.maximum(e * i, jnp.finfo(e.dtype).tiny)
  return dict(info, explicit_norm=e, implicit_norm=i, cosine=cosine)


class ImplicitSolve:
  """The inner solve as a function of phi whose VJP is the implicit one (``jax.custom_vjp``).

  ``solve(phi, theta0, opt_state0, batch) -> (theta_T, opt_state_T, losses)`` runs ``inner_loop``. Its VJP
  treats theta_T as the stationary point theta*(phi) of L_aux: the cotangent ``g`` of theta_T becomes
  ``-[d_phi d_theta L_aux]^T H^{-1} g`` for phi, and zero for the warm start and the batch (a stationary point
  does not depend on where the search started). ``opt_state_T`` and ``losses`` carry no gradient. With
  ``solver.unroll`` the inner steps are straight-line code too.

  Forward-mode differentiation cannot pass through a ``custom_vjp``; HVPs are taken on L_aux directly.
  """

  def __init__(self, l_aux: Loss, optimizer: optax.GradientTransformation, num_steps: int, solver: Solver):
    if isinstance(num_steps, bool) or not isinstance(num_steps, int) or num_steps < 0:
      raise ValueError(f'num_steps (T_inner) must be a non-negative integer, got {num_steps!r}')
    if not isinstance(solver, Solver):
      raise TypeError(f'solver must be a bilevel.Solver, got {type(solver).__name__}')
    if solver.name == 'unrolled':
      raise ValueError("solver.name: 'unrolled' differentiates through the inner steps; build it with "
                       "outer_solve (or UnrolledSolve), not ImplicitSolve")
    self.l_aux, self.optimizer, self.num_steps, self.solver = l_aux, optimizer, num_steps, solver

    # `probe` is a zero input whose cotangent carries the implicit term and the solver diagnostics out of the
    # backward pass: jax.grad w.r.t. it returns them at no extra cost (see value_and_grad).
    # `memory` (init_memory) is what the solver carried from the previous step: data, like the warm start.
    @jax.custom_vjp
    def solve(phi, theta0, opt_state0, batch, probe, memory):
      del probe, memory
      theta, state, losses, norms = _inner_scan(l_aux, optimizer, num_steps, phi, theta0, opt_state0, batch,
                                                solver.unroll)
      return theta, state, (losses, norms)

    def fwd(phi, theta0, opt_state0, batch, probe, memory):
      out = solve(phi, theta0, opt_state0, batch, probe, memory)
      return out, (out[0], phi, batch, memory)

    def bwd(residuals, cotangents):
      theta, phi, batch, memory = residuals
      g_theta = cotangents[0]
      if solver.refresh == 1:
        implicit, info = implicit_vjp(l_aux, theta, phi, batch, g_theta, solver, memory)
      else:  # a new term on every refresh-th step (only that branch runs), the carried one in between
        def reuse():
          z = jnp.zeros_like(memory['residual'])
          return memory['implicit'], {'residual': memory['residual'], 'alpha': z, 'iterations': z,
                                      'grad_norm': memory['grad_norm']}
        fresh = lambda: jax.tree.map(lambda a, b: a.astype(b.dtype),
                                     implicit_vjp(l_aux, theta, phi, batch, g_theta, solver), reuse())
        implicit, info = jax.lax.cond(jnp.mod(memory['count'], solver.refresh) == 0, fresh, reuse)
        info = dict(info, memory={'count': memory['count'] + 1, 'implicit': implicit,
                                  'residual': info['residual'], 'grad_norm': info['grad_norm']})
      probe_bar = dict(info, implicit=implicit)
      return implicit, None, None, None, probe_bar, None

    solve.defvjp(fwd, bwd)
    self._solve = solve

  def _probe(self, phi, memory):
    dtype = jnp.result_type(*jax.tree.leaves(phi))
    z = jnp.zeros((), dtype)
    probe = {'residual': z, 'alpha': z, 'iterations': z, 'grad_norm': z,
             'implicit': jax.tree.map(jnp.zeros_like, phi)}
    return probe if memory is None else dict(probe, memory=jax.tree.map(jnp.zeros_like, memory))

  def init_memory(self, theta, phi=None):
    """What the solver carries between steps before the first one, or None when it keeps nothing: the previous
    solution u (zeros shaped as theta) for ``warm_start``; the reused term, its diagnostics and a step count
    (floats: the probe that returns them is differentiated) for ``refresh > 1``, which needs ``phi``."""
    if self.solver.warm_start:
      return jax.tree.map(jnp.zeros_like, theta)
    if self.solver.refresh > 1:
      z = lambda: jnp.zeros((), jnp.result_type(*jax.tree.leaves(phi)))  # one buffer each: the state is donated
      return {'count': z(), 'implicit': jax.tree.map(jnp.zeros_like, phi), 'residual': z(), 'grad_norm': z()}
    return None

  def _memory(self, theta0, phi, memory):
    return self.init_memory(theta0, phi) if memory is None else memory

  def __call__(self, phi, theta0, opt_state0, batch):
    memory = self._memory(theta0, phi, None)
    theta, state, (losses, _) = self._solve(phi, theta0, opt_state0, batch, self._probe(phi, memory), memory)
    return theta, state, losses

  def value_and_grad(self, l_prim: Loss, phi, theta0, opt_state0, batch, memory=None):
    """``(L_prim, (theta_T, opt_state_T, inner_losses)), dL_prim/dphi, diagnostics`` in one pass.

    diagnostics: ``residual``, ``alpha``, ``iterations`` of the solver, ``explicit_norm`` (``||d_phi L_prim||``),
    ``implicit_norm`` (norm of the implicit term), ``cosine`` (between the two terms), ``grad_norm``
    (``||d_theta L_aux||`` at theta_T) and ``stationarity``, that norm over the one at the warm start: the IFT
    premise is ``stationarity`` near 0; near 1 the inner steps barely approached a stationary point. With
    ``solver.warm_start`` or ``solver.refresh > 1``, ``memory`` is what the previous call carried (None: the
    first step's, ``init_memory``) and diagnostics also hold ``memory``, this call's, to pass to the next one (a
    pytree: pop it before logging).
    """
    memory = self._memory(theta0, phi, memory)

    def outer(phi, probe):
      theta, state, (losses, norms) = self._solve(phi, theta0, opt_state0, batch, probe, memory)
      return l_prim(theta, phi, batch), (theta, state, losses, norms)

    (loss, (theta, state, losses, norms)), (grad, probe_bar) = jax.value_and_grad(
        outer, argnums=(0, 1), has_aux=True)(phi, self._probe(phi, memory))
    implicit = probe_bar.pop('implicit')
    new_memory = probe_bar.pop('memory', None)
    explicit = jax.tree.map(jnp.subtract, grad, implicit)
    diagnostics = _diagnostics(explicit, implicit, probe_bar)
    if self.num_steps:
      diagnostics['stationarity'] = diagnostics['grad_norm'] / jnp.maximum(norms[0], jnp.finfo(norms.dtype).tiny)
    if new_memory is not None:
      diagnostics['memory'] = new_memory
    return (loss, (theta, state, losses)), grad, diagnostics


class UnrolledSolve:
  """``ImplicitSolve``'s interface with the derivative of the truncated procedure itself: reverse-mode through
  the T inner steps from the warm start (``inner_loop``), no stationarity assumed and no solve.

  Its "implicit" diagnostic is the part of dL_prim/dphi that flows through theta_T (total minus the explicit
  ``d_phi L_prim``), so its norm and cosine compare with the implicit term of the solvers. Memory grows with T.
  Differentiating through Adam needs ``eps_root > 0`` (``optimizer``'s business: see ``methods.make_optimizer``).
  """

  def __init__(self, l_aux: Loss, optimizer: optax.GradientTransformation, num_steps: int, unroll: bool = False):
    if isinstance(num_steps, bool) or not isinstance(num_steps, int) or num_steps < 0:
      raise ValueError(f'num_steps (T_inner) must be a non-negative integer, got {num_steps!r}')
    self.l_aux, self.optimizer, self.num_steps, self.unroll = l_aux, optimizer, num_steps, unroll

  def __call__(self, phi, theta0, opt_state0, batch):
    return inner_loop(self.l_aux, self.optimizer, self.num_steps, phi, theta0, opt_state0, batch, self.unroll)

  def init_memory(self, theta, phi=None):
    del theta, phi
    return None

  def value_and_grad(self, l_prim: Loss, phi, theta0, opt_state0, batch, memory=None):
    """As ``ImplicitSolve.value_and_grad``; ``residual`` is 0 (nothing is solved) and ``iterations`` 0."""
    del memory
    def outer(phi):
      theta, state, losses, norms = _inner_scan(self.l_aux, self.optimizer, self.num_steps, phi, theta0,
                                                opt_state0, batch, self.unroll)
      return l_prim(theta, phi, batch), (theta, state, losses, norms)

    (loss, (theta, state, losses, norms)), grad = jax.value_and_grad(outer, has_aux=True)(phi)
    explicit = jax.grad(l_prim, argnums=1)(theta, phi, batch)
    through_theta = jax.tree.map(jnp.subtract, grad, explicit)
    grad_norm = _norm(jax.grad(self.l_aux)(theta, phi, batch))
    z = jnp.zeros((), grad_norm.dtype)
    diagnostics = _diagnostics(explicit, through_theta,
                               {'residual': z, 'alpha': z, 'iterations': z, 'grad_norm': grad_norm})
    if self.num_steps:
      diagnostics['stationarity'] = grad_norm / jnp.maximum(norms[0], jnp.finfo(norms.dtype).tiny)
    return (loss, (theta, state, losses)), grad, diagnostics


def outer_solve(l_aux: Loss, optimizer: optax.GradientTransformation, num_steps: int, solver: Solver):
  """``UnrolledSolve`` for ``solver.name == 'unrolled'``, else ``ImplicitSolve`` with ``solver``."""
  if solver.name == 'unrolled':
    return UnrolledSolve(l_aux, optimizer, num_steps, solver.unroll)
  return ImplicitSolve(l_aux, optimizer, num_steps, solver)
