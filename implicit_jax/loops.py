"""Loops of a known maximum length that can also be written as straight-line code (``unroll``): XLA:CPU runs
convolution gradients inside loops several times slower than outside them (jax-ml/jax#12868), so the solvers, the
inner steps and gradient-based inference take ``unroll`` to trade compile time for that."""

import jax
import jax.numpy as jnp


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


def fori(lower, upper, body, init, unroll: bool = False):
  """``jax.lax.fori_loop``; with ``unroll`` (and static bounds), straight-line code (see ``scan``)."""
  if unroll and upper == lower:
    return init
  if not unroll or upper - lower != 1:
    return jax.lax.fori_loop(lower, upper, body, init, unroll=bool(unroll) or None)
  return body(lower, init)
