"""Primary (energy) losses: what the energy is trained on, in every method.

Sign convention, used everywhere in this package:
  * energy ``E(x, y)``: lower is better (every task's energy module);
  * cost ``Delta(y_bar, y) >= 0``: higher is worse, zero at ``y_bar = y``;
  * task score ``s(y_bar, y)`` in [0, 1]: higher is better (e.g. a soft F1 or accuracy), ``Delta = 1 - s`` where a
    cost is needed;
  * every loss returns a value to be *minimised*, averaged over the batch.

Costs, scores, the local cross-entropy and the log-probabilities of outputs depend on the output space and live
there (``implicit_jax.spaces``); these losses see only energies, costs, scores and log-probabilities.

Shapes: ``e_gold`` is ``[B]``; negatives come stacked, ``e_neg``, ``cost``, ``score``, ``log_pn`` are
``[K, B]``. Negatives built from ``A_theta(x)`` must keep their gradient to theta (``OutputSpace.negatives``):
the implicit term multiplies ``d_theta L_prim`` and vanishes with hard, non-differentiable negatives.
"""

import jax
import jax.numpy as jnp
import optax


def ssvm_margin(e_neg: jax.Array, e_gold: jax.Array, cost: jax.Array) -> jax.Array:
  """Margin-rescaled SSVM hinge ``max_k [Delta(y_bar_k, y) - E(x, y_bar_k) + E(x, y)]_+``, averaged.

  Zero once every negative's energy exceeds the gold energy by at least its cost. Accepts ``[B]`` or ``[K, B]``.
  """
  return jnp.mean(ssvm_margin_terms(e_neg, e_gold, cost))


def ssvm_margin_terms(e_neg: jax.Array, e_gold: jax.Array, cost: jax.Array) -> jax.Array:
  """``ssvm_margin`` per example, ``[B]``."""
  violation = jax.nn.relu(cost - e_neg + e_gold)
  return violation if violation.ndim == 1 else jnp.max(violation, axis=0)


def perceptron(e_neg: jax.Array, e_gold: jax.Array) -> jax.Array:
  """Structured perceptron ``max_k [E(x, y) - E(x, y_bar_k)]_+``, averaged: the margin loss without cost."""
  return ssvm_margin(e_neg, e_gold, jnp.zeros_like(e_neg))


def contrastive_divergence(e_neg: jax.Array, e_gold: jax.Array, cost: jax.Array) -> jax.Array:
  """Contrastive divergence with task loss (paper, "Primary Loss Design"; supplement section 4)::

      L_CD = -log exp(-E(x, y)) / sum_{k=0..K} exp(-E(x, y_bar_k) + Delta(y_bar_k, y)),   y_bar_0 = y

  i.e. ``E(x, y) + logsumexp_k(Delta_k - E_k)`` with the gold term ``Delta_0 - E_0 = -E(x, y)``. With one
  negative it is the SSVM margin with the hinge softened to a softplus.
  """
  return jnp.mean(contrastive_divergence_terms(e_neg, e_gold, cost))


def contrastive_divergence_terms(e_neg: jax.Array, e_gold: jax.Array, cost: jax.Array) -> jax.Array:
  """``contrastive_divergence`` per example, ``[B]``."""
  terms = jnp.concatenate([-e_gold[None], cost - e_neg], axis=0)
  return e_gold + jax.nn.logsumexp(terms, axis=0)


def reward_ranking_terms(e: jax.Array, reward: jax.Array, margin: float, valid: jax.Array | None = None
                         ) -> jax.Array:
  """Rank-based loss on outputs scored by a reward (R-SPEN, Rooshenas et al. 2018), per example ``[B]``: for
  every pair of outputs with ``R_i > R_j``, the energy must be lower on ``y_i`` by ``margin * (R_i - R_j)``::

      L = mean over pairs with R_i > R_j of  [margin * (R_i - R_j) + E_i - E_j]_+

  ``e``, ``reward``: ``[S, B]``; ``valid`` [S, B] leaves outputs out (0). The reward is a target (no gradient).
  Zero for an example with no ordered pair.
  """
  reward = jax.lax.stop_gradient(reward)
  gap = reward[:, None, :] - reward[None, :, :]                                     # [S, S, B]: R_i - R_j
  ordered = (gap > 0).astype(e.dtype)
  if valid is not None:
    ordered = ordered * valid[:, None, :] * valid[None, :, :]
  hinge = jax.nn.relu(margin * gap + e[:, None, :] - e[None, :, :])
  return jnp.sum(ordered * hinge, axis=(0, 1)) / jnp.maximum(jnp.sum(ordered, axis=(0, 1)), 1.0)


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
