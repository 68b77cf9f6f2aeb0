"""Flax energy networks ``E_phi(x, y)``. Convention: lower energy = better output y.

Multi-label (SPEN, Belanger & McCallum 2016; the paper's MLC energy)::

    E(x, y) = y^T W b(x)  +  v^T softplus(M y)
              local term      global (label-interaction) term

``b`` is a feature MLP, y lies in [0, 1]^L (relaxed) or {0, 1}^L. The signs of W and v are learned, so this
convention loses no generality; it fixes what "low energy" means for every loss in ``losses.py``.
"""

from typing import Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp

from implicit_jax.networks import MLP, activation


class MLCEnergy(nn.Module):
  """SPEN multi-label energy. ``__call__(x [B, D], y [..., B, L]) -> energies [..., B]``.

  Leading axes of y (e.g. K negatives) share one evaluation of the feature network b(x).
  """

  num_labels: int
  feature_hidden: Sequence[int] = (150,)
  feature_dim: int = 150
  global_hidden: int = 16
  act: str = 'softplus'

  @nn.compact
  def __call__(self, x: jax.Array, y: jax.Array) -> jax.Array:
    if y.shape[-1] != self.num_labels:
      raise ValueError(f'energy: y has {y.shape[-1]} labels, the energy was built for {self.num_labels}')
    b = activation(self.act)(MLP(self.feature_hidden, self.feature_dim, self.act)(x))
    local = jnp.sum(y * nn.Dense(self.num_labels, use_bias=False, name='W')(b), axis=-1)
    interactions = nn.softplus(nn.Dense(self.global_hidden, use_bias=False, name='M')(y))
    global_ = nn.Dense(1, use_bias=False, name='v')(interactions)[..., 0]
    return local + global_
