"""Gradient-based inference (GBI): minimise an energy over the relaxed outputs of an output space.

SPEN, DVN and NCE-with-GBI predict this way; the implicit method can use it to refine ``A_theta(x)`` (paper,
Remark 3). A fixed number of steps inside ``lax.scan`` (one compiled loop, no host round trips); each step
evaluates the energy once, its value and its gradient from one forward and one backward pass. The update rule
and the feasible set are the output space's (``OutputSpace.gbi_step``): on the box or on the simplices,
``projected`` or ``mirror``.

With ``tol > 0`` an example stops moving once its energy changes by less than ``tol`` in a step (its later steps
are no-ops; the loop length stays fixed so the program compiles once).
"""

from typing import Any, Callable

import jax
import jax.numpy as jnp
import ml_collections

from implicit_jax import bilevel
from implicit_jax.spaces import OutputSpace, check_rule


def default_config() -> ml_collections.ConfigDict:
  """A method's ``gbi`` section: gradient-based inference over the task's output space."""
  g = ml_collections.ConfigDict()
  g.steps = 20                # fixed number of steps (one lax.scan)
  g.step_size = 0.1           # eta
  g.rule = 'projected'        # 'projected' (onto the box / the simplices) or 'mirror' (entropic mirror descent)
  g.init = 'half'             # 'half' (the centre: 0.5 per unit, uniform over classes), 'zeros' (binary only) or
                              # 'given' (a starting y the method passes, e.g. a noise net's output)
  g.tol = 0.0                 # an example stops once its energy changes less than this; 0 = never
  g.unroll = False            # the steps as straight-line code, not an XLA loop: the same numbers, longer
                              # compiles; XLA:CPU runs convolution gradients inside loops several times slower
  return g


def check(steps: int, step_size: float, rule: str, field: str = 'gbi') -> None:
  """Validates GBI settings; errors name ``field`` (the config section)."""
  check_rule(rule, f'{field}.rule')
  if isinstance(steps, bool) or not isinstance(steps, int) or steps < 0:
    raise ValueError(f'{field}.steps must be a non-negative integer, got {steps!r}')
  if not step_size > 0:
    raise ValueError(f'{field}.step_size must be > 0, got {step_size}')


def gradient_based_inference(space: OutputSpace, energy: Callable[[jax.Array], jax.Array], y0: jax.Array,
                             steps: int, step_size: float, rule: str = 'projected', tol: float = 0.0,
                             unroll: bool = False):
  """Runs ``steps`` GBI steps on ``energy(y) -> [B]`` (lower is better) from ``y0`` in ``space`` (in straight-line
  code with ``unroll``).

  Returns ``(y, energies [steps + 1, B])``, the energy before each step and after the last one. Examples are
  independent: each one's gradient is that of its own energy.
  """
  check(steps, step_size, rule)
  y0 = space.gbi_start(y0, rule)

  def step(carry, _):
    y, e_prev, done = carry
    e, energy_vjp = jax.vjp(energy, y)
    (grad,) = energy_vjp(jnp.ones_like(e))  # the gradient of sum_b E_b: each example's own, in one pass
    y_new = space.gbi_step(y, grad, step_size, rule)
    done = done | (jnp.abs(e_prev - e) < tol)
    y = jnp.where(done.reshape(done.shape + (1,) * (y.ndim - 1)), y, y_new)
    return (y, e, done), e

  batch = y0.shape[0]
  init = (y0, jnp.full((batch,), jnp.inf, y0.dtype), jnp.zeros((batch,), bool))
  (y, _, _), energies = bilevel.scan(step, init, steps, unroll)
  return y, jnp.concatenate([energies, energy(y)[None]], axis=0)


def predictor(space: OutputSpace, energy_module: Any, gbi, field: str = 'gbi'):
  """``predict(phi, batch, y0=None) -> y``: GBI on ``energy_module.apply(phi, batch, y)`` from ``gbi.init``
  (``y0`` when it is 'given'). ``gbi`` has ``steps``, ``step_size``, ``rule``, ``init``, ``tol`` (and ``unroll``)."""
  check(gbi.steps, gbi.step_size, gbi.rule, field)
  space.check_init(gbi.init, f'{field}.init')

  def predict(phi, batch, y0=None):
    start = space.initial(gbi.init, space.shape(batch), y0, f'{field}.init')
    y, _ = gradient_based_inference(space, lambda y: energy_module.apply(phi, batch, y), start, gbi.steps,
                                    gbi.step_size, gbi.rule, gbi.tol, gbi.unroll)
    return y

  return predict
