"""SPEN (Belanger & McCallum 2016): the energy alone, trained with the SSVM margin on cost-augmented GBI outputs.

    y_hat = argmin_{y in [0,1]^L}  E_phi(x, y) - Delta(y, y_gold)          (cost-augmented inference, by GBI)
    L(phi) = [Delta(y_hat, y_gold) - E_phi(x, y_hat) + E_phi(x, y_gold)]_+  (losses.ssvm_margin)

y_hat is treated as a constant (the max over y of the margin violation, Danskin). Prediction: GBI on E_phi from
``config.gbi.init``. The same MLC energy, costs and GBI as every other method (``energies``, ``losses``,
``inference``).
"""

import jax
import jax.numpy as jnp
import optax

from implicit_jax import inference, losses
from implicit_jax.energies import MLCEnergy
from implicit_jax.methods import Method, State, make_optimizer


def make_energy(task, config):
  m = config.model
  return MLCEnergy(task.num_labels, tuple(m.energy_feature_hidden), m.energy_feature_dim, m.global_hidden,
                   m.energy_activation)


def gbi_predict(energy, gbi_config):
  """``predict(phi, x, y0=None)``: GBI on the energy from ``gbi.init`` (or from ``y0`` when init is 'given')."""
  def predict(phi, x, y0=None):
    start = inference.initial_y(gbi_config.init, (x.shape[0], energy.num_labels), y0)
    y, _ = inference.gradient_based_inference(lambda y: energy.apply(phi, x, y), start, gbi_config.steps,
                                              gbi_config.step_size, gbi_config.rule, gbi_config.tol)
    return y
  return predict


def energy_method(task, config, make_loss) -> Method:
  """A method that trains the energy alone and predicts by GBI (SPEN, DVN).

  ``make_loss(energy, phi, x, y) -> loss(phi)``: given the current parameters it builds its training outputs
  (constants for the update) and returns the loss whose gradient moves phi.
  """
  energy = make_energy(task, config)
  opt = make_optimizer(config.optimizer, 'optimizer')
  predict_y = gbi_predict(energy, config.gbi)

  def init(rng):
    x0 = jnp.zeros((1, task.num_features), jnp.float32)
    phi = energy.init(rng, x0, jnp.zeros((1, task.num_labels), jnp.float32))
    return State(step=jnp.zeros((), jnp.int32), params={'phi': phi}, opt_state={'phi': opt.init(phi)})

  def train_step(state, batch, rng):
    del rng
    phi = state.params['phi']
    loss, grad = jax.value_and_grad(make_loss(energy, phi, batch['x'], batch['y']))(phi)
    updates, opt_state = opt.update(grad, state.opt_state['phi'], phi)
    return (State(step=state.step + 1, params={'phi': optax.apply_updates(phi, updates)},
                  opt_state={'phi': opt_state}), {'loss': loss})

  def predict(params, x):
    return predict_y(params['phi'], x)

  return Method(init, train_step, predict, {'energy': energy})


def margin_loss(config):
  """SPEN's ``make_loss`` for ``energy_method``: the SSVM margin on the cost-augmented GBI output (constant).

  Cost ``implicit.cost`` times ``implicit.cost_scale``; SEAL-static's 'margin' loss-net trains on it too.
  """
  cost_fn = losses.COSTS[config.implicit.cost]
  gbi, scale = config.gbi, config.implicit.cost_scale

  def make_loss(energy, phi, x, y):
    augmented = lambda y_bar: energy.apply(phi, x, y_bar) - scale * cost_fn(y_bar, y)
    start = inference.initial_y(gbi.init if gbi.init != 'given' else 'half', y.shape)
    y_hat, _ = inference.gradient_based_inference(augmented, start, gbi.steps, gbi.step_size, gbi.rule, gbi.tol)
    y_hat = jax.lax.stop_gradient(y_hat)
    return lambda phi: losses.ssvm_margin(energy.apply(phi, x, y_hat), energy.apply(phi, x, y),
                                          scale * cost_fn(y_hat, y))

  return make_loss


def build(task, config) -> Method:
  return energy_method(task, config, margin_loss(config))
