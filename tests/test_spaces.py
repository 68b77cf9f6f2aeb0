"""Output spaces on cases worked by hand: costs, scores, log-probabilities, samplers, projections and decoding,
for independent Bernoulli units, for per-token categorical outputs with padding and for one class per example."""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from implicit_jax import spaces
from implicit_jax.spaces.binary import Binary
from implicit_jax.spaces.categorical import Categorical, Multiclass, project_simplex

A = np.testing.assert_allclose
BINARY = Binary((3,))


def test_binary_scores_and_costs_by_hand():
  y_bar, y = jnp.array([1.0, 0.5, 0.0]), jnp.array([1.0, 1.0, 0.0])
  A(BINARY.soft_f1(y_bar, y), 2 * 1.5 / 3.5, rtol=1e-6)              # min sums to 1.5, max to 2
  A(BINARY.soft_f1(jnp.zeros(3), jnp.zeros(3)), 1.0)                  # both empty: exactly right
  A(BINARY.soft_f1(jnp.array([1.0, 0, 1]), jnp.array([1.0, 1, 0])), 0.5)  # binary: F1 = 2*1/(2+2)
  two = Binary((2,))
  A(two.cost('l1')(jnp.array([0.2, 0.5]), jnp.array([0.0, 1.0])), 0.7, rtol=1e-6)
  A(two.cost('hamming')(jnp.array([0.2, 0.5]), jnp.array([0.0, 1.0])), 0.35, rtol=1e-6)
  A(BINARY.cost('f1')(y_bar, y), 1 - 3 / 3.5, rtol=1e-6)
  A(BINARY.soft_iou(y_bar, y), 1.5 / 2, rtol=1e-6)                    # SEAL Eq. 10: sum min / sum max
  A(BINARY.soft_iou(jnp.zeros(3), jnp.zeros(3)), 1.0)                 # both empty: exactly right
  A(BINARY.cost('iou')(jnp.array([1.0, 0, 1]), jnp.array([1.0, 1, 0])), 1 - 1 / 3)  # binary: 1 - |n| / |u|
  image = Binary((2, 2))  # reductions run over every event axis
  A(image.cost('l1')(jnp.ones((5, 2, 2)), jnp.zeros((5, 2, 2))), np.full(5, 4.0))
  A(image.score('iou')(jnp.array([[[1.0, 1.0], [0.0, 0.0]]]), jnp.array([[[1.0, 0.0], [1.0, 0.0]]])), [1 / 3])
  with pytest.raises(ValueError, match=r"implicit.cost: unknown cost 'dice' for the binary output space"):
    BINARY.cost('dice', 'implicit.cost')


def test_binary_local_loss_and_log_prob():
  logits, y = jnp.array([[0.3, -1.0, 2.0]]), jnp.array([[1.0, 0.0, 1.0]])
  p = jax.nn.sigmoid(logits)
  expected = np.sum(np.log(np.where(y > 0, p, 1 - p)))
  A(BINARY.log_prob(logits, y), [expected], rtol=1e-6)
  A(BINARY.local_loss(logits, y), -expected, rtol=1e-6)                 # MBCE: summed over labels
  A(BINARY.local_loss(logits, y), jnp.sum(optax.sigmoid_binary_cross_entropy(logits, y)), rtol=1e-6)


def test_categorical_costs_scores_and_log_prob_by_hand():
  space = Categorical(3)
  y = jnp.array([[[1.0, 0, 0], [0, 1, 0], [0, 0, 0]]])                  # two real tokens, one pad
  y_bar = jnp.array([[[0.5, 0.5, 0], [0, 1, 0], [0.2, 0.3, 0.5]]])
  mask = jnp.array([[1.0, 1.0, 0.0]])
  A(space.cost('l1')(y_bar, y, mask), [0.5], rtol=1e-6)                 # token 1 half wrong; the pad is ignored
  A(space.cost('hamming')(y_bar, y, mask), [0.25], rtol=1e-6)           # over the 2 real tokens
  A(space.score('accuracy')(y_bar, y, mask), [0.75], rtol=1e-6)         # (0.5 + 1) / 2
  A(space.score('accuracy')(y, y, mask), [1.0])
  logits = jnp.log(jnp.array([[[0.5, 0.25, 0.25], [0.1, 0.8, 0.1], [0.3, 0.3, 0.4]]]))
  A(space.log_prob(logits, y, mask), [np.log(0.5) + np.log(0.8)], rtol=1e-6)
  A(space.local_loss(logits, y, mask), -(np.log(0.5) + np.log(0.8)), rtol=1e-6)
  np.testing.assert_array_equal(space.gold(np.array([[2, 0, -1]])), [[[0, 0, 1], [1, 0, 0], [0, 0, 0]]])
  np.testing.assert_array_equal(space.decode(y_bar), [[0, 1, 2]])
  assert space.shape({'mask': np.ones((4, 7))}) == (4, 7, 3)


def test_multiclass_is_categorical_at_one_position_without_a_mask():
  """Every member of ``Multiclass`` on [B, C] equals ``Categorical``'s on the same outputs as one-token sentences
  ([B, 1, C], mask 1), and the batch needs no mask."""
  one, seq = Multiclass(3), Categorical(3)
  y = jnp.array([[1.0, 0, 0], [0, 0, 1]])
  y_bar = jnp.array([[0.5, 0.5, 0], [0.2, 0.3, 0.5]])
  logits = jnp.log(jnp.array([[0.5, 0.25, 0.25], [0.1, 0.1, 0.8]]))
  mask = jnp.ones((2, 1))
  A(one.cost('l1')(y_bar, y), [0.5, 0.5], rtol=1e-6)                   # 1/2 sum_c |y_bar_c - y_c|
  A(one.score('accuracy')(y_bar, y), [0.5, 0.5], rtol=1e-6)            # the gold class's probability
  A(one.log_prob(logits, y), [np.log(0.5), np.log(0.8)], rtol=1e-6)
  for name in ('l1', 'hamming'):
    A(one.cost(name)(y_bar, y), seq.cost(name)(y_bar[:, None], y[:, None], mask), rtol=1e-6)
  A(one.score('accuracy')(y_bar, y), seq.score('accuracy')(y_bar[:, None], y[:, None], mask), rtol=1e-6)
  A(one.local_loss(logits, y), seq.local_loss(logits[:, None], y[:, None], mask), rtol=1e-6)
  negatives = one.cost('l1')(jnp.stack([y_bar, y]), y)                 # K negatives in front: [K, B]
  A(negatives, [[0.5, 0.5], [0.0, 0.0]], rtol=1e-6)
  assert one.shape({'x': np.zeros((4, 64))}) == (4, 3)                  # no mask needed
  np.testing.assert_array_equal(one.gold(np.array([2, 0, -1])), [[0, 0, 1], [1, 0, 0], [0, 0, 0]])
  np.testing.assert_array_equal(one.decode(y_bar), [0, 2])
  with pytest.raises(ValueError, match=r"gbi.init: unknown initialisation 'zeros' for the multiclass output space"):
    one.initial('zeros', (2, 3))
  start = one.initial('half', (2, 3))
  for rule in ('projected', 'mirror'):
    A(jnp.sum(one.gbi_step(one.gbi_start(start, rule), y_bar, 0.5, rule), -1), 1.0, rtol=1e-5)


@pytest.mark.parametrize('space,shape', [(BINARY, (1, 3)), (Categorical(3), (1, 2, 3)), (Multiclass(3), (2, 3))])
def test_samplers_are_differentiable_and_feasible(space, shape):
  logits = jax.random.normal(jax.random.key(3), shape)
  for sampler in spaces.SAMPLERS:
    noise = space.noise(jax.random.key(0), sampler, 4, logits.shape)
    f = jax.jit(lambda l: space.negatives(l, noise, sampler, 0.5, 0.1, True))  # pylint: disable=cell-var-from-loop
    y = f(logits)
    assert y.shape == (5, *shape) and jnp.all((y >= -1e-6) & (y <= 1 + 1e-6))
    if isinstance(space, Categorical):
      A(jnp.sum(y, axis=-1), 1.0, rtol=1e-5)                       # on the simplex
    A(y[0], space.relax(logits))                                   # the mean prediction comes first
    assert jnp.abs(jax.jit(jax.grad(lambda l: jnp.sum(f(l)[1:] * jnp.arange(shape[-1]))))(logits)).sum() > 0, sampler
  hard = space.negatives(logits, space.noise(jax.random.key(1), 'straight_through', 8, logits.shape),
                         'straight_through', 1.0, 0.0, False)
  assert set(np.unique(np.asarray(hard)).tolist()) <= {0.0, 1.0}  # the forward pass is a real sample


def test_straight_through_categorical_samples_follow_the_distribution():
  space = Categorical(3)
  logits = jnp.log(jnp.array([[[0.6, 0.3, 0.1]]]))
  hard = space.samples(logits, space.noise(jax.random.key(0), 'straight_through', 20000, logits.shape),
                       'straight_through', 1.0, 0.0)
  A(np.mean(np.asarray(hard), axis=0)[0, 0], [0.6, 0.3, 0.1], atol=0.015)


def test_unknown_sampler_and_init_named():
  with pytest.raises(ValueError, match="negatives.sampler: unknown sampler 'bernoulli'"):
    BINARY.noise(jax.random.key(0), 'bernoulli', 1, (1, 2))
  with pytest.raises(ValueError, match=r"gbi.init: unknown initialisation 'zeros' for the categorical output space"):
    Categorical(3).initial('zeros', (1, 2, 3))


def test_simplex_projection_matches_its_definition():
  """The projection is the closest point of the simplex: compared with a fine search on 3 classes."""
  rng = np.random.default_rng(0)
  grid = np.stack(np.meshgrid(*[np.linspace(0, 1, 101)] * 2), -1).reshape(-1, 2)
  grid = grid[grid.sum(1) <= 1]
  simplex = np.concatenate([grid, 1 - grid.sum(1, keepdims=True)], axis=1)
  for v in rng.normal(size=(20, 3)) * 2:
    p = np.asarray(project_simplex(jnp.asarray(v, jnp.float32)))
    A(p.sum(), 1.0, rtol=1e-6)
    assert np.all(p >= 0)
    best = simplex[np.argmin(np.sum((simplex - v) ** 2, axis=1))]
    assert np.sum((p - v) ** 2) <= np.sum((best - v) ** 2) + 1e-6
  A(project_simplex(jnp.array([0.2, 0.3, 0.5])), [0.2, 0.3, 0.5], rtol=1e-6)  # a point of the simplex stays


def test_categorical_gbi_steps_stay_on_the_simplex():
  space = Categorical(4)
  y = space.gbi_start(space.initial('half', (2, 3, 4)), 'mirror')
  grad = jax.random.normal(jax.random.key(0), (2, 3, 4))
  for rule in ('projected', 'mirror'):
    z = space.gbi_step(space.gbi_start(y, rule), grad, 0.7, rule)
    A(jnp.sum(z, axis=-1), 1.0, rtol=1e-5)
    assert jnp.all(z >= 0)
    # both move mass towards the classes with the most negative gradient
    chex.assert_trees_all_equal(jnp.argmax(z, -1), jnp.argmin(grad, -1))


def test_label_error_names_shapes_and_values_a_space_cannot_hold():
  """What the engine checks of each split before training (engine/checks.py): shapes, and ids or values outside the
  space; the documented 'no gold' (a negative id, an unlabeled row) is not an error."""
  mask = np.ones((2, 3), np.float32)
  tags = Categorical(4)
  assert tags.label_error({'y': np.array([[0, 3, -1], [1, 2, 0]]), 'mask': mask}) is None
  assert tags.label_error({'y': np.array([[0, 4, 1], [1, 2, 5]]), 'mask': mask}) == (
      'y holds values outside the 4 classes of the categorical output space: 4, 5 (first at index (0, 1)); store '
      'class ids 0..3 (negative: no gold)')
  one_hot = tags.label_error({'y': np.eye(4)[np.zeros((2, 3), int)], 'mask': mask})
  assert one_hot.startswith('y has shape (2, 3, 4); the categorical output space wants (2, 3), class ids (one-hot')
  assert 'not whole numbers' in tags.label_error({'y': np.full((2, 3), 0.5), 'mask': mask})
  assert 'needs a mask' in tags.label_error({'y': np.zeros((2, 3), int)})
  assert Multiclass(4).label_error({'y': np.array([3, -1]), 'x': np.zeros((2, 5))}) is None
  labels = Binary((3,))
  assert labels.label_error({'y': np.array([[0, 1, 1]])}) is None
  assert labels.label_error({'y': np.array([[0, 2, 1]])}).startswith('y holds values outside [0, 1], the binary '
                                                                     'output space: 2 (first at index (0, 1))')
  assert labels.label_error({'y': np.full((1, 3), -1), 'labeled': np.zeros(1)}) is None  # an unlabeled row
  assert labels.label_error({'y': np.zeros((1, 4))}).startswith('y has shape (1, 4); the binary output space '
                                                                'wants (1, 3)')
