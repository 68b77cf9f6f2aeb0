"""The paper's method (Shankar & Piratla, Algorithm 1): inference net trained on L_aux, energy on the implicit
gradient of L_prim.

    L_aux(theta, phi)  = MBCE(y, A_theta(x)) + lambda * E_phi(x, A_theta(x))                      (Eq. 6)
    L_prim(theta, phi) = energy loss on the gold y and negatives y_bar_k drawn from A_theta(x)
                         (ssvm, perceptron, cd, nce, dvn: ``losses.py``; samplers: ``negatives.py``)

Prediction is ``A_theta(x)``; with ``implicit.refine_steps > 0`` it is refined by that many GBI steps on E_phi
(Remark 3 of the paper, which does not use it).

Each outer step: ``inner_steps`` optimiser steps on theta from the previous theta (warm start, optimiser state
carried too), then one step on phi with ``dL_prim/dphi`` from ``bilevel.ImplicitSolve``; all in one jitted call.
The sampling noise of the negatives is drawn first and passed as data, so L_prim is a deterministic,
differentiable function of (theta, phi) within the step.
"""

import jax
import jax.numpy as jnp
import optax

from implicit_jax import bilevel, losses, negatives
from implicit_jax.energies import MLCEnergy
from implicit_jax.methods import Method, State, inference_net, make_optimizer, spen


def make_energy_and_net(task, config):
  m = config.model
  infnet = inference_net(task, config)
  energy = MLCEnergy(task.num_labels, tuple(m.energy_feature_hidden), m.energy_feature_dim, m.global_hidden,
                     m.energy_activation)
  return energy, infnet


def train_logits(infnet, theta, batch):
  # One dropout mask per outer step, shared by the inner steps, the Hessian and L_prim: within a step both
  # losses are deterministic functions of (theta, phi), as the implicit function theorem needs.
  return infnet.apply(theta, batch['x'], train=True, rngs={'dropout': batch['dropout']})


def make_primary_loss(energy, infnet, config):
  """``L_prim(theta, phi, batch)`` for ``config.implicit.primary_loss``; batch holds x, y, noise, dropout rng."""
  cfg, neg = config.implicit, config.negatives
  name = cfg.primary_loss
  if name not in losses.PRIMARY_LOSSES:
    raise ValueError(f'implicit.primary_loss: unknown loss {name!r}; choose one of {losses.PRIMARY_LOSSES}')
  if cfg.cost not in losses.COSTS:
    raise ValueError(f'implicit.cost: unknown cost {cfg.cost!r}; choose one of {sorted(losses.COSTS)}')
  if neg.sampler not in negatives.SAMPLERS:
    raise ValueError(f'negatives.sampler: unknown sampler {neg.sampler!r}; choose one of {negatives.SAMPLERS}')
  if neg.num_samples < 0 or (neg.num_samples == 0 and not neg.include_mean):
    raise ValueError('negatives: need num_samples > 0 or include_mean=True (no negative to contrast with)')
  cost_fn = losses.COSTS[cfg.cost]

  def l_prim(theta, phi, batch):
    x, y = batch['x'], batch['y']
    logits = train_logits(infnet, theta, batch)
    y_neg = negatives.negatives(logits, batch['noise'], neg.sampler, neg.temperature, neg.scale,
                                neg.include_mean)                           # [K, B, L]
    e_neg, e_gold = energy.apply(phi, x, y_neg), energy.apply(phi, x, y)    # [K, B], [B]
    if name == 'ssvm':
      return losses.ssvm_margin(e_neg, e_gold, cfg.cost_scale * cost_fn(y_neg, y))
    if name == 'cd':
      return losses.contrastive_divergence(e_neg, e_gold, cfg.cost_scale * cost_fn(y_neg, y))
    if name == 'perceptron':
      return losses.perceptron(e_neg, e_gold)
    if name == 'dvn':
      # The gold output is a training sample too (score 1), as in Gygli et al.: without it nothing anchors the
      # energy of good outputs, and on bibtex the inference net followed the energy into a collapse (F1 0.10).
      return losses.dvn_regression(jnp.concatenate([e_gold[None], e_neg]),
                                   jnp.concatenate([jnp.ones_like(e_gold)[None], losses.soft_f1(y_neg, y)]))
    # nce: P_N is the inference net's current distribution, a fixed noise model at this step (SEAL Eq. 9).
    fixed = jax.lax.stop_gradient(logits)
    return losses.nce_ranking(e_neg, e_gold, losses.bernoulli_log_prob(fixed, y_neg),
                              losses.bernoulli_log_prob(fixed, y))

  return l_prim


def build(task, config) -> Method:
  cfg, neg = config.implicit, config.negatives
  if isinstance(cfg.inner_steps, bool) or not isinstance(cfg.inner_steps, int) or cfg.inner_steps < 1:
    raise ValueError(f'implicit.inner_steps must be a positive integer, got {cfg.inner_steps!r}')
  energy, infnet = make_energy_and_net(task, config)
  l_prim = make_primary_loss(energy, infnet, config)
  inner_opt = make_optimizer(cfg.inner_optimizer, 'implicit.inner_optimizer')
  outer_opt = make_optimizer(config.optimizer, 'optimizer')
  solver = bilevel.Solver.from_config(config.solver)
  lam = cfg.aux_lambda

  def l_aux(theta, phi, batch):
    logits = train_logits(infnet, theta, batch)
    return losses.bce(logits, batch['y']) + lam * jnp.mean(energy.apply(phi, batch['x'], jax.nn.sigmoid(logits)))

  inner = bilevel.ImplicitSolve(l_aux, inner_opt, cfg.inner_steps, solver)

  def init(rng):
    k_theta, k_phi = jax.random.split(rng)
    x0 = jnp.zeros((1, task.num_features), jnp.float32)
    theta = infnet.init(k_theta, x0)
    phi = energy.init(k_phi, x0, jnp.zeros((1, task.num_labels), jnp.float32))
    return State(step=jnp.zeros((), jnp.int32), params={'theta': theta, 'phi': phi},
                 opt_state={'theta': inner_opt.init(theta), 'phi': outer_opt.init(phi)})

  def train_step(state, batch, rng):
    p, s = state.params, state.opt_state
    noise_rng, dropout_rng = jax.random.split(rng)
    noise = negatives.draw_noise(noise_rng, neg.sampler, neg.num_samples, batch['y'].shape)
    batch = dict(batch, noise=noise, dropout=jax.random.key_data(dropout_rng))
    (loss, (theta, theta_state, aux_losses)), grad, diag = inner.value_and_grad(
        l_prim, p['phi'], p['theta'], s['theta'], batch)
    updates, phi_state = outer_opt.update(grad, s['phi'], p['phi'])
    phi = optax.apply_updates(p['phi'], updates)
    metrics = dict(diag, loss_prim=loss, loss_aux=aux_losses[-1])
    return State(step=state.step + 1, params={'theta': theta, 'phi': phi},
                 opt_state={'theta': theta_state, 'phi': phi_state}), metrics

  refine_steps = cfg.refine_steps
  if isinstance(refine_steps, bool) or not isinstance(refine_steps, int) or refine_steps < 0:
    raise ValueError(f'implicit.refine_steps must be a non-negative integer, got {refine_steps!r}')
  gbi = config.gbi.copy_and_resolve_references()
  gbi.init, gbi.steps = 'given', refine_steps
  refine = spen.gbi_predict(energy, gbi)

  def predict(params, x):
    y = jax.nn.sigmoid(infnet.apply(params['theta'], x))
    # Remark 3: A_theta(x) refined by gradient descent on the learned energy.
    return refine(params['phi'], x, y) if refine_steps else y

  return Method(init, train_step, predict, {'infnet': infnet, 'energy': energy})
