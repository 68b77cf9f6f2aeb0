"""Primary (energy) and auxiliary losses.

Sign convention, used everywhere in this package:
  * energy ``E(x, y)``: lower is better (``energies.py``);
  * cost ``Delta(y_bar, y) >= 0``: higher is worse, zero at ``y_bar = y``;
  * every function here returns a loss to be *minimised*, averaged over the batch.

Inference-network outputs are logits; relaxed outputs are ``sigmoid(logits)`` in [0, 1]^L. Negatives built from
``A_theta(x)`` keep their gradient to theta: the implicit term multiplies ``d_theta L_prim`` and would vanish
with hard (non-differentiable) negatives.
"""

import jax
import jax.numpy as jnp
import optax


def bce(logits: jax.Array, y: jax.Array) -> jax.Array:
  """Multi-label binary cross-entropy (MBCE), summed over labels, averaged over examples."""
  return jnp.mean(jnp.sum(optax.sigmoid_binary_cross_entropy(logits, y), axis=-1))


def l1_cost(y_bar: jax.Array, y: jax.Array) -> jax.Array:
  """``Delta(y_bar, y) = sum_j |y_bar_j - y_j|`` per example: the Hamming distance on relaxed outputs."""
  return jnp.sum(jnp.abs(y_bar - y), axis=-1)


def ssvm_margin(e_neg: jax.Array, e_gold: jax.Array, cost: jax.Array) -> jax.Array:
  """Margin-rescaled SSVM hinge ``[Delta(y_bar, y) - E(x, y_bar) + E(x, y)]_+``, averaged.

  Zero once the negative's energy exceeds the gold energy by at least its cost.
  """
  return jnp.mean(jax.nn.relu(cost - e_neg + e_gold))


def perceptron(e_neg: jax.Array, e_gold: jax.Array) -> jax.Array:
  """Structured perceptron ``[E(x, y) - E(x, y_bar)]_+``, averaged: the margin loss without the cost."""
  return jnp.mean(jax.nn.relu(e_gold - e_neg))
