"""Sequence-labeling networks: a token encoder, the per-token softmax inference net and the paper's Eq. 7 energy.

Every module takes the batch dict and reads ``x`` [B, T] (word ids, 0 = padding) and ``mask`` [B, T] (1 on real
tokens). Encoders map them to features ``b(x, t)`` [B, T, H]:

* ``conv``: word embeddings, then a 1-D convolution over ``kernel_size`` neighbours (cheap to compile: the CPU
  default of the tests);
* ``bilstm``: word embeddings, then one bidirectional LSTM layer (``flax.linen.RNN`` with the sequence lengths,
  so padding never enters the recurrence), as InfNet+ uses.

Energy (Shankar & Piratla, Eq. 7; lower is better, the signs of U and W are learned)::

    E(x, y) = sum_t sum_j y_tj U_j^T b(x, t)  +  sum_t y_{t-1}^T W y_t
              unary term                        pairwise (tag transition) term

summed over the real tokens and the pairs of real neighbours.
"""

from typing import Callable

import flax.linen as nn
import jax
import jax.numpy as jnp

ENCODERS = ('conv', 'bilstm')


class Encoder(nn.Module):
  """``(batch, train) -> b(x, t)`` [B, T, H]: embeddings and a ``conv`` or ``bilstm`` layer, zero on padding."""

  vocab_size: int
  kind: str = 'conv'
  embedding_dim: int = 32
  hidden: int = 64
  kernel_size: int = 3
  dropout: float = 0.0
  embedding_init: Callable | None = None  # the word table's initial value (pretrained vectors), else Flax's
  features: tuple = ()                    # NER+: ((batch key, ids), ...) embedded and concatenated to the words
  feature_dim: int = 16                   # width of each feature's embedding

  @nn.compact
  def __call__(self, batch: dict, train: bool = False) -> jax.Array:
    mask = batch['mask'][..., None].astype(jnp.float32)
    init = {} if self.embedding_init is None else {'embedding_init': self.embedding_init}
    h = nn.Embed(self.vocab_size, self.embedding_dim, name='embed', **init)(batch['x'])
    if self.features:
      h = jnp.concatenate([h] + [nn.Embed(n, self.feature_dim, name=f'embed_{key}')(batch[key])
                                 for key, n in self.features], axis=-1)
    h = h * mask
    if self.dropout:
      h = nn.Dropout(self.dropout, deterministic=not train)(h)
    if self.kind == 'conv':
      h = nn.relu(nn.Conv(self.hidden, (self.kernel_size,), padding='SAME', name='conv')(h))
    else:
      lengths = jnp.sum(batch['mask'] > 0, axis=-1).astype(jnp.int32)
      rnn = nn.Bidirectional(nn.RNN(nn.OptimizedLSTMCell(self.hidden)), nn.RNN(nn.OptimizedLSTMCell(self.hidden)),
                             name='bilstm')
      h = rnn(h, seq_lengths=lengths)
    if self.dropout:
      h = nn.Dropout(self.dropout, deterministic=not train)(h)
    return h * mask


class TaggerNet(nn.Module):
  """``A_theta(x)``: encoder features, then a linear map to ``num_tags`` logits per token; the relaxed output is
  the softmax per token. ``heads > 1``: that many linear heads on the shared encoder."""

  encoder: Encoder
  num_tags: int
  heads: int = 1

  @nn.compact
  def __call__(self, batch: dict, train: bool = False):
    h = self.encoder(batch, train)
    logits = tuple(nn.Dense(self.num_tags, name=f'head_{i}')(h) for i in range(self.heads))
    return logits[0] if self.heads == 1 else logits


class SequenceEnergy(nn.Module):
  """Eq. 7. ``__call__(batch, y [..., B, T, C]) -> [..., B]``; leading axes of y (negatives) share one b(x).
  ``potentials(batch)`` gives its two terms' scores, ``(U b(x, t) [B, T, C], W [C, C])``, for exact chain
  inference (the CRF method)."""

  encoder: Encoder
  num_tags: int

  def setup(self):
    self.U = nn.Dense(self.num_tags, use_bias=False)
    self.W = self.param('W', nn.initializers.normal(0.1), (self.num_tags, self.num_tags))

  def potentials(self, batch: dict) -> tuple[jax.Array, jax.Array]:
    return self.U(self.encoder(batch)), self.W

  def __call__(self, batch: dict, y: jax.Array) -> jax.Array:
    if y.shape[-1] != self.num_tags:
      raise ValueError(f'energy: y has {y.shape[-1]} tags, the energy was built for {self.num_tags}')
    mask = batch['mask'].astype(y.dtype)
    unary_scores, w = self.potentials(batch)                                                    # [B, T, C]
    unary = jnp.sum(jnp.sum(y * unary_scores, axis=-1) * mask, axis=-1)
    pairs = jnp.einsum('...tc,cd,...td->...t', y[..., :-1, :], w, y[..., 1:, :])               # [..., B, T - 1]
    pairwise = jnp.sum(pairs * (mask[:, 1:] * mask[:, :-1]), axis=-1)
    return unary + pairwise
