"""SEAL (static, dynamic) and the NCE-trained energy with GBI: losses by hand, what each update may touch, phases."""

import functools
import math
import types

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import pytest

from implicit_jax import methods, tasks
from implicit_jax.engine import data
from implicit_jax.methods import make_optimizer, seal
from implicit_jax.spaces.binary import Binary
from tests.conftest import load_config

A = np.testing.assert_allclose
ENERGY_LOSSES = ('margin', 'regression', 'regression_s', 'nce')
# The tiny steps take milliseconds; compiling them takes seconds. XLA's cheapest backend settings cut that.
_FAST = {'xla_backend_optimization_level': 0, 'xla_llvm_disable_expensive_passes': True}


class LinearEnergy:
  """``E(x, y) = y . phi`` (x unused): energies that can be worked by hand."""

  @staticmethod
  def apply(phi, batch, y):
    del batch
    return jnp.sum(y * phi, axis=-1)


PHI = jnp.array([1.0, -2.0])
Y = jnp.array([[1.0, 0.0]])
X = {'x': jnp.zeros((1, 3)), 'y': Y}           # the batch
TASK = types.SimpleNamespace(space=Binary((2,)), score='f1')  # what the losses read of a task


def ce(z, s):
  """Cross-entropy of target s against sigmoid(z), by hand."""
  return s * math.log1p(math.exp(-z)) + (1 - s) * math.log1p(math.exp(z))


def _config(method='seal_dynamic', energy_loss='nce', **seal_fields):
  config = load_config('tiny')
  config.method = method
  config.seal.energy_loss = energy_loss
  config.seal.pretrain_epochs = 1      # tiny: 2 epochs of 128 // 16 = 8 steps
  config.seal.num_samples = config.nce_gbi.num_samples = 2
  config.seal.energy_weight, config.seal.ce_weight = 2.0, 0.5    # unequal: a swap of lambda1 and lambda2 shows
  for k, v in seal_fields.items():
    config.seal[k] = v
  return config


def _loss(name, **overrides):
  config = _config(energy_loss=name)
  for path, v in overrides.items():
    section, field = path.split('.')
    config[section][field] = v
  return seal.sample_energy_loss(TASK, LinearEnergy, name, config.seal)


# ------------------------------------------------------------------------------------------- losses by hand


def test_margin_loss_by_hand():
  # p = (0.5, 0.5): E(p) = 0.5 - 1 = -0.5, E(y) = 1, l1 cost 0.5 + 0.5 = 1, scaled by 2.
  loss = _loss('margin', **{'seal.cost': 'l1', 'seal.cost_scale': 2.0})
  A(loss(PHI, X, jnp.zeros((1, 2)), None), 2.0 + 0.5 + 1.0, rtol=1e-6)


def test_regression_loss_by_hand():
  # Samples p (E -0.5, soft F1 2 * 0.5 / (0.5 + 1.5) = 0.5) and the gold y (E 1, score 1); target logit is -E.
  loss = _loss('regression')
  A(loss(PHI, X, jnp.zeros((1, 2)), None), (ce(0.5, 0.5) + ce(-1.0, 1.0)) / 2, rtol=1e-6)


def test_regression_s_loss_by_hand():
  # scale 0.1: noise (1, -1) gives (0.6, 0.4): E = 0.6 - 0.8 = -0.2, soft F1 2 * 0.6 / (0.6 + 1.4) = 0.6;
  # noise (6, -6) gives (1.1, -0.1), clipped to (1, 0) = y: E 1, score 1. Plus p itself and the gold y.
  loss = _loss('regression_s', **{'seal.noise_scale': 0.1})
  noise = jnp.array([[[1.0, -1.0]], [[6.0, -6.0]]])
  want = (ce(0.5, 0.5) + ce(0.2, 0.6) + ce(-1.0, 1.0) + ce(-1.0, 1.0)) / 4
  A(loss(PHI, X, jnp.zeros((1, 2)), noise), want, rtol=1e-6)


def test_regression_s_with_noise_on_the_logits_by_hand():
  # logits 0: noise (ln 3 / 0.5, 0) at scale 0.5 gives sigmoid(ln 3, 0) = (0.75, 0.5): E = 0.75 - 1 = -0.25, soft
  # F1 2 * 0.75 / (1.25 + 1) = 2/3. No clipping: a logit pushed far stays inside (0, 1), below 1.
  loss = _loss('regression_s', **{'seal.noise_scale': 0.5, 'seal.noise_on': 'logits'})
  noise = jnp.array([[[2 * math.log(3.0), 0.0]]])
  want = (ce(0.5, 0.5) + ce(0.25, 2 / 3) + ce(-1.0, 1.0)) / 3
  A(loss(PHI, X, jnp.zeros((1, 2)), noise), want, rtol=1e-6)
  on_output = _loss('regression_s', **{'seal.noise_scale': 0.5})(PHI, X, jnp.zeros((1, 2)), noise)
  assert abs(float(on_output) - want) > 1e-3  # the two perturbations differ


def test_nce_loss_by_hand():
  # p = (0.75, 0.5). Uniform noise (0.3, 0.7) -> sample (1, 0) = y; (0.9, 0.1) -> (0, 1).
  # s = -E - log P_N: gold and sample 1: -1 - log(0.75 * 0.5); sample 2: 2 - log(0.25 * 0.5).
  loss = _loss('nce')
  noise = jnp.array([[[0.3, 0.7]], [[0.9, 0.1]]])
  s_gold, s_2 = -1 - math.log(0.375), 2 - math.log(0.125)
  want = math.log(2 * math.exp(s_gold) + math.exp(s_2)) - s_gold
  A(loss(PHI, X, jnp.array([[math.log(3.0), 0.0]]), noise), want, rtol=1e-6)


def test_task_net_loss_by_hand():
  # Example 1: p = (0.5, 0.5), y = (1, 0): E = -0.5, MBCE = 2 log 2.
  # Example 2: p = (0.75, 0.25), y = (0, 1): E = 0.75 - 0.5 = 0.25, MBCE = 2 log 4.
  logits = jnp.array([[0.0, 0.0], [math.log(3.0), -math.log(3.0)]])
  y = jnp.array([[1.0, 0.0], [0.0, 1.0]])
  got = seal.task_net_loss(TASK.space, LinearEnergy, PHI, logits, {'x': jnp.zeros((2, 3)), 'y': y}, 2.0, 0.5)
  A(got, 2.0 * (-0.5 + 0.25) / 2 + 0.5 * (2 * math.log(2) + 2 * math.log(4)) / 2, rtol=1e-6)


# ----------------------------------------------------------------------------------------- tiny-config runs


@functools.cache
def _compiled(method_name, energy_loss):
  """``(method, initial state, batch, jitted train_step)`` on ``_config``, built once per case for the file."""
  config = _config(method_name, energy_loss)
  task = tasks.get_task(config)
  method = methods.build(task, config)
  batch = jax.device_put(next(data.train_batches(task, 16, np.random.default_rng(0))))
  return method, _jit(method.init)(jax.random.key(0)), batch, _jit(method.train_step), task


def _jit(fn, **kwargs):
  return jax.jit(fn, compiler_options=_FAST if jax.default_backend() == 'cpu' else None, **kwargs)


def _trees_equal(a, b):
  return all(jax.tree.leaves(jax.tree.map(lambda u, v: bool(jnp.array_equal(u, v)), a, b)))


@pytest.mark.parametrize('name', ENERGY_LOSSES)
def test_dynamic_energy_loss_treats_the_task_net_outputs_as_constants(name):
  config = _config('seal_dynamic', name)
  method, state, batch, _, task = _compiled('seal_dynamic', name)
  energy, net = method.modules['energy'], method.modules['infnet']
  objective = seal.samples_objective(task, energy, net, name, config.seal)
  theta, phi = state.params['theta'], state.params['phi']
  loss_of = lambda theta, phi: objective({'theta': theta, 'phi': phi}, batch, jax.random.key(3))(phi)
  g_theta, g_phi = _jit(jax.grad(loss_of, argnums=(0, 1)))(theta, phi)
  assert all(np.all(np.asarray(g) == 0) for g in jax.tree.leaves(g_theta))
  assert any(np.any(np.asarray(g) != 0) for g in jax.tree.leaves(g_phi))  # the loss is live in phi


def test_dynamic_step_is_an_energy_update_then_a_task_update_that_leaves_the_energy():
  name = 'regression'  # no sampling noise (and no dropout in tiny): the step does not depend on the rng split
  config = _config('seal_dynamic', name)
  method, state, batch, step, task = _compiled('seal_dynamic', name)
  energy, net = method.modules['energy'], method.modules['infnet']
  energy_update = _jit(seal.energy_update(seal.samples_objective(task, energy, net, name, config.seal),
                                          make_optimizer(config.optimizer, 'optimizer')))
  task_update = _jit(seal.task_update(task.space, energy, net,
                                      make_optimizer(config.seal.task_optimizer, 'seal.task_optimizer')))
  rng = jax.random.key(5)
  after_energy, _ = energy_update(state, batch, rng)
  assert _trees_equal(after_energy.params['theta'], state.params['theta'])
  assert not _trees_equal(after_energy.params['phi'], state.params['phi'])
  after_task, _ = task_update(after_energy, batch, rng, config.seal.energy_weight, config.seal.ce_weight)
  assert _trees_equal(after_task.params['phi'], after_energy.params['phi'])
  assert not _trees_equal(after_task.params['theta'], after_energy.params['theta'])
  full, metrics = step(state, batch, rng)
  for role in ('phi', 'theta'):
    jax.tree.map(lambda u, v: A(u, v, rtol=1e-5, atol=1e-7), full.params[role], after_task.params[role])
  assert int(full.step) == 1 and set(metrics) == {'loss', 'loss_task'}


def test_static_energy_trains_during_pretraining_only_and_the_task_net_on_bce_alone_meanwhile():
  method, state, batch, step, _ = _compiled('seal_static', 'regression_s')   # pretraining = steps 0..7
  rng = jax.random.key(1)
  at = lambda k, s=state: s.replace(step=jnp.asarray(k, jnp.int32))
  last_pretrain, _ = step(at(7), batch, rng)
  assert not _trees_equal(last_pretrain.params['phi'], state.params['phi'])
  frozen, metrics = step(at(8), batch, rng)
  assert _trees_equal(frozen.params['phi'], state.params['phi'])
  assert not _trees_equal(frozen.params['theta'], state.params['theta'])
  assert float(metrics['loss']) == 0.0 and np.isfinite(float(metrics['loss_task']))
  # A different energy: the same task-net step while pretraining, a different one after.
  other = state.replace(params=dict(state.params, phi=jax.tree.map(lambda p: 3.0 * p + 0.1, state.params['phi'])))
  same_a, _ = step(at(0), batch, rng)
  same_b, _ = step(at(0, other), batch, rng)
  jax.tree.map(lambda u, v: A(u, v, rtol=1e-6, atol=1e-8), same_a.params['theta'], same_b.params['theta'])
  diff_a, _ = step(at(8), batch, rng)
  diff_b, _ = step(at(8, other), batch, rng)
  assert not _trees_equal(diff_a.params['theta'], diff_b.params['theta'])


CASES = [('nce_gbi', 'nce')] + [(m, e) for m in ('seal_static', 'seal_dynamic') for e in ENERGY_LOSSES]


# One case in the fast suite, the others with the end-to-end ones (each compiles a whole train step).
@pytest.mark.parametrize('method_name,energy_loss', [
    case if case == ('seal_dynamic', 'regression') else pytest.param(*case, marks=pytest.mark.e2e) for case in CASES])
def test_trains_a_few_steps_without_nan_and_predicts_in_the_box(method_name, energy_loss):
  method, state, batch, step, _ = _compiled(method_name, energy_loss)
  initial = state
  for i in range(3):
    state, metrics = step(state, batch, jax.random.key(i))
    assert all(np.isfinite(float(v)) for v in metrics.values()), metrics
  assert 'loss' in metrics and ('loss_task' in metrics) == (method_name != 'nce_gbi')
  assert int(state.step) == 3
  for role in state.params:  # every parameter set trains (static: pretraining, both move)
    assert not _trees_equal(state.params[role], initial.params[role]), role
  probs = np.asarray(_jit(method.predict)(state.params, {'x': batch['x']}))
  assert probs.shape == batch['y'].shape
  assert np.all(np.isfinite(probs)) and np.all((probs >= 0) & (probs <= 1))


# ------------------------------------------------------------------------------------------ configuration


def _raises(config, match):
  with pytest.raises(ValueError, match=match):
    methods.build(tasks.get_task(config), config)


@pytest.mark.parametrize('method_name', ['seal_static', 'seal_dynamic'])
def test_bad_config_values_name_the_field(method_name):
  _raises(_config(method_name, 'hinge'),
          r"seal.energy_loss: unknown energy loss 'hinge'; choose one of "
          r"\('margin', 'regression', 'regression_s', 'nce'\)")
  _raises(_config(method_name, 'nce', energy_weight=-1.0), r'seal.energy_weight must be a number >= 0, got -1.0')
  _raises(_config(method_name, 'nce', ce_weight=-0.5), r'seal.ce_weight must be a number >= 0')
  _raises(_config(method_name, 'nce', energy_weight=0.0, ce_weight=0.0), r'seal.energy_weight and seal.ce_weight')
  for name in ('nce', 'regression_s'):
    config = _config(method_name, name)
    config.seal.num_samples = 0
    _raises(config, r'seal.num_samples must be a positive integer, got 0')
  config = _config(method_name, 'regression_s')
  config.seal.noise_scale = 0.0
  _raises(config, r'seal.noise_scale must be > 0')
  config = _config(method_name, 'regression_s', noise_on='probs')
  _raises(config, r"seal.noise_on: unknown 'probs'; choose one of \('output', 'logits'\)")
  config = _config(method_name, 'nce')
  config.seal.task_optimizer.clip_norm = -1.0
  _raises(config, r'seal.task_optimizer.clip_norm must be a number >= 0 \(0 = no clipping\), got -1.0')
  config = _config(method_name, 'margin')
  config.seal.cost = 'zero_one'
  _raises(config, r"seal.cost: unknown cost 'zero_one'")


def test_clip_norm_clips_the_global_gradient_norm_first_and_zero_leaves_the_optimiser_as_it_was():
  params = {'a': jnp.array([1.0, 2.0]), 'b': jnp.array(3.0)}
  grads = {'a': jnp.array([3.0, 0.0]), 'b': jnp.array(4.0)}  # global norm 5
  for clip, scale in ((0.0, 1.0), (10.0, 1.0), (2.5, 0.5)):
    opt = make_optimizer(ml_collections.ConfigDict({'name': 'sgd', 'learning_rate': 0.1, 'clip_norm': clip}), 'o')
    updates, _ = opt.update(grads, opt.init(params), params)
    A(updates['a'], -0.1 * scale * grads['a'], rtol=1e-6)
    A(updates['b'], -0.1 * scale * grads['b'], rtol=1e-6)
  # clip_norm 0 (and a section recorded before the field): the plain optimiser's state, as those records hold
  adam = lambda **clip: make_optimizer(ml_collections.ConfigDict({'name': 'adam', 'learning_rate': 0.1, **clip}), 'o')
  structure = lambda opt: jax.tree_util.tree_structure(opt.init(params))
  assert structure(adam()) == structure(adam(clip_norm=0.0)) != structure(adam(clip_norm=1.0))


def test_bad_pretrain_epochs_and_nce_gbi_samples_name_the_field():
  for bad in (2, 5, -1):  # tiny trains 2 epochs: pretraining must leave at least one for the task net
    _raises(_config('seal_static', 'nce', pretrain_epochs=bad),
            rf'seal.pretrain_epochs must be an integer in \[0, num_epochs=2\), got {bad}')
  config = _config('nce_gbi')
  config.nce_gbi.num_samples = 0
  _raises(config, r'nce_gbi.num_samples must be a positive integer, got 0')
