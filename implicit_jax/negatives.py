"""Negative outputs ``y_bar`` drawn from the inference network, differentiable in its parameters.

The implicit gradient multiplies ``d_theta L_prim``; hard Bernoulli samples make that zero and the implicit term
silently vanishes. Every sampler here is a reparameterisation: noise is drawn first (it is data, passed in the
batch), then mapped to ``y_bar`` by a function of the logits that carries gradient:

* ``concrete``: binary Concrete / relaxed Bernoulli, ``sigmoid((logits + logistic noise) / temperature)``;
* ``straight_through``: a hard Bernoulli sample in the forward pass, the probability's gradient backward;
* ``gaussian``: ``clip(p + scale * N(0, 1), 0, 1)``, SEAL's regression-s perturbations of the output.

With ``include_mean`` the relaxed prediction ``A_theta(x) = sigmoid(logits)`` itself is the first negative.
"""

import jax
import jax.numpy as jnp

SAMPLERS = ('concrete', 'straight_through', 'gaussian')


def draw_noise(rng: jax.Array, sampler: str, num_samples: int, shape: tuple[int, ...]) -> jax.Array:
  """Noise for ``num_samples`` negatives of ``shape`` ([B, L]); uniform for the first two samplers, normal else."""
  if sampler not in SAMPLERS:
    raise ValueError(f'negatives.sampler: unknown sampler {sampler!r}; choose one of {SAMPLERS}')
  if sampler == 'gaussian':
    return jax.random.normal(rng, (num_samples, *shape))
  return jax.random.uniform(rng, (num_samples, *shape), minval=1e-6, maxval=1.0 - 1e-6)


def negatives(logits: jax.Array, noise: jax.Array, sampler: str, temperature: float, scale: float,
              include_mean: bool) -> jax.Array:
  """``[K, B, L]`` negatives: K = number of noise draws (+ 1 with ``include_mean``)."""
  p = jax.nn.sigmoid(logits)
  if sampler == 'concrete':
    logistic = jnp.log(noise) - jnp.log1p(-noise)
    samples = jax.nn.sigmoid((logits + logistic) / temperature)
  elif sampler == 'straight_through':
    hard = (noise < p).astype(p.dtype)
    samples = hard + p - jax.lax.stop_gradient(p)
  elif sampler == 'gaussian':
    samples = jnp.clip(p + scale * noise, 0.0, 1.0)
  else:
    raise ValueError(f'negatives.sampler: unknown sampler {sampler!r}; choose one of {SAMPLERS}')
  return jnp.concatenate([p[None], samples], axis=0) if include_mean else samples
