"""The paper's method (Shankar & Piratla, Algorithm 1): inference net trained on L_aux, energy on the implicit
gradient of L_prim.

    L_aux(theta, phi)  = MBCE(y, A_theta(x)) + lambda * E_phi(x, A_theta(x))                (Eq. 6)
    L_prim(theta, phi) = primary energy loss with negative y_bar = A_theta(x)                (SSVM, perceptron)

Each outer step: ``inner_steps`` optimiser steps on theta from the previous theta (warm start, optimiser state
carried too), then one step on phi with ``dL_prim/dphi`` from ``bilevel.ImplicitSolve``; all in one jitted call.
"""

import jax
import jax.numpy as jnp
import optax

from implicit_jax import bilevel, losses
from implicit_jax.energies import MLCEnergy
from implicit_jax.methods import Method, State, make_optimizer
from implicit_jax.networks import MLPInferenceNet

PRIMARY_LOSSES = ('ssvm', 'perceptron')


def build(task, config) -> Method:
  cfg = config.implicit
  if cfg.primary_loss not in PRIMARY_LOSSES:
    raise ValueError(f'implicit.primary_loss: unknown loss {cfg.primary_loss!r}; choose one of {PRIMARY_LOSSES}')
  if isinstance(cfg.inner_steps, bool) or not isinstance(cfg.inner_steps, int) or cfg.inner_steps < 1:
    raise ValueError(f'implicit.inner_steps must be a positive integer, got {cfg.inner_steps!r}')
  m = config.model
  infnet = MLPInferenceNet(task.num_labels, tuple(m.inference_hidden), m.activation)
  energy = MLCEnergy(task.num_labels, tuple(m.energy_feature_hidden), m.energy_feature_dim, m.global_hidden,
                     m.energy_activation)
  inner_opt = make_optimizer(cfg.inner_optimizer, 'implicit.inner_optimizer')
  outer_opt = make_optimizer(config.optimizer, 'optimizer')
  solver = bilevel.Solver.from_config(config.solver)
  lam = cfg.aux_lambda

  def l_aux(theta, phi, batch):
    logits = infnet.apply(theta, batch['x'])
    return losses.bce(logits, batch['y']) + lam * jnp.mean(energy.apply(phi, batch['x'], jax.nn.sigmoid(logits)))

  def l_prim(theta, phi, batch):
    x, y = batch['x'], batch['y']
    y_bar = jax.nn.sigmoid(infnet.apply(theta, x))  # differentiable negative: carries d L_prim / d theta
    e_neg, e_gold = energy.apply(phi, x, y_bar), energy.apply(phi, x, y)
    if cfg.primary_loss == 'ssvm':
      return losses.ssvm_margin(e_neg, e_gold, losses.l1_cost(y_bar, y))
    return losses.perceptron(e_neg, e_gold)

  inner = bilevel.ImplicitSolve(l_aux, inner_opt, cfg.inner_steps, solver)

  def init(rng):
    k_theta, k_phi = jax.random.split(rng)
    x0 = jnp.zeros((1, task.num_features), jnp.float32)
    theta = infnet.init(k_theta, x0)
    phi = energy.init(k_phi, x0, jnp.zeros((1, task.num_labels), jnp.float32))
    return State(step=jnp.zeros((), jnp.int32), params={'theta': theta, 'phi': phi},
                 opt_state={'theta': inner_opt.init(theta), 'phi': outer_opt.init(phi)})

  def train_step(state, batch, rng):
    del rng  # the SSVM and perceptron losses draw no samples
    p, s = state.params, state.opt_state
    (loss, (theta, theta_state, aux_losses)), grad, diag = inner.value_and_grad(
        l_prim, p['phi'], p['theta'], s['theta'], batch)
    updates, phi_state = outer_opt.update(grad, s['phi'], p['phi'])
    phi = optax.apply_updates(p['phi'], updates)
    metrics = dict(diag, loss_prim=loss, loss_aux=aux_losses[-1])
    return State(step=state.step + 1, params={'theta': theta, 'phi': phi},
                 opt_state={'theta': theta_state, 'phi': phi_state}), metrics

  def predict(params, x):
    return jax.nn.sigmoid(infnet.apply(params['theta'], x))

  return Method(init, train_step, predict)
