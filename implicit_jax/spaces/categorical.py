"""Categorical outputs. ``Categorical``: one distribution per position over ``num_classes`` classes, with a padding
mask over positions: y in the product of simplices, shape ``[B, T, C]`` (the tags of a sentence). ``Multiclass``:
one distribution per example, no positions and no mask: y in one simplex, shape ``[B, C]`` (a digit's class);
everything below holds for it with a single position. The relaxed output is
``softmax(logits)``; the stored labels are class ids ``[N, T]`` (negative on padding), carried in batches as
one-hot rows (``gold``). Reductions run over the real positions (``mask`` [B, T]) and the classes.

Costs (zero at the gold output):
  * ``l1``: ``1/2 sum_t sum_c |y_bar_tc - y_tc|``, the number of wrong positions on one-hot outputs (the Hamming
    distance), its expectation-like relaxation otherwise;
  * ``hamming``: the same divided by the number of real positions, in [0, 1].
Scores in [0, 1]:
  * ``accuracy``: ``1/T sum_t sum_c min(y_bar_tc, y_tc)``: the probability given to the gold class, averaged over
    positions (token accuracy on one-hot outputs); 1 for an empty output.

Negatives:
  * ``concrete``: Gumbel-softmax, ``softmax((logits + Gumbel noise) / temperature)``;
  * ``straight_through``: a one-hot sample (Gumbel-max) forward, the probabilities' gradient backward;
  * ``gaussian``: ``p + scale * N(0, 1)`` projected back onto each simplex.

GBI on the simplices: ``projected`` is the Euclidean projection of ``y - eta * dE/dy`` (Duchi et al. 2008);
``mirror`` is exponentiated gradient, ``y <- softmax(log y - eta * dE/dy)``, the entropic mirror descent on the
simplex. Starting points: ``half`` (the centre of each simplex, uniform over the classes) or ``given``.
"""

import jax
import jax.numpy as jnp
import numpy as np

from implicit_jax.spaces import OutputSpace, check_rule, outside

_EDGE = 1e-6  # exponentiated gradient needs log y finite: it starts this far inside the simplex


def project_simplex(v: jax.Array) -> jax.Array:
  """Euclidean projection of each row (last axis) onto the probability simplex (Duchi et al. 2008)."""
  c = v.shape[-1]
  u = -jnp.sort(-v, axis=-1)                                         # descending
  css = jnp.cumsum(u, axis=-1) - 1.0
  k = jnp.arange(1, c + 1, dtype=v.dtype)
  rho = jnp.sum(u - css / k > 0, axis=-1, keepdims=True)             # >= 1 always
  tau = jnp.take_along_axis(css, rho - 1, axis=-1) / rho.astype(v.dtype)
  return jnp.maximum(v - tau, 0.0)


class Categorical(OutputSpace):
  name = 'categorical'
  inits = ('half', 'given')

  def __init__(self, num_classes: int):
    self.units = int(num_classes)
    self.costs = {'l1': self.l1_cost, 'hamming': self.hamming_cost}
    self.scores = {'accuracy': self.soft_accuracy}

  @staticmethod
  def _positions(v, mask):
    """``v [..., B, T]`` summed over the real positions."""
    return jnp.sum(v if mask is None else v * mask, axis=-1)

  @staticmethod
  def _count(mask, like):
    return jnp.float32(like.shape[-2]) if mask is None else jnp.maximum(jnp.sum(mask, axis=-1), 1.0)

  def shape(self, batch):
    return (*batch['mask'].shape, self.units)

  def gold(self, y):
    y = np.asarray(y)
    return (y[..., None] == np.arange(self.units)).astype(np.float32)  # a negative id (padding): all zeros

  def label_shape(self, arrays: dict) -> tuple[int, ...] | None:
    """The stored labels' shape for a split: one class id per position of ``mask`` (None: there is no mask)."""
    return np.shape(arrays['mask']) if 'mask' in arrays else None

  def label_error(self, arrays):
    y = np.asarray(arrays['y'])
    want = self.label_shape(arrays)
    if want is None:
      return (f'y: the {self.name} output space needs a mask [N, T] of real positions beside it (one class per '
              'example: categorical.Multiclass)')
    if y.shape != want:
      one_hot = ' (one-hot rows? store np.argmax(y, axis=-1))' if y.shape == (*want, self.units) else ''
      return f'y has shape {y.shape}; the {self.name} output space wants {want}, class ids{one_hot}'
    ids = f'class ids 0..{self.units - 1}'
    if not np.issubdtype(y.dtype, np.number) or (np.issubdtype(y.dtype, np.inexact) and np.any(y != np.round(y))):
      return f'y holds {y.dtype} values that are not whole numbers; the {self.name} output space wants {ids}'
    bad = y >= self.units  # a negative id is documented: no gold (padding, unlabeled)
    if bad.any():
      return (f'y holds values outside the {self.units} classes of the {self.name} output space: {outside(bad, y)}; '
              f'store {ids} (negative: no gold)')
    return None

  def relax(self, logits):
    return jax.nn.softmax(logits, axis=-1)

  def logits_of(self, y):
    return jnp.log(jnp.maximum(y, 1e-6))

  def log_prob(self, logits, y, mask=None):
    return self._positions(jnp.sum(y * jax.nn.log_softmax(logits, axis=-1), axis=-1), mask)

  def samples(self, logits, noise, sampler, temperature, scale):
    if sampler == 'gaussian':
      return project_simplex(self.relax(logits) + scale * noise)
    gumbel = -jnp.log(-jnp.log(noise))
    if sampler == 'concrete':
      return jax.nn.softmax((logits + gumbel) / temperature, axis=-1)
    p = self.relax(logits)
    hard = jax.nn.one_hot(jnp.argmax(logits + gumbel, axis=-1), self.units, dtype=p.dtype)
    return hard + (p - jax.lax.stop_gradient(p))  # exactly the hard sample forward

  # Costs and scores -----------------------------------------------------------------------------------------

  def l1_cost(self, y_bar, y, mask=None):
    return 0.5 * self._positions(jnp.sum(jnp.abs(y_bar - y), axis=-1), mask)

  def hamming_cost(self, y_bar, y, mask=None):
    return self.l1_cost(y_bar, y, mask) / self._count(mask, y)

  def soft_accuracy(self, y_bar, y, mask=None):
    return self._positions(jnp.sum(jnp.minimum(y_bar, y), axis=-1), mask) / self._count(mask, y)

  # GBI ------------------------------------------------------------------------------------------------------

  def _initial(self, init, shape):
    return jnp.full(shape, 1.0 / self.units)

  def gbi_start(self, y, rule):
    check_rule(rule)
    y = project_simplex(y)
    if rule == 'mirror':
      y = jnp.maximum(y, _EDGE)
      y = y / jnp.sum(y, axis=-1, keepdims=True)
    return y

  def gbi_step(self, y, grad, step_size, rule):
    if rule == 'projected':
      return project_simplex(y - step_size * grad)
    y_new = jax.nn.softmax(jnp.log(y) - step_size * grad, axis=-1)
    y_new = jnp.maximum(y_new, _EDGE)  # float32 softmax underflows to exactly 0
    return y_new / jnp.sum(y_new, axis=-1, keepdims=True)

  def decode(self, y, threshold=0.5):
    del threshold
    return np.argmax(np.asarray(y), axis=-1)


class Multiclass(Categorical):
  """One class of ``num_classes`` per example (multi-class classification): y in one simplex, shape ``[B, C]``.

  The stored labels are class ids ``[N]`` (negative: no gold, all zeros after ``gold``); ``shape`` reads the batch
  size from ``batch['x']``, as ``Binary`` does. Costs and scores are ``Categorical``'s at a single position:
  ``l1`` and ``hamming`` are ``1/2 sum_c |y_bar_c - y_c|`` (0/1 error on one-hot outputs), ``accuracy`` is the
  probability given to the gold class; a batch's ``mask``, if any, is not read (there is nothing to pad).
  """

  name = 'multiclass'

  @staticmethod
  def _positions(v, mask):
    del mask
    return v  # already one value per example: no position axis to reduce

  @staticmethod
  def _count(mask, like):
    del mask, like
    return jnp.float32(1.0)

  def shape(self, batch):
    return (len(batch['x']), self.units)

  def label_shape(self, arrays):
    return (len(arrays['y']),)
