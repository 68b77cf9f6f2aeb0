"""The Neumann series ``alpha * sum_k (I - alpha A)^k v`` for ``A^{-1} v`` (``neumann``) and its K = 0 term
(``identity``), with the step ``alpha`` optionally capped by power iteration."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from implicit_jax.hessian import axpy, norm, power_iteration, scale
from implicit_jax.loops import fori

# Each solver here is ``solve(matvec, v, solver) -> (u, info)``, the contract of ``implicit_jax/plugins.py``;
# ``matvec`` an ``implicit_jax.hessian.Operator``.


def _neumann(matvec, v, iterations, alpha, unroll=False):
  # p_k = (I - alpha H)^k v;  u = alpha * sum_{k=0..K} p_k  (K HVPs, K + 1 terms).
  def body(_, carry):
    p, acc = carry
    p = axpy(-alpha, matvec(p), p)
    return p, jax.tree.map(jnp.add, acc, p)

  _, acc = fori(0, iterations, body, (v, v), unroll)
  return scale(alpha, acc)


def _neumann_solve(matvec, v, solver, terms):
  dtype = norm(v).dtype
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
