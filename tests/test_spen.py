"""SPEN's staged training (spen.pretrain_epochs, spen.clamp_epochs): what each stage may touch, the local
classifier's sign, and that the default keeps the plain method."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from implicit_jax import methods, tasks
from implicit_jax.engine import data
from implicit_jax.methods import spen
from tests.conftest import load_config

_FAST = {'xla_backend_optimization_level': 0, 'xla_llvm_disable_expensive_passes': True}


def _config(pretrain=1, clamp=1):
  config = load_config('tiny')
  config.method = 'spen'
  config.num_epochs = 3                 # tiny: 128 // 16 = 8 steps an epoch
  config.spen.pretrain_epochs, config.spen.clamp_epochs = pretrain, clamp
  config.spen.pretrain_optimizer.learning_rate = 1e-2
  config.gbi.steps = 3
  return config


def _jit(fn):
  return jax.jit(fn, compiler_options=_FAST if jax.default_backend() == 'cpu' else None)


@functools.cache
def _compiled(pretrain=1, clamp=1):
  config = _config(pretrain, clamp)
  task = tasks.get_task(config)
  method = methods.build(task, config)
  batch = jax.device_put(next(data.train_batches(task, 16, np.random.default_rng(0))))
  return method, _jit(method.init)(jax.random.key(0)), batch, _jit(method.train_step)


def _moved(a, b):
  """{top-level module name: whether any of its leaves differ} of two energy parameter trees."""
  out = {}
  for (path, u), v in zip(jax.tree_util.tree_leaves_with_path(a), jax.tree.leaves(b)):
    name = path[1].key
    out[name] = out.get(name, False) or not bool(jnp.array_equal(u, v))
  return out


def test_each_stage_moves_only_its_part_of_the_energy():
  method, state, batch, step = _compiled()
  at = lambda k: state.replace(step=jnp.asarray(k, jnp.int32))
  rng = jax.random.key(1)
  phi = state.params['phi']
  local, global_ = {'MLP_0', 'W'}, {'M', 'v'}
  pre, _ = step(at(7), batch, rng)        # the last pretraining step: feature net and W only
  moved = _moved(pre.params['phi'], phi)
  assert all(moved[k] for k in local) and not any(moved[k] for k in global_), moved
  clamped, _ = step(at(8), batch, rng)    # the first clamped step: the global term only
  moved = _moved(clamped.params['phi'], phi)
  assert not any(moved[k] for k in local) and all(moved[k] for k in global_), moved
  free, metrics = step(at(16), batch, rng)  # then everything
  assert all(_moved(free.params['phi'], phi).values())
  assert np.isfinite(float(metrics['loss'])) and int(free.step) == 17


def test_pretraining_fits_a_local_classifier_whose_sign_is_the_energys():
  method, state, batch, step = _compiled()
  energy = method.modules['energy']
  logits = lambda s: energy.apply(s.params['phi'], batch, None, local=True)
  loss = lambda s: float(np.mean(optax_bce(logits(s), batch['y'])))
  first = loss(state)
  for i in range(8):                      # the pretraining stage, on one batch
    state, _ = step(state, batch, jax.random.key(i))
  assert loss(state) < 0.8 * first, (first, loss(state))
  # Lower energy is better: with the global term off, E(x, y) = -y . logits, so the pretrained classifier's
  # labels are the energy's (the same sign GBI descends).
  phi = state.params['phi']
  no_global = {'params': {**phi['params'], 'v': jax.tree.map(jnp.zeros_like, phi['params']['v'])}}
  y = jax.random.uniform(jax.random.key(9), batch['y'].shape)
  np.testing.assert_allclose(energy.apply(no_global, batch, y),
                             -jnp.sum(y * energy.apply(phi, batch, None, local=True), -1), rtol=1e-5, atol=1e-5)


def optax_bce(logits, y):
  return jnp.maximum(logits, 0) - logits * y + jnp.log1p(jnp.exp(-jnp.abs(logits)))


def test_off_by_default_the_plain_method():
  config = load_config('tiny')
  assert (config.spen.pretrain_epochs, config.spen.clamp_epochs) == (0, 0)
  config.method = 'spen'
  state = methods.build(tasks.get_task(config), config).init(jax.random.key(0))
  assert set(state.opt_state) == {'phi'}


@pytest.mark.parametrize('pretrain,clamp,message', [
    (-1, 0, r'spen.pretrain_epochs must be a non-negative integer, got -1'),
    (0, -2, r'spen.clamp_epochs must be a non-negative integer, got -2'),
    (2, 1, r'spen.pretrain_epochs \+ spen.clamp_epochs must be < num_epochs=3'),
])
def test_bad_stage_epochs_name_the_field(pretrain, clamp, message):
  config = _config(pretrain, clamp)
  with pytest.raises(ValueError, match=message):
    spen.build(tasks.get_task(config), config)
