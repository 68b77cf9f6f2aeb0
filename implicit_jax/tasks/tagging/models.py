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

Global energies (InfNet+, Tu et al. 2020, Eq. 8-9; ``global_energy``), added to Eq. 7 and trained with it, never
pretrained: tag language models (LSTMs over the relaxed tag vectors, with start and end symbols) whose negative
log-likelihood of y is an energy term,

    E_TLM(y) = - sum_{t=1}^{T+1} log(y_t^T ybar_t),   ybar_t = h(y_0, ..., y_{t-1})

* ``a``: the forward TLM (Tu & Gimpel 2018);
* ``b``: forward and backward TLMs;
* ``c``: those two plus ``gamma`` times forward and backward TLMs that also read the words x_0..x_{t-1}.
"""

from typing import Callable

import flax.linen as nn
import jax
import jax.numpy as jnp

from implicit_jax import batch as batch_lib

ENCODERS = ('conv', 'bilstm')
GLOBAL_ENERGIES = ('none', 'a', 'b', 'c')
_TINY = 1e-12  # log(y_t^T ybar_t) of a relaxed y that gives the predicted tag no mass


def reverse_within(v: jax.Array, lengths: jax.Array) -> jax.Array:
  """``v`` [N, T, ...] with each row's first ``lengths[n]`` positions in reverse order (padding left in place)."""
  t = jnp.arange(v.shape[1])
  idx = jnp.where(t[None, :] < lengths[:, None], lengths[:, None] - 1 - t[None, :], t[None, :])   # [N, T]
  return jnp.take_along_axis(v, idx.reshape(idx.shape + (1,) * (v.ndim - 2)), axis=1)


class TagLanguageModel(nn.Module):
  """``E_TLM(y)`` [N] of tag vectors ``y`` [N, T, C] with ``lengths`` [N]: an LSTM reads the start symbol and
  y_1..y_T (and, with ``words`` [N, T, D], the word vectors x_0..x_{t-1}, x_0 a zero vector) and predicts each next
  tag and the end symbol; the energy is minus the log-likelihood of y, summed over the L + 1 predictions. The
  backward TLM is this module on the sequences reversed within their lengths."""

  num_tags: int
  hidden: int = 64

  @nn.compact
  def __call__(self, y: jax.Array, lengths: jax.Array, words: jax.Array | None = None) -> jax.Array:
    n, length, c = y.shape
    real = (jnp.arange(length)[None, :] < lengths[:, None]).astype(y.dtype)                   # [N, T]
    y = y * real[..., None]
    start = jnp.zeros((n, 1, c + 1), y.dtype).at[:, :, c].set(1.0)
    inputs = jnp.concatenate([start, jnp.pad(y, ((0, 0), (0, 0), (0, 1)))], axis=1)       # [N, T + 1, C + 1]
    if words is not None:
      shifted = jnp.concatenate([jnp.zeros_like(words[:, :1]), words], axis=1)             # x_0 = 0, x_1..x_T
      inputs = jnp.concatenate([inputs, shifted * jnp.pad(real, ((0, 0), (1, 0)), constant_values=1.0)[..., None]],
                               axis=-1)
    cell = nn.OptimizedLSTMCell(self.hidden, param_dtype=inputs.dtype, name='cell')  # carry in the inputs' dtype
    h = nn.RNN(cell)(inputs, seq_lengths=lengths + 1)
    log_p = jax.nn.log_softmax(nn.Dense(c + 1, name='next')(h), axis=-1)                    # tags + end symbol
    end = jax.nn.one_hot(lengths, length + 1, dtype=y.dtype)                                 # [N, T + 1]
    target = jnp.concatenate([jnp.pad(y, ((0, 0), (0, 1), (0, 0))), end[..., None]], axis=-1)  # [N, T + 1, C + 1]
    likelihood = jnp.sum(target * jnp.exp(log_p), axis=-1)                                   # y_t^T ybar_t
    counted = (jnp.arange(length + 1)[None, :] <= lengths[:, None]).astype(y.dtype)
    return -jnp.sum(counted * jnp.log(jnp.maximum(likelihood, _TINY)), axis=-1)


def word_table_name(frozen: bool, name: str) -> str:
  """A word table's module name: with ``methods.FROZEN``'s suffix when it is fixed, so that no optimiser's weight
  decay moves it (``methods.make_optimizer``); the stop_gradient on its lookup keeps every gradient off it."""
  from implicit_jax.methods import FROZEN  # pylint: disable=import-outside-toplevel
  return name + FROZEN if frozen else name


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
  freeze_embeddings: bool = False         # the word table stays at its initial value (fixed pretrained vectors)

  @nn.compact
  def __call__(self, batch: dict, train: bool = False, key: jax.Array | None = None) -> jax.Array:
    """``key``: dropout from this key instead of the 'dropout' stream (implies training). The energy's encoder
    takes its key as data, one per training step, so that E stays a deterministic function within the step."""
    mask = batch['mask'][..., None].astype(jnp.float32)
    keys = (None, None) if key is None else tuple(jax.random.split(key))
    train = train or key is not None
    init = {} if self.embedding_init is None else {'embedding_init': self.embedding_init}
    h = nn.Embed(self.vocab_size, self.embedding_dim, name=word_table_name(self.freeze_embeddings, 'embed'),
                 **init)(batch['x'])
    if self.freeze_embeddings:
      h = jax.lax.stop_gradient(h)  # no gradient reaches the table; its name keeps AdamW's decay off it
    if self.features:
      h = jnp.concatenate([h] + [nn.Embed(n, self.feature_dim, name=f'embed_{name}')(batch[name])
                                 for name, n in self.features], axis=-1)
    h = h * mask
    if self.dropout:
      h = nn.Dropout(self.dropout, deterministic=not train)(h, rng=keys[0])
    if self.kind == 'conv':
      h = nn.relu(nn.Conv(self.hidden, (self.kernel_size,), padding='SAME', name='conv')(h))
    else:
      lengths = jnp.sum(batch['mask'] > 0, axis=-1).astype(jnp.int32)
      # The LSTM's zero carry takes the cell's param_dtype: tie it to the inputs', so that parameters cast to
      # another precision (float64 gradient checks) run through the scan with a carry of their own type.
      rnn = nn.Bidirectional(nn.RNN(nn.OptimizedLSTMCell(self.hidden, param_dtype=h.dtype)),
                             nn.RNN(nn.OptimizedLSTMCell(self.hidden, param_dtype=h.dtype)), name='bilstm')
      h = rnn(h, seq_lengths=lengths)
    if self.dropout:
      h = nn.Dropout(self.dropout, deterministic=not train)(h, rng=keys[1])
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
  global_energy: str = 'none'   # GLOBAL_ENERGIES (module doc)
  gamma: float = 1.0            # 'c': weight of the word-augmented TLMs
  tlm_hidden: int = 64          # LSTM units of each TLM

  def setup(self):
    self.U = nn.Dense(self.num_tags, use_bias=False)
    self.W = self.param('W', nn.initializers.normal(0.1), (self.num_tags, self.num_tags))
    if self.global_energy not in GLOBAL_ENERGIES:
      raise ValueError(f'model.global_energy: unknown {self.global_energy!r}; choose one of {GLOBAL_ENERGIES}')
    names = {'none': (), 'a': ('forward',), 'b': ('forward', 'backward'),
             'c': ('forward', 'backward', 'words_forward', 'words_backward')}[self.global_energy]
    self.tlms = {name: TagLanguageModel(self.num_tags, self.tlm_hidden, name=f'tlm_{name}') for name in names}
    if self.global_energy == 'c':
      init = {} if self.encoder.embedding_init is None else {'embedding_init': self.encoder.embedding_init}
      embed = nn.Embed(self.encoder.vocab_size, self.encoder.embedding_dim, **init)
      setattr(self, word_table_name(self.encoder.freeze_embeddings, 'tlm_embed'), embed)  # setup names it so

  def global_term(self, batch: dict, y: jax.Array) -> jax.Array:
    """The TLM energies of y [..., B, T, C], [..., B]."""
    lead, (b, length, c) = y.shape[:-3], y.shape[-3:]
    flat = y.reshape((-1, length, c))
    copies = flat.shape[0] // b
    lengths = jnp.tile(jnp.sum(batch['mask'] > 0, axis=-1).astype(jnp.int32), copies)
    words = None
    if self.global_energy == 'c':
      frozen = self.encoder.freeze_embeddings
      words = getattr(self, word_table_name(frozen, 'tlm_embed'))(batch['x'])
      words = jnp.tile(jax.lax.stop_gradient(words) if frozen else words, (copies, 1, 1))
    total = 0.0
    for name, tlm in self.tlms.items():
      backward = name.endswith('backward')
      ys = reverse_within(flat, lengths) if backward else flat
      ws = None
      if name.startswith('words'):
        ws = reverse_within(words, lengths) if backward else words
      total = total + (self.gamma if name.startswith('words') else 1.0) * tlm(ys, lengths, ws)
    return total.reshape(lead + (b,))

  def potentials(self, batch: dict) -> tuple[jax.Array, jax.Array]:
    # Training batches carry ``energy_dropout``, a key as data (methods.with_energy_key); evaluation batches do
    # not, and an encoder built without dropout ignores it.
    key = batch.get('energy_dropout') if self.encoder.dropout else None
    return self.U(self.encoder(batch, key=None if key is None else batch_lib.from_data(key))), self.W

  def __call__(self, batch: dict, y: jax.Array) -> jax.Array:
    if y.shape[-1] != self.num_tags:
      raise ValueError(f'energy: y has {y.shape[-1]} tags, the energy was built for {self.num_tags}')
    mask = batch['mask'].astype(y.dtype)
    unary_scores, w = self.potentials(batch)                                                    # [B, T, C]
    unary = jnp.sum(jnp.sum(y * unary_scores, axis=-1) * mask, axis=-1)
    pairs = jnp.einsum('...tc,cd,...td->...t', y[..., :-1, :], w, y[..., 1:, :])               # [..., B, T - 1]
    pairwise = jnp.sum(pairs * (mask[:, 1:] * mask[:, :-1]), axis=-1)
    if self.global_energy == 'none':
      return unary + pairwise
    return unary + pairwise + self.global_term(batch, y)
