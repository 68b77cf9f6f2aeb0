"""Generalised conjugate residuals with fused products (``gcr``): MINRES's iterate, and the implicit term itself."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from implicit_jax.hessian import axpy, check_tangent, norm, relative_residual, scale, vdot
from implicit_jax.loops import fori

# Each solver here is ``solve(matvec, v, solver) -> (u, info)``, the contract of ``implicit_jax/plugins.py``;
# ``matvec`` an ``implicit_jax.hessian.Operator``.


def _gcr(matvec, v, solver):
  """The implicit term ``-[d_phi d_theta L_aux]^T u`` with ``u ~= (H + damping I)^{-1} v`` by generalised conjugate
  residuals (Eisenstat, Elman & Schultz 1983), every product fused (``fused_products``).

  Each iteration takes the current residual r as a new direction p, gets ``A p`` (``A = H + damping I``) and
  ``C^T p`` (``C = d_phi d_theta L_aux``) from one pass, orthogonalises ``A p`` against the earlier ones and
  moves u to the minimiser of ``||A u - v||`` over all directions so far. Started from u = 0 this is MINRES's
  iterate (the directions span the Krylov space K_k(A, v)), so H may be indefinite; unlike MINRES it keeps every
  direction, and ``C^T u`` is accumulated with u from the products already made: no separate mixed VJP.

  ``matvec.memory`` (``solver.warm_start``): a previous solution, made the first direction (one more pass), so that the
  Krylov space grows from the residual it leaves. Returns ``(implicit, u, info)``; ``info`` as
  ``solve_inverse_hvp``'s (``residual`` on the undamped H; ``iterations`` counts passes) but for ``grad_norm``,
  which ``solver.track_stationarity`` pays one gradient for.
  """
  theta, phi, memory = matvec.theta, matvec.phi, matvec.memory
  dtype = norm(v).dtype
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
    ap = axpy(solver.damping, p, hp) if solver.damping else hp

    def orthogonalise(j, vectors):  # modified Gram-Schmidt of A p against the earlier images, one at a time
      ap, p, hp, cp = vectors
      p_j, q_j, hp_j, cp_j = jax.tree.map(lambda b: b[j], basis)
      beta = vdot(ap, q_j)
      return axpy(-beta, q_j, ap), axpy(-beta, p_j, p), axpy(-beta, hp_j, hp), axpy(-beta, cp_j, cp)

    ap, p, hp, cp = fori(0, i, orthogonalise, (ap, p, hp, cp), solver.unroll)
    length = norm(ap)
    # A direction whose image vanishes (a zero memory at the first step, or a solved system) adds nothing.
    factor = jnp.where(length > jnp.finfo(dtype).eps * norm(v), 1.0 / jnp.maximum(length, tiny), 0.0)
    p, q, hp, cp = scale(factor, p), scale(factor, ap), scale(factor, hp), scale(factor, cp)
    alpha = vdot(r, q)
    basis = jax.tree.map(lambda b, new: b.at[i].set(new), basis, (p, q, hp, cp))
    return axpy(alpha, p, x), axpy(alpha, hp, hx), axpy(alpha, cp, cx), axpy(-alpha, q, r), basis

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
  residual = relative_residual(norm(axpy(-1.0, v, hx)) if solver.damping else norm(r), norm(v))
  info = {'residual': residual, 'iterations': size}
  if not solver.track_stationarity:  # else the caller pays one gradient for it (Operator.gradient)
    info['grad_norm'] = jnp.full((), jnp.nan, dtype)
  return scale(-1.0, cx), x, info


def solve_gcr(matvec, v, solver):
  """GCR with fused products (``_gcr``); ``info['implicit']`` is the implicit term."""
  implicit, u, info = _gcr(matvec, v, solver)
  return u, dict(info, implicit=implicit)


solve_gcr.linearize = False  # fused products (reverse-over-forward) only
