"""SPEN (Belanger & McCallum 2016): the energy alone, trained with the SSVM margin on cost-augmented GBI outputs.

    y_hat = argmin_y  E_phi(x, y) - Delta(y, y_gold)                        (cost-augmented inference, by GBI)
    L(phi) = [Delta(y_hat, y_gold) - E_phi(x, y_hat) + E_phi(x, y_gold)]_+  (losses.ssvm_margin)

y_hat is treated as a constant (the max over y of the margin violation, Danskin). Prediction: GBI on E_phi from
``gbi.init``. The task's energy, its output space's costs and GBI, as for every other method.
"""

import jax
import jax.numpy as jnp
import ml_collections
import optax

from implicit_jax import batch as batch_lib, inference, losses
from implicit_jax.method_kit import Method, MethodSpec, Section, State, energies, init_params, make_optimizer


def default_config() -> ml_collections.ConfigDict:
  """``config.spen``; GBI (cost-augmented inference in training, prediction) reads the shared ``config.gbi``."""
  c = ml_collections.ConfigDict()
  c.cost = 'l1'                  # Delta of the margin, a cost of the task's output space (spaces/)
  c.cost_scale = 1.0             # multiplies Delta
  return c


def energy_method(task, config, gbi, make_loss, field: str) -> Method:
  """A method that trains the energy alone and predicts by GBI (SPEN, DVN).

  ``make_loss(energy, phi, batch) -> loss(phi)``: given the current parameters it builds its training outputs
  (constants for the update) and returns the loss whose gradient moves phi; ``batch['step_key']`` holds the
  step's random key (key data) for losses that sample. ``gbi``: the prediction's settings.
  """
  energy = task.make_energy()
  opt = make_optimizer(config.optimizer, 'optimizer')
  predict_y = inference.predictor(task.space, energy, gbi, field)

  def init(rng):
    phi = init_params(task, rng, {'phi': energy})['phi']
    return State(step=jnp.zeros((), jnp.int32), params={'phi': phi}, opt_state={'phi': opt.init(phi)})

  def train_step(state, batch, rng):
    batch = dict(batch, step_key=batch_lib.as_data(rng))
    phi = state.params['phi']
    loss, grad = jax.value_and_grad(make_loss(energy, phi, batch))(phi)
    updates, opt_state = opt.update(grad, state.opt_state['phi'], phi)
    return (State(step=state.step + 1, params={'phi': optax.apply_updates(phi, updates)},
                  opt_state={'phi': opt_state}), {'loss': loss})

  def predict(params, batch):
    return predict_y(params['phi'], batch)

  return Method(init, train_step, predict, {'energy': energy})


def margin_loss(space, cost_fn, cost_scale, gbi, field: str):
  """SPEN's ``make_loss`` for ``energy_method``: the SSVM margin on the cost-augmented GBI output (a constant),
  ``cost_scale * cost_fn``; SEAL-static's 'margin' loss-net trains on it too."""
  inference.check(gbi.steps, gbi.step_size, gbi.rule, field)

  def make_loss(energy, phi, batch):
    y, mask = batch['y'], batch.get('mask')
    augmented = lambda y_bar: energy.apply(phi, batch, y_bar) - cost_scale * cost_fn(y_bar, y, mask)
    start = space.initial(gbi.init if gbi.init != 'given' else 'half', y.shape, field=f'{field}.init')
    y_hat, _ = inference.gradient_based_inference(space, augmented, start, gbi.steps, gbi.step_size, gbi.rule,
                                                  gbi.tol, gbi.unroll)
    y_hat = jax.lax.stop_gradient(y_hat)
    return lambda phi: losses.ssvm_margin(*energies(energy.apply, phi, batch, y_hat, y),
                                          cost_scale * cost_fn(y_hat, y, mask))

  return make_loss


def build(task, config) -> Method:
  cfg = config.spen
  cost_fn = task.space.cost(cfg.cost, 'spen.cost')
  return energy_method(task, config, config.gbi, margin_loss(task.space, cost_fn, cfg.cost_scale, config.gbi, 'gbi'),
                       'gbi')


METHOD = MethodSpec('spen', build, Section('spen', default_config), shared=('gbi',),
                    doc='the energy alone, SSVM margin on cost-augmented GBI outputs; prediction by GBI')
