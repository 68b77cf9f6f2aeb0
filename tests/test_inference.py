"""Gradient-based inference: reaches the constrained minimiser on the box and on the simplices, decreases the
energy, stays feasible; SPEN, DVN and the implicit method's refinement use it."""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from implicit_jax import inference, losses, methods, tasks
from implicit_jax.engine import data
from implicit_jax.spaces.binary import Binary
from implicit_jax.spaces.categorical import Categorical, project_simplex
from implicit_jax.tasks.mlc.models import MLCEnergy
from tests.conftest import load_config

C = jnp.array([[0.3, 1.5, -0.3, 0.8], [0.5, 0.1, 2.0, -1.0]])
BOX = Binary((4,))


def gradient_based_inference(energy, y0, steps, step_size, rule='projected', tol=0.0, space=BOX):
  return inference.gradient_based_inference(space, energy, y0, steps, step_size, rule, tol)


def initial_y(init, shape):
  return BOX.initial(init, shape)


def quadratic(y):
  return jnp.sum((y - C) ** 2, axis=-1)


@pytest.mark.parametrize('rule,tol', [('projected', 1e-6), ('mirror', 2e-3)])
def test_reaches_the_minimiser_of_a_separable_quadratic_on_the_box(rule, tol):
  y, energies = gradient_based_inference(quadratic, initial_y('half', C.shape), 300, 0.2, rule)
  chex.assert_trees_all_close(y, jnp.clip(C, 0.0, 1.0), atol=tol)
  assert energies.shape == (301, 2)


@pytest.mark.parametrize('rule,tol', [('projected', 1e-5), ('mirror', 2e-3)])
def test_reaches_the_minimiser_of_a_separable_quadratic_on_the_simplices(rule, tol):
  """min ||y - c||^2 over each token's simplex is the projection of c, for each real token."""
  space = Categorical(4)
  c = jnp.stack([C, C[::-1] * 0.5])                               # [B=2, T=2, 4]
  y, _ = gradient_based_inference(lambda y: jnp.sum((y - c) ** 2, axis=(-2, -1)),
                                  space.initial('half', c.shape), 300, 0.2, rule, space=space)
  chex.assert_trees_all_close(y, project_simplex(c), atol=tol)


@pytest.mark.parametrize('rule', ['projected', 'mirror'])
def test_decreases_a_learned_energy_and_stays_in_the_box(rule):
  energy = MLCEnergy(num_labels=6, feature_hidden=(8,), feature_dim=8, global_hidden=4)
  batch = {'x': jax.random.normal(jax.random.key(0), (5, 3))}
  phi = energy.init(jax.random.key(1), batch, jnp.zeros((5, 6)))
  y0 = jax.random.uniform(jax.random.key(2), (5, 6))
  y, energies = gradient_based_inference(lambda y: energy.apply(phi, batch, y), y0, 50, 0.05, rule,
                                         space=Binary((6,)))
  assert np.all((np.asarray(y) >= 0) & (np.asarray(y) <= 1))
  assert np.all(np.diff(np.asarray(energies), axis=0) <= 1e-5)  # monotone at a small step
  assert np.all(energies[-1] < energies[0] - 1e-3)  # and it does move


def test_each_step_evaluates_the_energy_once():
  """The step's energy and gradient come from one forward pass (a vjp), not a value pass and a grad pass: the
  scanned body calls the energy once, and one more call scores the final y. Counted at trace time."""
  calls = []

  def counted(y):
    calls.append(y.shape)
    return quadratic(y)

  jax.jit(lambda y0: gradient_based_inference(counted, y0, 30, 0.2))(initial_y('half', C.shape))
  assert len(calls) == 2, calls


def test_early_stop_freezes_an_example_once_its_energy_settles():
  y0 = initial_y('zeros', C.shape)
  one_step, _ = gradient_based_inference(quadratic, y0, 1, 0.2)
  # tol larger than any change: every example stops after its first step.
  stopped, energies = gradient_based_inference(quadratic, y0, 20, 0.2, tol=1e9)
  chex.assert_trees_all_close(stopped, one_step)
  assert np.all(energies[-1] == energies[1])


def test_bad_settings_name_the_field():
  with pytest.raises(ValueError,
                     match=r"gbi.rule: unknown update rule 'adam'; choose one of \('projected', 'mirror'\)"):
    gradient_based_inference(quadratic, C, 3, 0.1, 'adam')
  with pytest.raises(ValueError, match=r"gbi.init: unknown initialisation 'random' for the binary output space"):
    initial_y('random', C.shape)
  with pytest.raises(ValueError, match=r'gbi.step_size must be > 0, got 0'):
    gradient_based_inference(quadratic, C, 3, 0)
  with pytest.raises(ValueError, match=r"gbi.init='given' needs the starting y"):
    initial_y('given', C.shape)
  config = load_config('tiny')
  config.method, config.gbi.rule = 'spen', 'newton'  # the shared section is named
  with pytest.raises(ValueError, match=r"^gbi.rule: unknown update rule 'newton'"):
    methods.build(tasks.get_task(config), config)


def _tiny_method(name):
  """``(config, method, initial state, x, y)``: method ``name`` on the tiny config, its first 16 training rows."""
  config = load_config('tiny')
  config.method = name
  task = tasks.get_task(config)
  method = methods.build(task, config)
  train = task.splits['train']
  return config, method, method.init(jax.random.key(0)), train['x'][:16], train['y'][:16]


def test_spen_cost_augmented_inference_finds_a_violating_output_and_training_lowers_the_loss():
  config, method, state, x, y = _tiny_method('spen')
  batch = {'x': x, 'y': y}
  step = jax.jit(method.train_step)
  history = []
  for _ in range(30):
    state, metrics = step(state, batch, jax.random.key(0))
    history.append(float(metrics['loss']))
  assert history[0] > 0  # at init the cost-augmented output violates the margin
  assert np.all(np.isfinite(history)) and np.mean(history[-5:]) < 0.5 * history[0]
  probs = method.predict(state.params, batch)
  assert probs.shape == (16, config.data.num_groups * config.data.group_size)
  assert np.all((probs >= 0) & (probs <= 1))


def test_dvn_adversarial_samples_raise_the_regression_loss_and_training_lowers_it():
  config, method, state, x, y = _tiny_method('dvn')
  energy, phi, batch = method.modules['energy'], state.params['phi'], {'x': x, 'y': y}
  soft_f1 = Binary((y.shape[-1],)).soft_f1
  per_example = lambda y_bar: losses.dvn_regression(energy.apply(phi, batch, y_bar[None]), soft_f1(y_bar, y)[None])
  y_inf = method.predict(state.params, batch)
  neg = lambda y_bar: -jax.vmap(lambda e, s: losses.dvn_regression(e[None, None], s[None, None]))(
      energy.apply(phi, batch, y_bar), soft_f1(y_bar, y))
  y_adv, _ = gradient_based_inference(neg, y_inf, config.gbi.steps, config.gbi.step_size,
                                      space=Binary((y.shape[-1],)))
  assert per_example(y_adv) > per_example(y_inf)  # the adversary finds outputs the value net gets more wrong
  step = jax.jit(method.train_step)
  first = None
  for _ in range(30):
    state, metrics = step(state, batch, jax.random.key(0))
    first = float(metrics['loss']) if first is None else first
  assert np.isfinite(float(metrics['loss'])) and float(metrics['loss']) < first


def test_implicit_refinement_starts_at_the_inference_net_and_lowers_the_energy():
  """implicit.refine (Remark 3): GBI on E_phi from A_theta(x); 0 steps is A_theta(x) itself."""
  config, method, state, x, _ = _tiny_method('implicit')
  task, batch = tasks.get_task(config), {'x': x}
  a_of_x = jax.nn.sigmoid(method.modules['infnet'].apply(state.params['theta'], batch))
  chex.assert_trees_all_equal(method.predict(state.params, batch), a_of_x)
  config.implicit.refine.update(steps=10, rule='projected', step_size=1e-3)
  refined = methods.build(task, config).predict(state.params, batch)
  energy = lambda y: method.modules['energy'].apply(state.params['phi'], batch, y)
  expected, energies = gradient_based_inference(energy, a_of_x, 10, 1e-3, 'projected', space=Binary((6,)))
  chex.assert_trees_all_close(refined, expected)
  assert np.all(np.asarray(energy(refined)) < np.asarray(energy(a_of_x)))  # it moved, downhill
  config.implicit.refine.steps = -1
  with pytest.raises(ValueError, match='implicit.refine.steps must be a non-negative integer, got -1'):
    methods.build(task, config)


def test_spen_predicts_on_the_tagging_simplices():
  config = load_config('tiny_tagging')
  config.method = 'spen'
  task = tasks.get_task(config)
  method = methods.build(task, config)
  state = method.init(jax.random.key(0))
  batch = next(data.train_batches(task, 8, np.random.default_rng(0)))
  y = method.predict(state.params, task.inputs(batch))
  assert y.shape == batch['y'].shape
  np.testing.assert_allclose(np.sum(y, axis=-1), 1.0, rtol=1e-5)


@pytest.mark.parametrize('tol', [0.0, 1e-3])
def test_unrolled_gbi_gives_the_scans_outputs(tol):
  """``gbi.unroll``: the steps as straight-line code, the same outputs and energies (examples stopped by the
  tolerance included)."""
  energy = lambda y: jnp.sum((y - C) ** 2, axis=-1) + 0.3 * jnp.sum(y ** 3, axis=-1)
  y0 = initial_y('half', C.shape)
  run = lambda unroll: jax.jit(lambda y: inference.gradient_based_inference(BOX, energy, y, 15, 0.2, 'projected',
                                                                            tol, unroll))(y0)
  (y_scan, e_scan), (y_unrolled, e_unrolled) = run(False), run(True)
  np.testing.assert_allclose(y_unrolled, y_scan, rtol=1e-6, atol=1e-7)
  np.testing.assert_allclose(e_unrolled, e_scan, rtol=1e-6, atol=1e-7)
