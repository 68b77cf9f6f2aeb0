"""A dense solve of the materialised ``H + damping I`` (``dense``: small models and tests only)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.flatten_util import ravel_pytree

from implicit_jax.hessian import relative_residual

# Each solver here is ``solve(matvec, v, solver) -> (u, info)``, the contract of ``implicit_jax/plugins.py``;
# ``matvec`` an ``implicit_jax.hessian.Operator``.


def _dense(product, v, damping=0.0):
  """``(H + damping I)^{-1} v`` by a dense solve, and ``||H u - v|| / ||v||`` (undamped H)."""
  flat_v, unravel = ravel_pytree(v)
  # Columns H e_i by vmapped HVPs: forward-over-reverse, the same product the iterative solvers use.
  basis = jnp.eye(flat_v.size, dtype=flat_v.dtype)
  h = jax.vmap(lambda e: ravel_pytree(product(unravel(e)))[0])(basis).T
  u = jnp.linalg.solve(h + damping * basis, flat_v)
  residual = relative_residual(jnp.linalg.norm(h @ u - flat_v), jnp.linalg.norm(flat_v))
  return unravel(u), residual


def solve_dense(matvec, v, solver):
  """A dense solve of the materialised ``H + damping I`` (small problems)."""
  u, residual = _dense(matvec.hessian, v, solver.damping)
  return u, {'iterations': ravel_pytree(v)[0].size, 'residual': residual}
