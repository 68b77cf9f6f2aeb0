"""InfNet and InfNet+: the three losses on a hand-worked case, what each parameterization lets gradients reach,
training on the tiny config, InfNet's fine-tuning phase, config validation."""

import functools

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from implicit_jax import methods, tasks
from implicit_jax.engine import checkpoints, data, train
from implicit_jax.methods.infnet import InferenceNetPair, make_objectives
from implicit_jax.spaces.binary import Binary
from implicit_jax.tasks.mlc.models import MLPInferenceNet
from tests.conftest import load_config

# A hand-checkable problem: B = 2, L = 2, a linear energy E(x, y) = w . y with w = (1, -2), L1 cost.
#   gold y:  (1, 0) -> E = 1;   (0, 1) -> E = -2
#   F logits 0        -> y_F = (0.5, 0.5),  E = -0.5, Delta = 1 for both
#   A logits +-log 3  -> y_A = (0.75, 0.25), E = 0.25
#   h_F = Delta - E(y_F) + E(y) = (2.5, -0.5);   h_A = E(y) - E(y_A) = (0.75, -2.25)
#   BCE(F) = 2 log 2 per example; BCE(A) = 2 log(4/3), 2 log 4 -> mean log(16/3)
Y = jnp.array([[1.0, 0.0], [0.0, 1.0]])
X = {'x': jnp.zeros((2, 3)), 'y': Y}  # the batch: inputs and gold outputs
SPACE = Binary((2,))
PHI = {'w': jnp.array([1.0, -2.0])}
F_LOGITS = jnp.zeros((2, 2))
A_LOGITS = jnp.tile(jnp.log(jnp.array([3.0, 1 / 3])), (2, 1))
CE, LAM = 0.5, 2.0


def linear_energy(phi, batch, y):
  del batch
  return jnp.sum(phi['w'] * y, axis=-1)


def _objectives(truncate, ce=CE, lam=LAM):
  return make_objectives(SPACE, linear_energy, SPACE.cost('l1'), 1.0, ce, lam, truncate)


def test_energy_loss_is_the_margin_plus_lambda_perceptron_with_the_nets_outputs_held_constant():
  obj = _objectives(truncate=False)  # the energy's hinge is kept whatever infnet.truncate says
  y_f, y_a = jax.nn.sigmoid(F_LOGITS), jax.nn.sigmoid(A_LOGITS)
  # ssvm = mean [h_F]_+ = (2.5 + 0) / 2; perceptron = mean [h_A]_+ = (0.75 + 0) / 2
  np.testing.assert_allclose(obj.energy(PHI, X, y_f), 1.25, rtol=1e-6)
  np.testing.assert_allclose(obj.energy(PHI, X, y_f, y_a), 1.25 + LAM * 0.375, rtol=1e-6)
  # d/dw: example 1 is active in both terms, (y - y_F) / 2 + LAM (y - y_A) / 2 = (0.25, -0.25) + (0.25, -0.25)
  grad = jax.grad(obj.energy)(PHI, X, y_f, y_a)
  np.testing.assert_allclose(grad['w'], [0.5, -0.5], rtol=1e-6)
  # No gradient reaches the nets' outputs through the energy's loss.
  chex.assert_trees_all_equal(jax.grad(obj.energy, argnums=2)(PHI, X, y_f, y_a), jnp.zeros_like(y_f))


@pytest.mark.parametrize('truncate,margin', [(False, (2.5 - 0.5) / 2), (True, (2.5 + 0.0) / 2)])
def test_cost_augmented_loss_maximises_the_margin_with_or_without_the_hinge(truncate, margin):
  loss = _objectives(truncate).cost_augmented(PHI, X, F_LOGITS)
  np.testing.assert_allclose(loss, -margin + CE * 2 * np.log(2), rtol=1e-6)


@pytest.mark.parametrize('truncate,violation', [(False, (0.75 - 2.25) / 2), (True, (0.75 + 0.0) / 2)])
def test_test_time_loss_minimises_the_energy_with_or_without_the_hinge(truncate, violation):
  obj = _objectives(truncate)
  np.testing.assert_allclose(obj.test_time(PHI, X, A_LOGITS), -LAM * violation + CE * np.log(16 / 3),
                             rtol=1e-6)
  # InfNet's fine-tuning loss: weight 1, never truncated.
  np.testing.assert_allclose(obj.test_time(PHI, X, A_LOGITS, weight=1.0, trunc=False),
                             -(0.75 - 2.25) / 2 + CE * np.log(16 / 3), rtol=1e-6)


def test_truncation_only_matters_where_the_margin_is_negative():
  # Drop example 2 (negative h_F and h_A): with both margins positive the hinge is the identity.
  for fn, logits in ((lambda o: o.cost_augmented, F_LOGITS), (lambda o: o.test_time, A_LOGITS)):
    first = {k: v[:1] for k, v in X.items()}
    on, off = (fn(_objectives(t))(PHI, first, logits[:1]) for t in (True, False))
    np.testing.assert_allclose(on, off, rtol=1e-6)
    on, off = (fn(_objectives(t))(PHI, X, logits) for t in (True, False))
    assert abs(float(on) - float(off)) > 0.1


@functools.cache
def _grad_reach(parameterization):
  """For each net's loss, the top-level parameter groups its gradient reaches (non-zero)."""
  net = lambda heads=1: MLPInferenceNet(num_labels=2, hidden=(4,), heads=heads)
  nets = InferenceNetPair(net(2 if parameterization == 'shared' else 1), parameterization, SPACE.relax, 2,
                          net() if parameterization == 'separated' else None)
  batch = {'x': jax.random.normal(jax.random.key(0), (2, 3)), 'y': Y}
  psi = nets.init(jax.random.key(1), batch, Y)
  obj = _objectives(truncate=False, ce=1.0, lam=1.0)
  loss_f = lambda psi: obj.cost_augmented(PHI, batch, nets.apply(psi, batch, Y)[0])
  loss_a = lambda psi: obj.test_time(PHI, batch, nets.apply(psi, batch, Y)[1])
  grad_f, grad_a = jax.jit(lambda psi: (jax.grad(loss_f)(psi)['params'], jax.grad(loss_a)(psi)['params']))(psi)
  # The parameter groups by role: A's net, F's net or head, the shared trunk.
  role = {'separated': {'net': 'A', 'f_net': 'F'}, 'stacked': {'net': 'A', 'F': 'F'},
          'shared': {'trunk': 'trunk', 'head_0': 'F', 'head_1': 'A'}}[parameterization]
  groups = lambda tree: tree['net'] if parameterization == 'shared' else tree
  reach = lambda grad: {role[k] for k, g in groups(grad).items()
                        if any(np.any(np.asarray(v) != 0) for v in jax.tree.leaves(g))}
  return {role[k] for k in groups(psi['params'])}, reach(grad_f), reach(grad_a), grad_f


@pytest.mark.parametrize('parameterization,groups,from_f,from_a', [
    ('separated', {'F', 'A'}, {'F'}, {'A'}),
    ('shared', {'trunk', 'F', 'A'}, {'trunk', 'F'}, {'trunk', 'A'}),
    ('stacked', {'F', 'A'}, {'F'}, {'A'}),
])
def test_each_parameterization_routes_the_gradients_of_the_two_losses(parameterization, groups, from_f, from_a):
  params, reach_f, reach_a, _ = _grad_reach(parameterization)
  assert (params, reach_f, reach_a) == (groups, from_f, from_a)


def test_stacked_blocks_the_gradient_of_F_loss_at_A_output():
  _, _, _, grad_f = _grad_reach('stacked')
  # F(x, y) = W_q [A(x); y] + b_q reads A's output, yet not one of A's parameters gets F's gradient ...
  for leaf in jax.tree.leaves(grad_f['net']):
    assert np.all(np.asarray(leaf) == 0)
  # ... while F's affine map, W_q of shape [2L, L], gets it on both halves of its input.
  w_q = np.asarray(grad_f['F']['kernel'])
  assert w_q.shape == (4, 2) and np.any(w_q[:2] != 0) and np.any(w_q[2:] != 0)


@pytest.fixture(scope='module')
def tiny_task():
  task = tasks.get_task(load_config('tiny'))
  return task, next(data.train_batches(task, 16, np.random.default_rng(0)))


_COMPILED = {}


def _method(task, name, parameterization):
  """``(config, method, init, jitted step)`` on the tiny config, built and compiled once per module."""
  if (name, parameterization) not in _COMPILED:
    config = load_config('tiny')
    config.method = name
    config.num_epochs = 10  # 8 steps an epoch: InfNet fine-tunes from step 56, after the 30 steps trained below
    config.infnet.update(parameterization=parameterization, inference_steps=2, finetune_epochs=3)
    method = methods.build(task, config)
    # The steps run a few times on 16 rows: halve the compile time (most of this file's) with cheaper codegen.
    fast = {'xla_backend_optimization_level': 0} if jax.default_backend() == 'cpu' else None
    _COMPILED[name, parameterization] = (config, method, method.init,
                                         jax.jit(method.train_step, compiler_options=fast))
  return _COMPILED[name, parameterization]


def _changed(a, b):
  return any(np.any(np.asarray(u) != np.asarray(v)) for u, v in zip(jax.tree.leaves(a), jax.tree.leaves(b)))


@pytest.mark.parametrize('name,parameterization', [('infnet', 'separated')] + [
    pytest.param('infnet_plus', p, marks=pytest.mark.e2e) for p in ('separated', 'shared', 'stacked')])
def test_trains_on_the_tiny_config(tiny_task, name, parameterization):
  task, batch = tiny_task
  _, method, init, step = _method(task, name, parameterization)
  state0 = state = init(jax.random.key(0))
  history = []
  for i in range(30):
    state, metrics = step(state, batch, jax.random.key(i))
    assert set(metrics) >= {'loss', 'loss_F', 'loss_A'}
    assert all(np.isfinite(float(v)) for v in metrics.values())
    history.append(float(metrics['loss']))
  y = method.predict(state.params, batch)
  assert y.shape == batch['y'].shape and np.all((np.asarray(y) >= 0) & (np.asarray(y) <= 1))
  # The energy learns to separate the gold outputs from the nets' outputs, and the nets move too.
  assert history[0] > 0 and np.mean(history[-5:]) < 0.5 * history[0]
  nets = 'nets' if name == 'infnet_plus' else 'F'
  assert _changed(state0.params[nets], state.params[nets])
  assert int(state.step) == 30


def test_infnet_finetuning_freezes_the_energy_and_trains_A_from_F(tiny_task):
  task, batch = tiny_task
  config, method, init, step = _method(task, 'infnet', 'separated')
  steps_per_epoch = len(task.splits['train']['y']) // config.batch_size
  switch = steps_per_epoch * (config.num_epochs - config.infnet.finetune_epochs)
  assert switch == 56
  state = init(jax.random.key(0))
  assert int(state.opt_state['finetune_from']) == switch  # fixed with the run, kept in its state

  # The last joint step: the energy and F move, A is F.
  before = state.replace(step=jnp.asarray(switch - 1, jnp.int32))
  after, _ = step(before, batch, jax.random.key(1))
  assert _changed(before.params['phi'], after.params['phi']) and _changed(before.params['F'], after.params['F'])
  chex.assert_trees_all_equal(after.params['A'], after.params['F'])

  # Fine-tuning: the energy and F are frozen, A moves away from F on E(x, A(x)) + CE.
  tuned, metrics = step(after, batch, jax.random.key(2))
  chex.assert_trees_all_equal(tuned.params['phi'], after.params['phi'])
  chex.assert_trees_all_equal(tuned.params['F'], after.params['F'])
  assert _changed(after.params['A'], tuned.params['A'])
  assert int(tuned.step) == switch + 1 and np.isfinite(float(metrics['loss_A']))
  # predict uses A, which now differs from F.
  assert not np.allclose(method.predict(tuned.params, batch),
                         jax.nn.sigmoid(method.modules['infnet'].apply(tuned.params['F'], batch)))


@pytest.mark.e2e
def test_infnet_resumed_with_more_epochs_keeps_its_phases(tmp_path):
  """A finished run (2 epochs, fine-tuning in the last) extended to 3: the third epoch fine-tunes A further with
  the energy frozen, instead of moving the phase boundary and overwriting the fine-tuned A with F."""
  config = load_config('tiny')
  config.method, config.infnet.finetune_epochs = 'infnet', 1
  train.train_and_evaluate(config, str(tmp_path))

  def latest():
    c = checkpoints.load_config(str(tmp_path))
    method = methods.build(tasks.get_task(c), c)
    ckpt = checkpoints.Checkpointer(str(tmp_path))
    try:
      return ckpt.restore(jax.eval_shape(method.init, jax.random.key(0)))[0]
    finally:
      ckpt.close()

  two = latest()
  config.num_epochs = 3
  train.train_and_evaluate(config, str(tmp_path))
  three = latest()
  assert int(three.step) == 24 and int(three.opt_state['finetune_from']) == 8
  chex.assert_trees_all_equal(three.params['phi'], two.params['phi'])  # the energy stayed frozen
  chex.assert_trees_all_equal(three.params['F'], two.params['F'])
  assert _changed(two.params['A'], three.params['A'])                  # A went on fine-tuning
  assert _changed(three.params['A'], three.params['F'])


@pytest.mark.parametrize('name,overrides,message', [
    ('infnet_plus', {'infnet.parameterization': 'tied'},
     r"infnet.parameterization: unknown parameterization 'tied'; choose one of "
     r"\('separated', 'shared', 'stacked'\)"),
    ('infnet_plus', {'infnet.inference_steps': 0}, r'infnet.inference_steps must be a positive integer, got 0'),
    ('infnet', {'infnet.inference_steps': 1.5}, r'infnet.inference_steps must be a positive integer, got 1.5'),
    ('infnet', {'infnet.finetune_epochs': 2}, r'infnet.finetune_epochs must be an integer in \[0, num_epochs=2\)'),
    ('infnet', {'infnet.finetune_epochs': -1}, r'infnet.finetune_epochs must be an integer in \[0, num_epochs=2\)'),
    ('infnet_plus', {'infnet.perceptron_weight': -1.0}, r'infnet.perceptron_weight must be >= 0, got -1.0'),
    ('infnet', {'infnet.ce_weight': -0.5}, r'infnet.ce_weight must be >= 0, got -0.5'),
    ('infnet', {'infnet.truncate': 'yes'}, r"infnet.truncate must be True or False, got 'yes'"),
    ('infnet_plus', {'infnet.cost': 'l2'}, r"infnet.cost: unknown cost 'l2'"),
    ('infnet_plus', {'infnet.inference_optimizer.name': 'rmsprop'},
     r"infnet.inference_optimizer.name: unknown optimizer 'rmsprop'"),
])
def test_bad_config_names_the_field(tiny_task, name, overrides, message):
  task, _ = tiny_task
  config = load_config('tiny')  # num_epochs = 2
  config.method = name
  config.infnet.finetune_epochs = 1
  for path, value in overrides.items():
    section, *rest = path.split('.')
    target = config[section]
    for part in rest[:-1]:
      target = target[part]
    with target.ignore_type():
      target[rest[-1]] = value
  with pytest.raises(ValueError, match=message):
    methods.build(task, config)
