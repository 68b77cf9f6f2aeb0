"""Primary (energy) losses, auxiliary losses, task scores and costs.

Sign convention, used everywhere in this package:
  * energy ``E(x, y)``: lower is better (``energies.py``);
  * cost ``Delta(y_bar, y) >= 0``: higher is worse, zero at ``y_bar = y``;
  * task score ``s(y_bar, y)`` in [0, 1]: higher is better (soft F1), ``Delta = 1 - s`` where a cost is needed;
  * every loss returns a value to be *minimised*, averaged over the batch.

Shapes: ``e_gold`` is ``[B]``; negatives come stacked, ``e_neg``, ``cost``, ``score``, ``log_pn`` are
``[K, B]``. Negatives built from ``A_theta(x)`` must keep their gradient to theta (see ``negatives.py``): the
implicit term multiplies ``d_theta L_prim`` and vanishes with hard, non-differentiable negatives.
"""

import jax
import jax.numpy as jnp
import optax

# ---------------------------------------------------------------------------------------- scores and costs


def soft_f1(y_bar: jax.Array, y: jax.Array) -> jax.Array:
  """SEAL's soft F1 on relaxed outputs, ``2 sum min(y_bar, y) / (sum min + sum max)``; 1 when both are empty.

  Equals example F1 on binary inputs (``sum min = TP``, ``sum max = TP + FP + FN``).
  """
  lo = jnp.sum(jnp.minimum(y_bar, y), axis=-1)
  hi = jnp.sum(jnp.maximum(y_bar, y), axis=-1)
  denom = lo + hi
  return jnp.where(denom > 0, 2.0 * lo / jnp.where(denom > 0, denom, 1.0), 1.0)


def l1_cost(y_bar: jax.Array, y: jax.Array) -> jax.Array:
  """``Delta(y_bar, y) = sum_j |y_bar_j - y_j|``: the Hamming distance on relaxed outputs."""
  return jnp.sum(jnp.abs(y_bar - y), axis=-1)


def hamming_cost(y_bar: jax.Array, y: jax.Array) -> jax.Array:
  """Mean per-label L1 distance, in [0, 1]: the Hamming loss on relaxed outputs."""
  return jnp.mean(jnp.abs(y_bar - y), axis=-1)


def f1_cost(y_bar: jax.Array, y: jax.Array) -> jax.Array:
  """``1 - soft_f1``."""
  return 1.0 - soft_f1(y_bar, y)


COSTS = {'l1': l1_cost, 'hamming': hamming_cost, 'f1': f1_cost}

# --------------------------------------------------------------------------------------- auxiliary losses


def bce(logits: jax.Array, y: jax.Array) -> jax.Array:
  """Multi-label binary cross-entropy (MBCE), summed over labels, averaged over examples."""
  return jnp.mean(jnp.sum(optax.sigmoid_binary_cross_entropy(logits, y), axis=-1))


def bernoulli_log_prob(logits: jax.Array, y: jax.Array) -> jax.Array:
  """``log prod_j p_j^y_j (1 - p_j)^(1 - y_j)``, ``p = sigmoid(logits)``, relaxed y too; ``[..., L] -> [...]``."""
  return -jnp.sum(optax.sigmoid_binary_cross_entropy(logits, y), axis=-1)

# ----------------------------------------------------------------------------------------- primary losses


def ssvm_margin(e_neg: jax.Array, e_gold: jax.Array, cost: jax.Array) -> jax.Array:
  """Margin-rescaled SSVM hinge ``max_k [Delta(y_bar_k, y) - E(x, y_bar_k) + E(x, y)]_+``, averaged.

  Zero once every negative's energy exceeds the gold energy by at least its cost. Accepts ``[B]`` or ``[K, B]``.
  """
  violation = jax.nn.relu(cost - e_neg + e_gold)
  return jnp.mean(violation if violation.ndim == 1 else jnp.max(violation, axis=0))


def perceptron(e_neg: jax.Array, e_gold: jax.Array) -> jax.Array:
  """Structured perceptron ``max_k [E(x, y) - E(x, y_bar_k)]_+``, averaged: the margin loss without cost."""
  return ssvm_margin(e_neg, e_gold, jnp.zeros_like(e_neg))


def contrastive_divergence(e_neg: jax.Array, e_gold: jax.Array, cost: jax.Array) -> jax.Array:
  """Contrastive divergence with task loss (paper, "Primary Loss Design"; supplement section 4)::

      L_CD = -log exp(-E(x, y)) / sum_{k=0..K} exp(-E(x, y_bar_k) + Delta(y_bar_k, y)),   y_bar_0 = y

  i.e. ``E(x, y) + logsumexp_k(Delta_k - E_k)`` with the gold term ``Delta_0 - E_0 = -E(x, y)``. With one
  negative it is the SSVM margin with the hinge softened to a softplus.
  """
  terms = jnp.concatenate([-e_gold[None], cost - e_neg], axis=0)
  return jnp.mean(e_gold + jax.nn.logsumexp(terms, axis=0))


def nce_ranking(e_neg: jax.Array, e_gold: jax.Array, log_pn_neg: jax.Array, log_pn_gold: jax.Array) -> jax.Array:
  """NCE ranking loss (Ma & Collins 2018; SEAL Eq. 8-9) with the ``-log P_N`` correction::

      s(y) = -E(x, y) - log P_N(y),     L = -log exp(s(y_0)) / sum_{k=0..K} exp(s(y_k)),   y_0 = y

  The gold output is in the denominator (Ma & Collins' ranking form), so the loss is >= 0.
  """
  s_gold = -e_gold - log_pn_gold
  s_all = jnp.concatenate([s_gold[None], -e_neg - log_pn_neg], axis=0)
  return jnp.mean(jax.nn.logsumexp(s_all, axis=0) - s_gold)


def dvn_regression(e_neg: jax.Array, score: jax.Array) -> jax.Array:
  """DVN regression (Gygli et al. 2017; SEAL Eq. 7): cross-entropy between the task score ``s(y_bar, y)`` and
  ``sigmoid(-E(x, y_bar))``, averaged over negatives and examples.

  SEAL's Eq. 7 prints ``log(1 + sigma)`` in the second term; the cross-entropy it describes is
  ``log(1 - sigma)``, used here.
  """
  return jnp.mean(optax.sigmoid_binary_cross_entropy(-e_neg, score))


PRIMARY_LOSSES = ('ssvm', 'perceptron', 'cd', 'nce', 'dvn')
