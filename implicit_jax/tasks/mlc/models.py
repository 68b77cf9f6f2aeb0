"""The multi-label networks: an MLP inference net ``A_theta(x)`` and the SPEN energy ``E_phi(x, y)``.

Energy (SPEN, Belanger & McCallum 2016; the paper's MLC energy), lower is better::

    E(x, y) = y^T W b(x)  +  v^T softplus(M y)
              local term      global (label-interaction) term

``b`` is a feature MLP, y lies in [0, 1]^L (relaxed) or {0, 1}^L. The signs of W and v are learned, so the
lower-is-better convention loses no generality; it fixes what "low energy" means for every loss in ``losses.py``.
Both modules take the batch dict and read its features ``x`` [B, D].
"""

from typing import Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp

from implicit_jax.networks import MLP, activation


class MLPInferenceNet(nn.Module):
  """``A_theta(x)``: an MLP giving one logit per label; the relaxed output is ``sigmoid(logits)``.

  ``heads > 1``: that many linear heads on one shared hidden trunk (InfNet+'s shared parameterisation).
  With ``dropout > 0``, ``train=True`` needs a ``'dropout'`` rng. ``linear_skip``: each head also gets a linear
  map of the input itself (a "wide" part), so the model contains binary-relevance logistic regression; on a
  small file whose labels are nearly linear in the features the MLP alone needs more rows to find that.
  """

  num_labels: int
  hidden: Sequence[int] = (150, 150)
  act: str = 'relu'
  dropout: float = 0.0
  heads: int = 1
  linear_skip: bool = False

  @nn.compact
  def __call__(self, batch: dict, train: bool = False):
    x = batch['x']
    if self.heads == 1:
      logits = MLP(self.hidden, self.num_labels, self.act, self.dropout)(x, train)
      return logits + nn.Dense(self.num_labels, name='linear')(x) if self.linear_skip else logits
    h = MLP(self.hidden, None, self.act, self.dropout, name='trunk')(x, train)
    return tuple(nn.Dense(self.num_labels, name=f'head_{i}')(h)
                 + (nn.Dense(self.num_labels, name=f'linear_{i}')(x) if self.linear_skip else 0.0)
                 for i in range(self.heads))


class MLCEnergy(nn.Module):
  """SPEN multi-label energy. ``__call__(batch, y [..., B, L]) -> energies [..., B]``.

  Leading axes of y (e.g. K negatives) share one evaluation of the feature network b(x). ``local=True`` (y unused):
  the local term's logits instead, ``-W b(x)`` [B, L].
  """

  num_labels: int
  feature_hidden: Sequence[int] = (150,)
  feature_dim: int = 150
  global_hidden: int = 16
  act: str = 'softplus'

  # ``__call__(batch, None, local=True)``: the local term's per-label logits ``-W b(x)`` [B, L] (low energy = label
  # on), SPEN's independent-label classifier; it reads the feature network and W only (spen.pretrain_epochs).
  has_local_logits = True

  @nn.compact
  def __call__(self, batch: dict, y, local: bool = False) -> jax.Array:
    if not local and y.shape[-1] != self.num_labels:
      raise ValueError(f'energy: y has {y.shape[-1]} labels, the energy was built for {self.num_labels}')
    b = activation(self.act)(MLP(self.feature_hidden, self.feature_dim, self.act)(batch['x']))
    per_label = nn.Dense(self.num_labels, use_bias=False, name='W')(b)
    if local:
      return -per_label
    local_term = jnp.sum(y * per_label, axis=-1)
    interactions = nn.softplus(nn.Dense(self.global_hidden, use_bias=False, name='M')(y))
    global_ = nn.Dense(1, use_bias=False, name='v')(interactions)[..., 0]
    return local_term + global_
