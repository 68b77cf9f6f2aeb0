"""Krylov solvers on ``A = H + damping I``: conjugate gradient (``cg``, A positive definite), CG on the normal
equations (``normal_cg``, H indefinite) and MINRES (``minres``, symmetric A, possibly indefinite)."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from implicit_jax.hessian import axpy, norm, relative_residual, scale, vdot
from implicit_jax.loops import while_loop

# Each solver here is ``solve(matvec, v, solver) -> (u, info)``, the contract of ``implicit_jax/plugins.py``;
# ``matvec`` an ``implicit_jax.hessian.Operator``.


def _cg(matvec, v, maxiter, tol, carried=None, unroll=False):
  """Conjugate gradient from u = 0; stops on tolerance, max iterations or non-positive curvature.

  With ``carried`` (a pytree of zeros), ``matvec(p)`` returns ``(A p, w(p))`` for a linear map w, and CG also
  returns ``w(x)``, accumulated with the same steps as x: normal_cg gets ``H u`` for its residual this way from
  the ``H p`` it computes anyway, instead of one more HVP at the end.
  """
  zero = jax.tree.map(jnp.zeros_like, v)
  rs0 = vdot(v, v)
  stop_at = (tol ** 2) * rs0
  apply = matvec if carried is not None else (lambda p: (matvec(p), ()))

  def cond(state):
    k, _, _, _, rs, broken, _ = state
    return (k < maxiter) & (rs > stop_at) & ~broken

  def body(state):
    k, x, r, p, rs, _, wx = state
    ap, wp = apply(p)
    pap = vdot(p, ap)
    broken = ~(pap > 0)  # the operator is not positive definite along p: stop with the current iterate
    step = jnp.where(broken, 0.0, rs / jnp.where(broken, 1.0, pap))
    x = axpy(step, p, x)
    wx = axpy(step, wp, wx)
    r = axpy(-step, ap, r)
    rs_new = vdot(r, r)
    p = axpy(rs_new / jnp.where(rs > 0, rs, 1.0), p, r)
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
  beta1 = norm(v)
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
    vk = scale(1.0 / beta, y)                                      # Lanczos vector
    y = matvec(vk)
    y = axpy(-jnp.where(k > 0, beta / jnp.where(oldb > 0, oldb, 1.0), 0.0), r1, y)
    alfa = vdot(vk, y)
    y = axpy(-alfa / beta, r2, y)
    r1, r2, oldb = r2, y, beta
    beta = norm(y)
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
    w = scale(1.0 / gamma, axpy(-delta, w2, axpy(-oldeps, w1, vk)))
    x = axpy(phi, w, x)
    return k + 1, x, w, w2, r1, r2, y, beta, oldb, dbar, phibar, epsln, cs, sn

  init = (jnp.zeros((), jnp.int32), zero, zero, zero, v, v, v, beta1, f(0), f(0), beta1, f(0), f(-1), f(0))
  state = while_loop(cond, body, init, maxiter, unroll)
  k, x, phibar = state[0], state[1], state[10]
  return x, k, phibar / jnp.where(beta1 > 0, beta1, 1.0)


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
    return axpy(solver.damping, x, product(hx)), hx

  u, k, _, hu = _cg(normal, product(v), solver.iterations, solver.tol, jax.tree.map(jnp.zeros_like, v),
                    solver.unroll)
  info = {'iterations': 2 * k + 1}
  if solver.track_residual:  # H u accumulated inside CG: the residual costs no HVP
    info['residual'] = relative_residual(norm(axpy(-1.0, v, hu)), norm(v))
  return u, info
