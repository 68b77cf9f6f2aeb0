"""Independent Bernoulli units: y in [0, 1]^event_shape (the labels of multi-label classification, the pixels of
a binary mask). The relaxed output is ``sigmoid(logits)``; an example's output is every unit of its event shape.

Costs ``Delta(y_bar, y)`` (name -> function, zero at the gold output):
  * ``l1``: ``sum |y_bar - y|``, the Hamming distance on relaxed outputs;
  * ``hamming``: the same averaged over units, in [0, 1];
  * ``f1``: ``1 - soft F1``;
  * ``iou``: ``1 - soft IoU`` (the segmentation task loss).
Scores ``s(y_bar, y)`` in [0, 1]:
  * ``f1``: SEAL's soft F1, ``2 sum min(y_bar, y) / (sum min + sum max)``, 1 when both are empty; example F1 on
    binary inputs (``sum min = TP``, ``sum max = TP + FP + FN``);
  * ``iou``: soft IoU (DVN, SEAL Eq. 10), ``sum min(y_bar, y) / sum max(y_bar, y)``, 1 when both are empty;
    intersection over union on binary inputs.

Negatives (``samples``), each a reparameterisation of the Bernoulli units:
  * ``concrete``: binary Concrete / relaxed Bernoulli, ``sigmoid((logits + logistic noise) / temperature)``;
  * ``straight_through``: a hard Bernoulli sample forward, the probability's gradient backward;
  * ``gaussian``: ``clip(p + scale * N(0, 1), 0, 1)``, SEAL's regression-s perturbations.

GBI on the box: ``projected`` clips ``y - eta * dE/dy`` to [0, 1]; ``mirror`` is entropic mirror descent with the
binary-entropy map per unit, ``logit(y) <- logit(y) - eta * dE/dy``: y stays strictly inside and moves
multiplicatively near the faces. Starting points: ``zeros``, ``half`` (0.5 everywhere) or ``given``.
"""

import jax
import jax.numpy as jnp
import numpy as np
import optax

from implicit_jax.spaces import OutputSpace, check_rule, labeled, outside

_EDGE = 1e-4  # mirror descent starts this far inside the box: logit(0) is -inf


class Binary(OutputSpace):
  """``event_shape``: the shape of one example's output, e.g. ``(L,)`` for L labels or ``(height, width)``."""

  name = 'binary'
  inits = ('zeros', 'half', 'given')

  def __init__(self, event_shape: tuple[int, ...]):
    self.event_shape = tuple(int(d) for d in event_shape)
    self.units = self.event_shape[-1]
    self._axes = tuple(range(-len(self.event_shape), 0))
    self.costs = {'l1': self.l1_cost, 'hamming': self.hamming_cost, 'f1': self.f1_cost, 'iou': self.iou_cost}
    self.scores = {'f1': self.soft_f1, 'iou': self.soft_iou}

  def _sum(self, v, mask=None):
    return jnp.sum(v if mask is None else v * mask, axis=self._axes)

  def shape(self, batch):
    return (len(batch['x']), *self.event_shape)

  def gold(self, y):
    return y

  def label_error(self, arrays):
    y = np.asarray(arrays['y'])
    want = (len(y), *self.event_shape)
    if y.shape != want:
      return f'y has shape {y.shape}; the {self.name} output space wants {want}, one value in [0, 1] per unit'
    if not (np.issubdtype(y.dtype, np.number) or y.dtype == bool):
      return f'y holds {y.dtype} values; the {self.name} output space wants numbers in [0, 1]'
    bad = ((y < 0) | (y > 1)) & labeled(arrays, y.shape)
    if bad.any():
      return (f'y holds values outside [0, 1], the {self.name} output space: {outside(bad, y)}; store 0/1 (or '
              'probabilities) per unit')
    return None

  def relax(self, logits):
    return jax.nn.sigmoid(logits)

  def local_loss(self, logits, y, mask=None):
    """Multi-label binary cross-entropy (MBCE), summed over units, averaged over examples."""
    return jnp.mean(self._sum(optax.sigmoid_binary_cross_entropy(logits, y), mask))

  def log_prob(self, logits, y, mask=None):
    """``log prod_j p_j^y_j (1 - p_j)^(1 - y_j)``, ``p = sigmoid(logits)``, relaxed y too."""
    return -self._sum(optax.sigmoid_binary_cross_entropy(logits, y), mask)

  def logits_of(self, y):
    y = jnp.clip(y, 1e-6, 1.0 - 1e-6)
    return jnp.log(y) - jnp.log1p(-y)

  def samples(self, logits, noise, sampler, temperature, scale):
    p = jax.nn.sigmoid(logits)
    if sampler == 'concrete':
      logistic = jnp.log(noise) - jnp.log1p(-noise)
      return jax.nn.sigmoid((logits + logistic) / temperature)
    if sampler == 'straight_through':
      hard = (noise < p).astype(p.dtype)
      return hard + (p - jax.lax.stop_gradient(p))  # exactly the hard sample forward
    return jnp.clip(p + scale * noise, 0.0, 1.0)

  # Costs and scores -----------------------------------------------------------------------------------------

  def soft_f1(self, y_bar, y, mask=None):
    lo = self._sum(jnp.minimum(y_bar, y), mask)
    hi = self._sum(jnp.maximum(y_bar, y), mask)
    denom = lo + hi
    return jnp.where(denom > 0, 2.0 * lo / jnp.where(denom > 0, denom, 1.0), 1.0)

  def soft_iou(self, y_bar, y, mask=None):
    lo = self._sum(jnp.minimum(y_bar, y), mask)
    hi = self._sum(jnp.maximum(y_bar, y), mask)
    return jnp.where(hi > 0, lo / jnp.where(hi > 0, hi, 1.0), 1.0)

  def l1_cost(self, y_bar, y, mask=None):
    return self._sum(jnp.abs(y_bar - y), mask)

  def hamming_cost(self, y_bar, y, mask=None):
    if mask is None:
      return jnp.mean(jnp.abs(y_bar - y), axis=self._axes)
    return self._sum(jnp.abs(y_bar - y), mask) / jnp.maximum(self._sum(jnp.ones_like(y), mask), 1.0)

  def f1_cost(self, y_bar, y, mask=None):
    return 1.0 - self.soft_f1(y_bar, y, mask)

  def iou_cost(self, y_bar, y, mask=None):
    return 1.0 - self.soft_iou(y_bar, y, mask)

  # GBI ------------------------------------------------------------------------------------------------------

  def _initial(self, init, shape):
    return jnp.full(shape, 0.0 if init == 'zeros' else 0.5)

  def gbi_start(self, y, rule):
    check_rule(rule)
    return jnp.clip(y, _EDGE, 1.0 - _EDGE) if rule == 'mirror' else jnp.clip(y, 0.0, 1.0)

  def gbi_step(self, y, grad, step_size, rule):
    if rule == 'projected':
      return jnp.clip(y - step_size * grad, 0.0, 1.0)
    y_new = jax.nn.sigmoid(jnp.log(y) - jnp.log1p(-y) - step_size * grad)
    return jnp.clip(y_new, _EDGE, 1.0 - _EDGE)  # float32 sigmoid saturates to exactly 0 or 1

  def decode(self, y, threshold=0.5):
    return np.asarray(y) >= threshold
