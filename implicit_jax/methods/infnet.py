"""Inference networks trained against an energy: InfNet (Tu & Gimpel 2018) and InfNet+ (Tu, Pang & Gimpel 2020).

Two inference networks give relaxed outputs ``sigmoid(logits)``: the cost-augmented net F (it proposes the
outputs that most violate the energy's margin) and the test-time net A (``predict``). With
``h_F = Delta(F(x), y) - E(x, F(x)) + E(x, y)``, ``h_A = E(x, y) - E(x, A(x))`` and ``[.]_T`` the hinge ``[.]_+``
when ``infnet.truncate``, the identity otherwise::

    energy  (minimised):  [h_F]_+  +  lambda [h_A]_+          (losses.ssvm_margin + lambda * losses.perceptron)
    F       (minimised): -[h_F]_T            + ce * BCE(F logits, y)
    A       (minimised): -lambda [h_A]_T     + ce * BCE(A logits, y)

F(x) and A(x) are constants for the energy update; E(x, y) is a constant for the nets (it only matters under the
hinge). Every step: ``k = infnet.inference_steps`` updates of the nets on the batch, then one energy update.
Metrics: ``loss`` (the energy's), ``loss_F``, ``loss_A`` (the nets', at their last update, before it).

* ``infnet`` (2018): the margin term alone (lambda = 0) trains F and the energy; A is a copy of F until the last
  ``infnet.finetune_epochs`` epochs, where the energy is frozen and A alone minimises ``E(x, A(x)) - E(x, y) +
  ce * BCE`` (untruncated, lambda = 1): Tu & Gimpel's fine-tuning of the test-time net, from F.
* ``infnet_plus`` (2020): the compound objective, all three trained jointly; ``infnet.parameterization`` says
  what F and A share (``InferenceNetPair``).
"""

from typing import Callable, NamedTuple, Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp
import optax

from implicit_jax import losses
from implicit_jax.methods import Method, State, inference_net, make_optimizer
from implicit_jax.methods.spen import make_energy
from implicit_jax.networks import MLP

PARAMETERIZATIONS = ('separated', 'shared', 'stacked')


class InferenceNetPair(nn.Module):
  """F and A of InfNet+ (Tu, Pang & Gimpel 2020, section 3.1). ``__call__(x, y) -> (F logits, A logits)``,
  ``test_time(x) -> A logits``. The parameters of F alone are under ``'F'``, of A alone under ``'A'``:

  * separated: two MLPs;
  * shared: one hidden trunk (``'trunk'``), two linear heads;
  * stacked: A an MLP, F(x, y) = W_q [stop_gradient(A(x)); y] + b_q, an affine map on the relaxed output of A and
    the gold output. The stop_gradient is the paper's "we block the gradient at A when updating F": A learns from
    its own loss only.
  """

  num_labels: int
  hidden: Sequence[int] = (150, 150)
  act: str = 'relu'
  dropout: float = 0.0
  parameterization: str = 'separated'

  def setup(self):
    if self.parameterization == 'shared':
      self.trunk = MLP(self.hidden, None, self.act, self.dropout)  # hidden layers only, two heads on top
      self.F, self.A = nn.Dense(self.num_labels), nn.Dense(self.num_labels)
    else:
      self.A = MLP(self.hidden, self.num_labels, self.act, self.dropout)
      self.F = (MLP(self.hidden, self.num_labels, self.act, self.dropout)
                if self.parameterization == 'separated' else nn.Dense(self.num_labels))

  def test_time(self, x: jax.Array, train: bool = False) -> jax.Array:
    if self.parameterization == 'shared':
      return self.A(self.trunk(x, train))
    return self.A(x, train)

  def __call__(self, x: jax.Array, y: jax.Array, train: bool = False) -> tuple[jax.Array, jax.Array]:
    if self.parameterization == 'shared':
      h = self.trunk(x, train)
      return self.F(h), self.A(h)
    a = self.A(x, train)
    if self.parameterization == 'separated':
      return self.F(x, train), a
    return self.F(jnp.concatenate([jax.lax.stop_gradient(nn.sigmoid(a)), y], axis=-1)), a


class Objectives(NamedTuple):
  """The three losses of the module docstring for an energy ``energy_apply(phi, x, y) -> [B]``."""

  energy: Callable          # (phi, x, y, y_F, y_A=None) -> [h_F]_+ (+ lambda [h_A]_+ when y_A is given)
  cost_augmented: Callable  # (phi, x, y, F logits) -> -[h_F]_T + ce * BCE
  test_time: Callable       # (phi, x, y, A logits, weight=lambda, trunc=truncate) -> -weight [h_A]_T + ce * BCE


def make_objectives(energy_apply, cost_fn, cost_scale, ce_weight, perceptron_weight, truncate) -> Objectives:
  cost = lambda y_bar, y: cost_scale * cost_fn(y_bar, y)
  hinge = lambda h, trunc: jax.nn.relu(h) if trunc else h

  def energy(phi, x, y, y_f, y_a=None):
    y_f = jax.lax.stop_gradient(y_f)
    e_gold = energy_apply(phi, x, y)
    loss = losses.ssvm_margin(energy_apply(phi, x, y_f), e_gold, cost(y_f, y))
    if y_a is not None:
      loss += perceptron_weight * losses.perceptron(energy_apply(phi, x, jax.lax.stop_gradient(y_a)), e_gold)
    return loss

  def cost_augmented(phi, x, y, f_logits):
    y_f = jax.nn.sigmoid(f_logits)
    h = cost(y_f, y) - energy_apply(phi, x, y_f) + energy_apply(phi, x, y)
    return -jnp.mean(hinge(h, truncate)) + ce_weight * losses.bce(f_logits, y)

  def test_time(phi, x, y, a_logits, weight=perceptron_weight, trunc=truncate):
    h = energy_apply(phi, x, y) - energy_apply(phi, x, jax.nn.sigmoid(a_logits))
    return -weight * jnp.mean(hinge(h, trunc)) + ce_weight * losses.bce(a_logits, y)

  return Objectives(energy, cost_augmented, test_time)


def _check(config, plus: bool):
  """Validates ``config.infnet`` (and the shared cost); errors name the field."""
  cfg = config.infnet
  if isinstance(cfg.inference_steps, bool) or not isinstance(cfg.inference_steps, int) or cfg.inference_steps < 1:
    raise ValueError(f'infnet.inference_steps must be a positive integer, got {cfg.inference_steps!r}')
  if not cfg.ce_weight >= 0:
    raise ValueError(f'infnet.ce_weight must be >= 0, got {cfg.ce_weight}')
  if not isinstance(cfg.truncate, bool):
    raise ValueError(f'infnet.truncate must be True or False, got {cfg.truncate!r}')
  if config.implicit.cost not in losses.COSTS:
    raise ValueError(f'implicit.cost: unknown cost {config.implicit.cost!r}; choose one of {sorted(losses.COSTS)}')
  if not config.implicit.cost_scale >= 0:
    raise ValueError(f'implicit.cost_scale must be >= 0, got {config.implicit.cost_scale}')
  if plus:
    if cfg.parameterization not in PARAMETERIZATIONS:
      raise ValueError(f'infnet.parameterization: unknown parameterization {cfg.parameterization!r}; choose one '
                       f'of {PARAMETERIZATIONS}')
    if not cfg.perceptron_weight >= 0:
      raise ValueError(f'infnet.perceptron_weight must be >= 0, got {cfg.perceptron_weight}')
  else:
    n = cfg.finetune_epochs
    if isinstance(n, bool) or not isinstance(n, int) or not 0 <= n < config.num_epochs:
      # At least one epoch must train the energy, or A would fine-tune against a random one.
      raise ValueError(f'infnet.finetune_epochs must be an integer in [0, num_epochs={config.num_epochs}), '
                       f'got {n!r}')


def _objectives(energy, config, perceptron_weight):
  cfg = config.infnet
  return make_objectives(energy.apply, losses.COSTS[config.implicit.cost], config.implicit.cost_scale,
                         cfg.ce_weight, perceptron_weight, cfg.truncate)


def _inner_updates(loss_fn, opt, params, opt_state, rng, k):
  """``k`` optimiser steps on ``loss_fn(params, rng) -> (loss, aux)``, a fresh dropout key each; returns the new
  params and optimiser state and the (loss, aux) of the last step (computed before its update)."""
  def step(carry, key):
    params, opt_state = carry
    (loss, aux), grad = jax.value_and_grad(loss_fn, has_aux=True)(params, key)
    updates, opt_state = opt.update(grad, opt_state, params)
    return (optax.apply_updates(params, updates), opt_state), (loss, aux)
  (params, opt_state), (loss, aux) = jax.lax.scan(step, (params, opt_state), jax.random.split(rng, k))
  return params, opt_state, jax.tree.map(lambda v: v[-1], (loss, aux))


def _energy_update(obj, opt, phi, phi_state, x, y, y_f, y_a=None):
  # Callers pass the nets' outputs without dropout: the negatives are the nets' answers to their inference
  # problems, not a dropout sample of them.
  loss, grad = jax.value_and_grad(obj.energy)(phi, x, y, y_f, y_a)
  updates, phi_state = opt.update(grad, phi_state, phi)
  return optax.apply_updates(phi, updates), phi_state, loss


def build_infnet(task, config) -> Method:
  """InfNet (Tu & Gimpel 2018): params ``{'phi': energy, 'F': cost-augmented net, 'A': test-time net}``."""
  _check(config, plus=False)
  cfg = config.infnet
  energy, net = make_energy(task, config), inference_net(task, config)
  obj = _objectives(energy, config, perceptron_weight=0.0)
  energy_opt = make_optimizer(config.optimizer, 'optimizer')
  inf_opt = make_optimizer(cfg.inference_optimizer, 'infnet.inference_optimizer')
  steps_per_epoch = len(task.splits['train'][0]) // config.batch_size
  finetune_from = steps_per_epoch * (config.num_epochs - cfg.finetune_epochs)  # first step of phase 2

  def init(rng):
    k_net, k_phi = jax.random.split(rng)
    x0 = jnp.zeros((1, task.num_features), jnp.float32)
    theta = net.init(k_net, x0)
    phi = energy.init(k_phi, x0, jnp.zeros((1, task.num_labels), jnp.float32))
    # A starts as a copy, not the same arrays: the training step donates its state, and one buffer cannot be
    # donated twice.
    return State(step=jnp.zeros((), jnp.int32), params={'phi': phi, 'F': theta, 'A': jax.tree.map(jnp.copy, theta)},
                 opt_state={'phi': energy_opt.init(phi), 'F': inf_opt.init(theta), 'A': inf_opt.init(theta)})

  def joint(state, batch, rng):
    """Phase 1: k updates of F, one of the energy; A follows F (so that phase 2 starts A from F)."""
    p, s = state.params, state.opt_state
    x, y = batch['x'], batch['y']

    def f_loss(theta, key):
      return obj.cost_augmented(p['phi'], x, y, net.apply(theta, x, train=True, rngs={'dropout': key})), ()
    f, f_state, (loss_f, _) = _inner_updates(f_loss, inf_opt, p['F'], s['F'], rng, cfg.inference_steps)
    f_logits = net.apply(f, x)
    phi, phi_state, loss = _energy_update(obj, energy_opt, p['phi'], s['phi'], x, y, jax.nn.sigmoid(f_logits))
    # A's optimiser state stays at its initial value: phase 2 starts a fresh optimiser on a new objective.
    params, opt_state = {'phi': phi, 'F': f, 'A': f}, {'phi': phi_state, 'F': f_state, 'A': s['A']}
    loss_a = obj.test_time(p['phi'], x, y, f_logits, weight=1.0, trunc=False)
    return State(step=state.step + 1, params=params, opt_state=opt_state), (loss, loss_f, loss_a)

  def finetune(state, batch, rng):
    """Phase 2: the energy and F frozen, A alone on E(x, A(x)) + CE. Energy and F losses reported, not used."""
    p, s = state.params, state.opt_state
    x, y = batch['x'], batch['y']

    def a_loss(theta, key):
      logits = net.apply(theta, x, train=True, rngs={'dropout': key})
      return obj.test_time(p['phi'], x, y, logits, weight=1.0, trunc=False), ()
    a, a_state, (loss_a, _) = _inner_updates(a_loss, inf_opt, p['A'], s['A'], rng, 1)
    f_logits = net.apply(p['F'], x)
    loss = obj.energy(p['phi'], x, y, jax.nn.sigmoid(f_logits))
    loss_f = obj.cost_augmented(p['phi'], x, y, f_logits)
    return (State(step=state.step + 1, params=dict(p, A=a), opt_state=dict(s, A=a_state)),
            (loss, loss_f, loss_a))

  def train_step(state, batch, rng):
    state, (loss, loss_f, loss_a) = jax.lax.cond(state.step >= finetune_from, finetune, joint, state, batch, rng)
    return state, {'loss': loss, 'loss_F': loss_f, 'loss_A': loss_a}

  def predict(params, x):
    return jax.nn.sigmoid(net.apply(params['A'], x))

  return Method(init, train_step, predict, {'energy': energy, 'infnet': net})


def build_infnet_plus(task, config) -> Method:
  """InfNet+ (Tu, Pang & Gimpel 2020): params ``{'phi': energy, 'nets': InferenceNetPair}``."""
  _check(config, plus=True)
  cfg = config.infnet
  a_net = inference_net(task, config)  # validates model.* and sizes both nets like every other method's
  nets = InferenceNetPair(task.num_labels, a_net.hidden, a_net.act, a_net.dropout, cfg.parameterization)
  energy = make_energy(task, config)
  obj = _objectives(energy, config, cfg.perceptron_weight)
  energy_opt = make_optimizer(config.optimizer, 'optimizer')
  inf_opt = make_optimizer(cfg.inference_optimizer, 'infnet.inference_optimizer')

  def init(rng):
    k_net, k_phi = jax.random.split(rng)
    x0, y0 = jnp.zeros((1, task.num_features), jnp.float32), jnp.zeros((1, task.num_labels), jnp.float32)
    psi, phi = nets.init(k_net, x0, y0), energy.init(k_phi, x0, y0)
    return State(step=jnp.zeros((), jnp.int32), params={'phi': phi, 'nets': psi},
                 opt_state={'phi': energy_opt.init(phi), 'nets': inf_opt.init(psi)})

  def train_step(state, batch, rng):
    p, s = state.params, state.opt_state
    x, y = batch['x'], batch['y']

    def nets_loss(psi, key):
      # One loss for both nets: separated nets decouple; a shared trunk gets both gradients; stacked F's loss
      # stops at A's output, so A's parameters see A's loss only.
      f_logits, a_logits = nets.apply(psi, x, y, train=True, rngs={'dropout': key})
      loss_f, loss_a = obj.cost_augmented(p['phi'], x, y, f_logits), obj.test_time(p['phi'], x, y, a_logits)
      return loss_f + loss_a, (loss_f, loss_a)
    psi, psi_state, (_, (loss_f, loss_a)) = _inner_updates(nets_loss, inf_opt, p['nets'], s['nets'], rng,
                                                           cfg.inference_steps)
    f_logits, a_logits = nets.apply(psi, x, y)
    phi, phi_state, loss = _energy_update(obj, energy_opt, p['phi'], s['phi'], x, y, jax.nn.sigmoid(f_logits),
                                          jax.nn.sigmoid(a_logits))
    return (State(step=state.step + 1, params={'phi': phi, 'nets': psi},
                  opt_state={'phi': phi_state, 'nets': psi_state}),
            {'loss': loss, 'loss_F': loss_f, 'loss_A': loss_a})

  def predict(params, x):
    return jax.nn.sigmoid(nets.apply(params['nets'], x, method=InferenceNetPair.test_time))

  return Method(init, train_step, predict, {'energy': energy, 'infnet': nets})
