"""Inference networks trained against an energy: InfNet (Tu & Gimpel 2018) and InfNet+ (Tu, Pang & Gimpel 2020).

Two inference networks give relaxed outputs (the output space's relaxation of their logits): the cost-augmented
net F (it proposes the outputs that most violate the energy's margin) and the test-time net A (``predict``).
With ``h_F = Delta(F(x), y) - E(x, F(x)) + E(x, y)``, ``h_A = E(x, y) - E(x, A(x))`` and ``[.]_T`` the hinge
``[.]_+`` when ``infnet.truncate``, the identity otherwise::

    energy  (minimised):  [h_F]_+  +  lambda [h_A]_+          (losses.ssvm_margin + lambda * losses.perceptron)
    F       (minimised): -[h_F]_T            + ce * CE(F logits, y)
    A       (minimised): -lambda [h_A]_T     + ce * CE(A logits, y)

CE is the output space's local loss. F(x) and A(x) are constants for the energy update; E(x, y) is a constant for
the nets (it only matters under the hinge). Every step: ``k = infnet.inference_steps`` updates of the nets on the
batch, then one energy update. Metrics: ``loss`` (the energy's), ``loss_F``, ``loss_A`` (the nets', at their last
update, before it).

* ``infnet`` (2018): the margin term alone (lambda = 0) trains F and the energy; A is a copy of F until the last
  ``infnet.finetune_epochs`` epochs, where the energy is frozen and A alone minimises ``E(x, A(x)) - E(x, y) +
  ce * CE`` (untruncated, lambda = 1): Tu & Gimpel's fine-tuning of the test-time net, from F. The step where
  fine-tuning starts is fixed when the run starts and kept in the state: a run resumed with more epochs keeps its
  phases (fine-tuning goes on), it does not move the boundary and overwrite the fine-tuned A with F.
* ``infnet_plus`` (2020): the compound objective, all three trained jointly; ``infnet.parameterization`` says
  what F and A share (``InferenceNetPair``).
"""

from typing import Callable, NamedTuple

import flax.linen as nn
import jax
import jax.numpy as jnp
import ml_collections
import optax

from implicit_jax import batch as batch_lib, losses
from implicit_jax.method_kit import (Method, MethodSpec, Section, State, energies, init_params, make_optimizer,
                                    optimizer_config, positive_int, steps_per_epoch)

PARAMETERIZATIONS = ('separated', 'shared', 'stacked')


def default_config() -> ml_collections.ConfigDict:
  """``config.infnet``, read by 'infnet' and 'infnet_plus'."""
  c = ml_collections.ConfigDict()
  c.cost = 'l1'                     # Delta of the margin, a cost of the output space
  c.cost_scale = 1.0                # multiplies Delta
  c.parameterization = 'separated'  # infnet_plus: cost-augmented net F and test-time net A are 'separated' (two
                                    # nets), 'shared' (one trunk, two heads) or 'stacked' (F(x, y) = a position-wise
                                    # affine map of [A(x); y], no gradient into A when F is updated)
  c.perceptron_weight = 1.0         # infnet_plus: lambda on the perceptron term of the compound objective
  c.ce_weight = 1.0                 # weight of the local cross-entropy term in the inference nets' losses
  c.inference_steps = 1             # k: inference-net updates (on the batch) per energy update
  c.truncate = False                # keep the hinge [.]_+ in the inference nets' objectives (InfNet 2018 did;
                                    # InfNet+ removes it). The energy's loss is always truncated
  c.finetune_epochs = 2             # infnet: the last epochs train A alone (from F) on E(x, A(x)) + CE, the
                                    # energy frozen (Tu & Gimpel's test-time inference network)
  c.inference_optimizer = optimizer_config()  # optimiser of F and A
  return c


class InferenceNetPair(nn.Module):
  """F and A of InfNet+ (Tu, Pang & Gimpel 2020, section 3.1). ``__call__(batch, y) -> (F logits, A logits)``,
  ``test_time(batch) -> A logits``:

  * separated: ``net`` is A, ``f_net`` is F, two inference nets of the task;
  * shared: ``net`` is the task's inference net with two heads on one trunk, F the first, A the second;
  * stacked: ``net`` is A; F(x, y) = W_q [stop_gradient(A(x)); y] + b_q, a position-wise affine map of the relaxed
    output of A and the gold output. The stop_gradient is the paper's "we block the gradient at A when updating
    F": A learns from its own loss only.
  """

  net: nn.Module
  parameterization: str
  relax: Callable
  units: int
  f_net: nn.Module | None = None

  def test_time(self, batch: dict, train: bool = False) -> jax.Array:
    out = self.net(batch, train)
    return out[1] if self.parameterization == 'shared' else out

  @nn.compact
  def __call__(self, batch: dict, y: jax.Array, train: bool = False) -> tuple[jax.Array, jax.Array]:
    if self.parameterization == 'shared':
      return self.net(batch, train)
    a = self.net(batch, train)
    if self.parameterization == 'separated':
      return self.f_net(batch, train), a
    return nn.Dense(self.units, name='F')(jnp.concatenate([jax.lax.stop_gradient(self.relax(a)), y], axis=-1)), a


class Objectives(NamedTuple):
  """The three losses of the module docstring for an energy ``energy_apply(phi, batch, y) -> [B]``; each reads
  the gold output and mask from ``batch``."""

  energy: Callable          # (phi, batch, y_F, y_A=None) -> [h_F]_+ (+ lambda [h_A]_+ when y_A is given)
  cost_augmented: Callable  # (phi, batch, F logits) -> -[h_F]_T + ce * CE
  test_time: Callable       # (phi, batch, A logits, weight=lambda, trunc=truncate) -> -weight [h_A]_T + ce * CE


def make_objectives(space, energy_apply, cost_fn, cost_scale, ce_weight, perceptron_weight, truncate) -> Objectives:
  cost = lambda y_bar, batch: cost_scale * cost_fn(y_bar, batch['y'], batch.get('mask'))
  local = lambda logits, batch: space.local_loss(logits, batch['y'], batch.get('mask'))
  hinge = lambda h, trunc: jax.nn.relu(h) if trunc else h

  def energy(phi, batch, y_f, y_a=None):
    y_f = jax.lax.stop_gradient(y_f)
    if y_a is None:
      e_f, e_gold = energies(energy_apply, phi, batch, y_f, batch['y'])
      return losses.ssvm_margin(e_f, e_gold, cost(y_f, batch))
    e_f, e_a, e_gold = energies(energy_apply, phi, batch, y_f, jax.lax.stop_gradient(y_a), batch['y'])
    return losses.ssvm_margin(e_f, e_gold, cost(y_f, batch)) + perceptron_weight * losses.perceptron(e_a, e_gold)

  def cost_augmented(phi, batch, f_logits):
    y_f = space.relax(f_logits)
    e_f, e_gold = energies(energy_apply, phi, batch, y_f, batch['y'])
    h = cost(y_f, batch) - e_f + e_gold
    return -jnp.mean(hinge(h, truncate)) + ce_weight * local(f_logits, batch)

  def test_time(phi, batch, a_logits, weight=perceptron_weight, trunc=truncate):
    e_gold, e_a = energies(energy_apply, phi, batch, batch['y'], space.relax(a_logits))
    h = e_gold - e_a
    return -weight * jnp.mean(hinge(h, trunc)) + ce_weight * local(a_logits, batch)

  return Objectives(energy, cost_augmented, test_time)


def _check(config, plus: bool):
  """Validates ``config.infnet``; errors name the field."""
  cfg = config.infnet
  positive_int(cfg.inference_steps, 'infnet.inference_steps')
  if not cfg.ce_weight >= 0:
    raise ValueError(f'infnet.ce_weight must be >= 0, got {cfg.ce_weight}')
  if not isinstance(cfg.truncate, bool):
    raise ValueError(f'infnet.truncate must be True or False, got {cfg.truncate!r}')
  if not cfg.cost_scale >= 0:
    raise ValueError(f'infnet.cost_scale must be >= 0, got {cfg.cost_scale}')
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


def _objectives(task, energy, config, perceptron_weight):
  cfg = config.infnet
  return make_objectives(task.space, energy.apply, task.space.cost(cfg.cost, 'infnet.cost'), cfg.cost_scale,
                         cfg.ce_weight, perceptron_weight, cfg.truncate)


def _inner_updates(loss_fn, opt, params, opt_state, rng, k):
  """``k`` optimiser steps on ``loss_fn(params, rng) -> (loss, aux)``, a fresh dropout key each; returns the new
  params and optimiser state and the (loss, aux) of the last step (computed before its update)."""
  def step(carry, key):
    params, opt_state = carry
    (loss, aux), grad = jax.value_and_grad(loss_fn, has_aux=True)(params, key)
    updates, opt_state = opt.update(grad, opt_state, params)
    return (optax.apply_updates(params, updates), opt_state), (loss, aux)
  (params, opt_state), (loss, aux) = jax.lax.scan(step, (params, opt_state), batch_lib.split(rng, k))
  return params, opt_state, jax.tree.map(lambda v: v[-1], (loss, aux))


def _energy_update(obj, opt, phi, phi_state, batch, y_f, y_a=None):
  # Callers pass the nets' outputs without dropout: the negatives are the nets' answers to their inference
  # problems, not a dropout sample of them.
  loss, grad = jax.value_and_grad(obj.energy)(phi, batch, y_f, y_a)
  updates, phi_state = opt.update(grad, phi_state, phi)
  return optax.apply_updates(phi, updates), phi_state, loss


def build_infnet(task, config) -> Method:
  """InfNet (Tu & Gimpel 2018): params ``{'phi': energy, 'F': cost-augmented net, 'A': test-time net}``."""
  _check(config, plus=False)
  cfg, space = config.infnet, task.space
  energy, net = task.make_energy(), task.make_inference_net()
  obj = _objectives(task, energy, config, perceptron_weight=0.0)
  energy_opt = make_optimizer(config.optimizer, 'optimizer')
  inf_opt = make_optimizer(cfg.inference_optimizer, 'infnet.inference_optimizer')
  finetune_from = steps_per_epoch(task, config) * (config.num_epochs - cfg.finetune_epochs)  # phase 2's first step

  def init(rng):
    params = init_params(task, rng, {'theta': net, 'phi': energy})
    theta, phi = params['theta'], params['phi']
    # A starts as a copy, not the same arrays: the training step donates its state, and one buffer cannot be
    # donated twice. The phase boundary is fixed here, with the run (module docstring).
    return State(step=jnp.zeros((), jnp.int32), params={'phi': phi, 'F': theta, 'A': jax.tree.map(jnp.copy, theta)},
                 opt_state={'phi': energy_opt.init(phi), 'F': inf_opt.init(theta), 'A': inf_opt.init(theta),
                            'finetune_from': jnp.asarray(finetune_from, jnp.int32)})

  def joint(state, batch, rng):
    """Phase 1: k updates of F, one of the energy; A follows F (so that phase 2 starts A from F)."""
    p, s = state.params, state.opt_state

    def f_loss(theta, key):
      return obj.cost_augmented(p['phi'], batch, net.apply(theta, batch, train=True, rngs={'dropout': key})), ()
    f, f_state, (loss_f, _) = _inner_updates(f_loss, inf_opt, p['F'], s['F'], rng, cfg.inference_steps)
    f_logits = net.apply(f, batch)
    phi, phi_state, loss = _energy_update(obj, energy_opt, p['phi'], s['phi'], batch, space.relax(f_logits))
    # A's optimiser state stays at its initial value: phase 2 starts a fresh optimiser on a new objective.
    params, opt_state = {'phi': phi, 'F': f, 'A': f}, dict(s, phi=phi_state, F=f_state)
    loss_a = obj.test_time(p['phi'], batch, f_logits, weight=1.0, trunc=False)
    return State(step=state.step + 1, params=params, opt_state=opt_state), (loss, loss_f, loss_a)

  def finetune(state, batch, rng):
    """Phase 2: the energy and F frozen, A alone on E(x, A(x)) + CE. Energy and F losses reported, not used."""
    p, s = state.params, state.opt_state

    def a_loss(theta, key):
      logits = net.apply(theta, batch, train=True, rngs={'dropout': key})
      return obj.test_time(p['phi'], batch, logits, weight=1.0, trunc=False), ()
    a, a_state, (loss_a, _) = _inner_updates(a_loss, inf_opt, p['A'], s['A'], rng, 1)
    f_logits = net.apply(p['F'], batch)
    loss = obj.energy(p['phi'], batch, space.relax(f_logits))
    loss_f = obj.cost_augmented(p['phi'], batch, f_logits)
    return (State(step=state.step + 1, params=dict(p, A=a), opt_state=dict(s, A=a_state)),
            (loss, loss_f, loss_a))

  def train_step(state, batch, rng):
    phase2 = state.step >= state.opt_state['finetune_from']
    state, (loss, loss_f, loss_a) = jax.lax.cond(phase2, finetune, joint, state, batch, rng)
    return state, {'loss': loss, 'loss_F': loss_f, 'loss_A': loss_a}

  def predict(params, batch):
    return space.relax(net.apply(params['A'], batch))

  return Method(init, train_step, predict, {'energy': energy, 'infnet': net})


def build_infnet_plus(task, config) -> Method:
  """InfNet+ (Tu, Pang & Gimpel 2020): params ``{'phi': energy, 'nets': InferenceNetPair}``."""
  _check(config, plus=True)
  cfg, space = config.infnet, task.space
  shared = cfg.parameterization == 'shared'
  nets = InferenceNetPair(task.make_inference_net(heads=2 if shared else 1), cfg.parameterization, space.relax,
                          space.units, task.make_inference_net() if cfg.parameterization == 'separated' else None)
  energy = task.make_energy()
  obj = _objectives(task, energy, config, cfg.perceptron_weight)
  energy_opt = make_optimizer(config.optimizer, 'optimizer')
  inf_opt = make_optimizer(cfg.inference_optimizer, 'infnet.inference_optimizer')

  def init(rng):
    k_net, k_phi = batch_lib.split(rng)
    batch = task.example_batch()
    y0 = jnp.zeros(space.shape(batch), jnp.float32)
    psi, phi = nets.init(k_net, batch, y0), init_params(task, k_phi, {'phi': energy})['phi']
    return State(step=jnp.zeros((), jnp.int32), params={'phi': phi, 'nets': psi},
                 opt_state={'phi': energy_opt.init(phi), 'nets': inf_opt.init(psi)})

  def train_step(state, batch, rng):
    p, s = state.params, state.opt_state

    def nets_loss(psi, key):
      # One loss for both nets: separated nets decouple; a shared trunk gets both gradients; stacked F's loss
      # stops at A's output, so A's parameters see A's loss only.
      f_logits, a_logits = nets.apply(psi, batch, batch['y'], train=True, rngs={'dropout': key})
      loss_f, loss_a = obj.cost_augmented(p['phi'], batch, f_logits), obj.test_time(p['phi'], batch, a_logits)
      return loss_f + loss_a, (loss_f, loss_a)
    psi, psi_state, (_, (loss_f, loss_a)) = _inner_updates(nets_loss, inf_opt, p['nets'], s['nets'], rng,
                                                           cfg.inference_steps)
    f_logits, a_logits = nets.apply(psi, batch, batch['y'])
    phi, phi_state, loss = _energy_update(obj, energy_opt, p['phi'], s['phi'], batch, space.relax(f_logits),
                                          space.relax(a_logits))
    return (State(step=state.step + 1, params={'phi': phi, 'nets': psi},
                  opt_state={'phi': phi_state, 'nets': psi_state}),
            {'loss': loss, 'loss_F': loss_f, 'loss_A': loss_a})

  def predict(params, batch):
    return space.relax(nets.apply(params['nets'], batch, method=InferenceNetPair.test_time))

  return Method(init, train_step, predict, {'energy': energy, 'infnet': nets})


SECTION = Section('infnet', default_config)
INFNET = MethodSpec('infnet', build_infnet, SECTION,
                    doc='InfNet: cost-augmented and test-time inference nets trained against the energy')
INFNET_PLUS = MethodSpec('infnet_plus', build_infnet_plus, SECTION,
                         doc='InfNet+: the compound objective, the two nets separated, shared or stacked')
