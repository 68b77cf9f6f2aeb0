"""Gradient-based inference (GBI): minimise an energy over relaxed outputs y in [0, 1]^L.

SPEN and DVN predict this way; the implicit method can use it to refine ``A_theta(x)`` (paper, Remark 3).
Two update rules, a fixed number of steps inside ``lax.scan`` (one compiled loop, no host round trips):

* ``projected``: ``y <- clip(y - eta * dE/dy, 0, 1)``;
* ``mirror``: entropic mirror descent on the box, the binary-entropy mirror map per label,
  ``logit(y) <- logit(y) - eta * dE/dy``: y stays strictly inside (0, 1) and moves multiplicatively near the faces.

With ``tol > 0`` an example stops moving once its energy changes by less than ``tol`` in a step (its later steps
are no-ops; the loop length stays fixed so the program compiles once).
"""

from typing import Callable

import jax
import jax.numpy as jnp

RULES = ('projected', 'mirror')
INITS = ('zeros', 'half', 'given')
_EDGE = 1e-4  # mirror descent starts this far inside the box: logit(0) is -inf


def initial_y(init: str, shape: tuple, given: jax.Array | None = None) -> jax.Array:
  """The starting point: ``zeros``, ``half`` (0.5 everywhere) or ``given`` (e.g. the inference network's output)."""
  if init not in INITS:
    raise ValueError(f'gbi.init: unknown initialisation {init!r}; choose one of {INITS}')
  if init == 'given':
    if given is None:
      raise ValueError("gbi.init='given' needs the starting y (e.g. the inference network's output)")
    return given
  return jnp.full(shape, 0.0 if init == 'zeros' else 0.5)


def gradient_based_inference(energy: Callable[[jax.Array], jax.Array], y0: jax.Array, steps: int,
                             step_size: float, rule: str = 'projected', tol: float = 0.0):
  """Runs ``steps`` GBI steps on ``energy(y [B, L]) -> [B]`` (lower is better) from ``y0``.

  Returns ``(y [B, L], energies [steps + 1, B])``, the energy before each step and after the last one.
  Examples are independent: each one's gradient is that of its own energy.
  """
  if rule not in RULES:
    raise ValueError(f'gbi.rule: unknown update rule {rule!r}; choose one of {RULES}')
  if isinstance(steps, bool) or not isinstance(steps, int) or steps < 0:
    raise ValueError(f'gbi.steps must be a non-negative integer, got {steps!r}')
  if not step_size > 0:
    raise ValueError(f'gbi.step_size must be > 0, got {step_size}')
  value_and_grad = jax.value_and_grad(lambda y: jnp.sum(energy(y)))
  y0 = jnp.clip(y0, _EDGE, 1.0 - _EDGE) if rule == 'mirror' else jnp.clip(y0, 0.0, 1.0)

  def step(carry, _):
    y, e_prev, done = carry
    e = energy(y)
    _, g = value_and_grad(y)
    if rule == 'projected':
      y_new = jnp.clip(y - step_size * g, 0.0, 1.0)
    else:
      y_new = jax.nn.sigmoid(jnp.log(y) - jnp.log1p(-y) - step_size * g)
      y_new = jnp.clip(y_new, _EDGE, 1.0 - _EDGE)  # float32 sigmoid saturates to exactly 0 or 1
    done = done | (jnp.abs(e_prev - e) < tol)
    y = jnp.where(done[:, None], y, y_new)
    return (y, e, done), e

  batch = y0.shape[0]
  init = (y0, jnp.full((batch,), jnp.inf, y0.dtype), jnp.zeros((batch,), bool))
  (y, _, _), energies = jax.lax.scan(step, init, None, length=steps)
  return y, jnp.concatenate([energies, energy(y)[None]], axis=0)
