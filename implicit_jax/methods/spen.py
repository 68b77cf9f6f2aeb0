"""SPEN (Belanger & McCallum 2016): the energy alone, trained with the SSVM margin on cost-augmented GBI outputs.

    y_hat = argmin_y  E_phi(x, y) - Delta(y, y_gold)                        (cost-augmented inference, by GBI)
    L(phi) = [Delta(y_hat, y_gold) - E_phi(x, y_hat) + E_phi(x, y_gold)]_+  (losses.ssvm_margin)

y_hat is treated as a constant (the max over y of the margin violation, Danskin). Prediction: GBI on E_phi from
``gbi.init``. The task's energy, its output space's costs and GBI, as for every other method.

Belanger & McCallum's (2016) staged training, on an energy whose local term gives per-label logits (the MLC energy's
``-W b(x)``, ``has_local_logits``): for the first ``spen.pretrain_epochs`` the feature network and the local term
train as independent logistic classifiers (the output space's local loss, with ``spen.pretrain_optimizer``), the
global term untouched; then for ``spen.clamp_epochs`` the SSVM margin trains the global term alone, the local part
held; then everything trains on the margin (with ``config.optimizer``, whose state starts at the end of
pretraining). Each update is one step of one jitted program, the stage read off the step counter.
"""

import jax
import jax.numpy as jnp
import ml_collections
import optax

from implicit_jax import batch as batch_lib, inference, losses
from implicit_jax.method_kit import (Method, MethodSpec, Section, State, energies, init_params, make_optimizer,
                                    optimizer_config, steps_per_epoch)


def default_config() -> ml_collections.ConfigDict:
  """``config.spen``; GBI (cost-augmented inference in training, prediction) reads the shared ``config.gbi``."""
  c = ml_collections.ConfigDict()
  c.cost = 'l1'                  # Delta of the margin, a cost of the task's output space (spaces/)
  c.cost_scale = 1.0             # multiplies Delta
  c.pretrain_epochs = 0          # epochs the energy's feature network and local term first train as independent
                                 # logistic classifiers (Belanger & McCallum 2016), the global term untouched;
                                 # 0: none (the energy trains from scratch on the margin). Needs an energy with
                                 # local logits (the multi-label one)
  c.clamp_epochs = 0             # then epochs the margin trains the global term alone, the local part held
  c.pretrain_optimizer = optimizer_config()  # optimiser of the pretraining stage (the margin uses config.optimizer)
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


def _stage_epochs(cfg, num_epochs):
  """``(pretrain_epochs, clamp_epochs)`` checked: integers >= 0 that leave the margin at least one epoch of all."""
  out = []
  for field in ('pretrain_epochs', 'clamp_epochs'):
    v = cfg[field]
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
      raise ValueError(f'spen.{field} must be a non-negative integer, got {v!r}')
    out.append(v)
  if sum(out) >= num_epochs:
    raise ValueError(f'spen.pretrain_epochs + spen.clamp_epochs must be < num_epochs={num_epochs} (the margin '
                     f'trains the whole energy after them), got {out[0]} + {out[1]}')
  return tuple(out)


def local_mask(energy, phi, batch) -> object:
  """A pytree of bools like ``phi``: True where the leaf is read by the energy's local logits (the feature network
  and the local term), False for the global term's."""
  local = jax.eval_shape(lambda b: energy.init(jax.random.key(0), b, None, local=True), batch)  # shapes only
  paths = {jax.tree_util.keystr(p) for p, _ in jax.tree_util.tree_leaves_with_path(local)}
  return jax.tree_util.tree_map_with_path(lambda p, _: jax.tree_util.keystr(p) in paths, phi)


def staged_method(task, config, make_loss, pretrain_epochs: int, clamp_epochs: int) -> Method:
  """SPEN with Belanger & McCallum's stages (the module docstring): pretraining the local classifier, the global
  term alone on the margin, then the whole energy on it. ``make_loss`` as for ``energy_method``."""
  energy = task.make_energy()
  if not getattr(energy, 'has_local_logits', False):
    raise ValueError(f'spen.pretrain_epochs / spen.clamp_epochs: the {config.task!r} task\'s energy '
                     f'({type(energy).__name__}) has no local logits to pretrain; set both to 0')
  opt = make_optimizer(config.optimizer, 'optimizer')
  pre_opt = make_optimizer(config.spen.pretrain_optimizer, 'spen.pretrain_optimizer')
  per_epoch = steps_per_epoch(task, config)
  pretrain_steps, clamp_end = pretrain_epochs * per_epoch, (pretrain_epochs + clamp_epochs) * per_epoch
  predict_y = inference.predictor(task.space, energy, config.gbi, 'gbi')
  space = task.space

  def init(rng):
    phi = init_params(task, rng, {'phi': energy})['phi']
    return State(step=jnp.zeros((), jnp.int32), params={'phi': phi},
                 opt_state={'phi': opt.init(phi), 'pretrain': pre_opt.init(phi)})

  def pretrain(state, batch, mask):
    phi = state.params['phi']
    local_loss = lambda phi: space.local_loss(energy.apply(phi, batch, None, local=True), batch['y'],
                                              batch.get('mask'))
    loss, grad = jax.value_and_grad(local_loss)(phi)
    updates, pre_state = pre_opt.update(grad, state.opt_state['pretrain'], phi)
    updates = jax.tree.map(lambda u, m: u if m else jnp.zeros_like(u), updates, mask)  # the global term stays
    return (state.replace(params={'phi': optax.apply_updates(phi, updates)},
                          opt_state={**state.opt_state, 'pretrain': pre_state}), loss)

  def margin(state, batch, rng, mask):
    phi = state.params['phi']
    loss, grad = jax.value_and_grad(make_loss(energy, phi, batch))(phi)
    clamped = state.step < clamp_end  # the local part held: its gradient zero, its Adam moments untouched by it
    grad = jax.tree.map(lambda g, m: jnp.where(clamped, jnp.zeros_like(g), g) if m else g, grad, mask)
    updates, opt_state = opt.update(grad, state.opt_state['phi'], phi)
    updates = jax.tree.map(lambda u, m: jnp.where(clamped, jnp.zeros_like(u), u) if m else u, updates, mask)
    return (state.replace(params={'phi': optax.apply_updates(phi, updates)},
                          opt_state={**state.opt_state, 'phi': opt_state}), loss)

  def train_step(state, batch, rng):
    batch = dict(batch, step_key=batch_lib.as_data(rng))
    mask = local_mask(energy, state.params['phi'], {'x': batch['x']})  # static: read off shapes while tracing
    state, loss = jax.lax.cond(state.step < pretrain_steps, lambda s: pretrain(s, batch, mask),
                               lambda s: margin(s, batch, rng, mask), state)
    return state.replace(step=state.step + 1), {'loss': loss.astype(jnp.float32)}

  def predict(params, batch):
    return predict_y(params['phi'], batch)

  return Method(init, train_step, predict, {'energy': energy})


def build(task, config) -> Method:
  cfg = config.spen
  cost_fn = task.space.cost(cfg.cost, 'spen.cost')
  make_loss = margin_loss(task.space, cost_fn, cfg.cost_scale, config.gbi, 'gbi')
  pretrain_epochs, clamp_epochs = _stage_epochs(cfg, config.num_epochs)
  if pretrain_epochs or clamp_epochs:
    return staged_method(task, config, make_loss, pretrain_epochs, clamp_epochs)
  return energy_method(task, config, config.gbi, make_loss, 'gbi')


METHOD = MethodSpec('spen', build, Section('spen', default_config), shared=('gbi',),
                    doc='the energy alone, SSVM margin on cost-augmented GBI outputs; prediction by GBI')
