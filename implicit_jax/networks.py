"""Building blocks shared by the tasks' networks: activations by name and an MLP."""

from typing import Callable, Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp

ACTIVATIONS: dict[str, Callable[[jax.Array], jax.Array]] = {
    'relu': nn.relu, 'softplus': nn.softplus, 'tanh': jnp.tanh, 'gelu': nn.gelu,
}


def activation(name: str) -> Callable[[jax.Array], jax.Array]:
  if name not in ACTIVATIONS:
    raise ValueError(f'model.activation: unknown activation {name!r}; choose one of {sorted(ACTIVATIONS)}')
  return ACTIVATIONS[name]


class MLP(nn.Module):
  """Dense layers ``hidden`` with ``act`` (and dropout when training) after each, then a linear layer to ``out``
  units (``out=None``: no output layer, the hidden features themselves, e.g. a trunk shared by two heads)."""

  hidden: Sequence[int]
  out: int | None
  act: str = 'relu'
  dropout: float = 0.0

  @nn.compact
  def __call__(self, x: jax.Array, train: bool = False) -> jax.Array:
    act = activation(self.act)
    for width in self.hidden:
      x = act(nn.Dense(width)(x))
      if self.dropout:
        x = nn.Dropout(self.dropout, deterministic=not train)(x)
    return x if self.out is None else nn.Dense(self.out)(x)
