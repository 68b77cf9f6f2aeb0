"""SEAL (Lee et al. 2022): an energy E_phi (the loss-net) as a trainable loss for a task net F_theta, which then
predicts alone, in one forward pass (``F_theta(x)``, the output space's relaxation of its logits).

    L_F(theta; phi) = lambda1 * mean_B E_phi(x, F_theta(x)) + lambda2 * CE(y, F_theta(x))             (Eq. 1)

CE is the output space's local loss. The loss-net's loss L_E (``sample_energy_loss``) on outputs of the task net,
p = F_theta(x), held constant:

* margin:       [Delta(p, y) - E(x, p) + E(x, y)]_+, Delta = seal.cost * seal.cost_scale              (Eq. 6)
* regression:   CE(s(y_bar, y), sigmoid(-E(x, y_bar))) over y_bar in {p, y}, s = the task score      (Eq. 7)
* regression_s: the same over {p, p + noise_scale * eps_k put back in the output set, for k = 1..K, y}
* nce:          NCE ranking on y_0 = y and K hard samples y_k ~ P_N, the task net's distribution, with
                s(y) = -E(x, y) - log P_N(y)                                                      (Eq. 8-9)

K = ``seal.num_samples``.

* ``build_dynamic`` (Eq. 4-5): every step, one phi step on L_E with samples from F_{theta_{t-1}}, then one
  theta step on L_F with E_{phi_t}.
* ``build_static`` (Eq. 3): for the first ``seal.pretrain_epochs`` the loss-net trains (margin: SPEN's
  cost-augmented GBI loss; regression: DVN's loss on GBI and adversarial outputs, both with the shared ``config.gbi``;
  regression_s and nce: as above) while the task net trains on CE alone, which makes it the cross-entropy noise
  model Psi of 'nce'. Then phi is frozen and theta trains on L_F.
* ``build_nce_gbi`` (section ``nce_gbi``): the energy trained by 'nce' against a noise net Psi trained on CE
  alongside, prediction by GBI on the energy (SEAL Table 1, "NCE ranking" with GBI); Psi's output is GBI's
  start with ``gbi.init='given'``.

Parameters: ``{'phi': energy, 'theta': task net}`` (``'psi'`` for the noise net of nce_gbi). Metrics: 'loss'
(L_E; 0 in seal_static once the energy is frozen, where it is not evaluated), 'loss_task' (the task net's loss:
CE while pretraining, then L_F), 'loss_noise' (nce_gbi: Psi's CE).
"""

import jax
import jax.numpy as jnp
import ml_collections
import optax

from implicit_jax import batch as batch_lib, inference, losses
from implicit_jax.method_kit import (Method, MethodSpec, Section, State, batch_score, energies, init_params,
                                    make_optimizer, optimizer_config, positive_int, steps_per_epoch)
from implicit_jax.methods import dvn, spen

ENERGY_LOSSES = ('margin', 'regression', 'regression_s', 'nce')
NOISE_ON = ('output', 'logits')
_SAMPLER = {'regression_s': 'gaussian', 'nce': 'straight_through'}  # losses that draw K samples, and how


def nce_gbi_config() -> ml_collections.ConfigDict:
  """``config.nce_gbi``. Its prediction, GBI from the noise net's output with ``gbi.init='given'``, reads the shared
  ``config.gbi``."""
  c = ml_collections.ConfigDict()
  c.num_samples = 10              # K hard samples of the noise net per example in the NCE ranking loss
  c.noise_optimizer = optimizer_config()  # optimiser of the noise net Psi (the energy uses config.optimizer)
  return c


def default_config() -> ml_collections.ConfigDict:
  """``config.seal`` (seal_static, seal_dynamic). GBI (seal_static's margin and regression losses) reads the shared
  ``config.gbi``."""
  c = ml_collections.ConfigDict()
  c.energy_loss = 'nce'           # loss-net loss: 'margin', 'regression' (DVN), 'regression_s' (perturbations of
                                  # the task net's output) or 'nce' (hard samples of the task net, -log P_N term)
  c.energy_weight = 1.0           # lambda1 in the task-net loss lambda1 * E(x, F(x)) + lambda2 * CE
  c.ce_weight = 1.0               # lambda2
  c.pretrain_epochs = 5           # seal_static: epochs the loss-net trains first (the task net meanwhile trains on
                                  # CE alone: the noise model of 'nce'); then it is frozen. Must be < num_epochs
  c.cost = 'l1'                   # margin: Delta, a cost of the output space
  c.cost_scale = 1.0              # margin: multiplies Delta
  c.num_samples = 10              # regression_s and nce: K samples of the task net per example
  c.noise_scale = 0.1             # regression_s: standard deviation of the Gaussian perturbations
  c.noise_on = 'output'           # regression_s: perturb the relaxed output ('output', clipped back into the set)
                                  # or the logits ('logits': relax(logits + noise_scale * eps), SEAL's horses code)
  c.task_optimizer = optimizer_config()  # optimiser of the task net (the loss-net uses config.optimizer)
  return c


def _check_energy_loss(name, cfg, space, field='seal'):
  if name not in ENERGY_LOSSES:
    raise ValueError(f'{field}.energy_loss: unknown energy loss {name!r}; choose one of {ENERGY_LOSSES}')
  if name == 'margin':
    space.cost(cfg.cost, f'{field}.cost')
  if name in _SAMPLER:
    positive_int(cfg.num_samples, f'{field}.num_samples')
  if name == 'regression_s' and not cfg.noise_scale > 0:
    raise ValueError(f'{field}.noise_scale must be > 0 for regression_s, got {cfg.noise_scale}')
  if name == 'regression_s' and cfg.noise_on not in NOISE_ON:
    raise ValueError(f'{field}.noise_on: unknown {cfg.noise_on!r}; choose one of {NOISE_ON}')


def _weights(cfg):
  """``(lambda1, lambda2)``, checked."""
  out = []
  for field in ('energy_weight', 'ce_weight'):
    w = cfg[field]
    if isinstance(w, bool) or not isinstance(w, (int, float)) or not w >= 0:
      raise ValueError(f'seal.{field} must be a number >= 0, got {w!r}')
    out.append(float(w))
  if out == [0.0, 0.0]:
    raise ValueError('seal.energy_weight and seal.ce_weight are both 0: the task net would not train')
  return tuple(out)


def sample_energy_loss(task, energy, name, cfg, field='seal'):
  """``loss(phi, batch, logits, noise) -> L_E`` for ``name`` on the task net's outputs ``logits``, which are
  constants here (the loss-net update must not move the task net). ``noise`` [K, *y.shape] is from
  ``draw_noise`` (None for margin and regression). ``cfg``: the section with cost, num_samples, noise_scale."""
  space = task.space
  _check_energy_loss(name, cfg, space, field)
  cost_fn = space.cost(cfg.cost, f'{field}.cost') if name == 'margin' else None
  score_fn = batch_score(task) if name.startswith('regression') else None

  def loss(phi, batch, logits, noise):
    y, mask = batch['y'], batch.get('mask')
    logits = jax.lax.stop_gradient(logits)
    p = space.relax(logits)
    if name == 'margin':
      return losses.ssvm_margin(*energies(energy.apply, phi, batch, p, y), cfg.cost_scale * cost_fn(p, y, mask))
    if name == 'regression':
      return dvn.value_regression(energy, phi, batch, jnp.stack([p, y]), score_fn)
    if name == 'regression_s':  # [K + 1, *y.shape]: p, then its K perturbations
      perturbed = (jnp.concatenate([p[None], space.relax(logits + cfg.noise_scale * noise)])
                   if cfg.noise_on == 'logits' else space.negatives(logits, noise, 'gaussian', 1.0, cfg.noise_scale,
                                                                    True))
      return dvn.value_regression(energy, phi, batch, jnp.concatenate([perturbed, y[None]]), score_fn)
    # nce: hard samples (straight_through's forward value); P_N is the task net's distribution, a constant.
    samples = jax.lax.stop_gradient(space.negatives(logits, noise, 'straight_through', 1.0, 0.0, False))
    return losses.nce_ranking(*energies(energy.apply, phi, batch, samples, y),
                              space.log_prob(logits, samples, mask), space.log_prob(logits, y, mask))

  return loss


def draw_noise(space, rng, name, num_samples, shape):
  """The noise of ``name``'s K samples of ``shape``; None where it draws none."""
  if name not in _SAMPLER:
    return None
  return space.noise(rng, _SAMPLER[name], num_samples, shape)


def net_logits(net, params, batch, rng):
  """Training-mode logits (dropout from ``rng``)."""
  return net.apply(params, batch, train=True, rngs={'dropout': rng})


def samples_objective(task, energy, net, name, cfg, key='theta', field='seal'):
  """``objective(params, batch, rng) -> loss(phi)``: L_E on samples from the net ``params[key]`` (constants)."""
  loss = sample_energy_loss(task, energy, name, cfg, field)

  def objective(params, batch, rng):
    noise_rng, dropout_rng = batch_lib.split(rng)
    logits = net_logits(net, params[key], batch, dropout_rng)
    noise = draw_noise(task.space, noise_rng, name, cfg.num_samples, batch['y'].shape)
    return lambda phi: loss(phi, batch, logits, noise)

  return objective


def task_net_loss(space, energy, phi, logits, batch, energy_weight, ce_weight):
  """``L_F = lambda1 * mean_B E_phi(x, relax(logits)) + lambda2 * CE(logits, y)`` (Eq. 1)."""
  return (energy_weight * jnp.mean(energy.apply(phi, batch, space.relax(logits)))
          + ce_weight * space.local_loss(logits, batch['y'], batch.get('mask')))


def energy_update(objective, opt):
  """``update(state, batch, rng) -> (state, L_E)``: one ``opt`` step on phi; the other parameters are untouched."""
  def update(state, batch, rng):
    phi = state.params['phi']
    loss, grad = jax.value_and_grad(objective(state.params, batch, rng))(phi)
    updates, phi_state = opt.update(grad, state.opt_state['phi'], phi)
    return state.replace(params={**state.params, 'phi': optax.apply_updates(phi, updates)},
                         opt_state={**state.opt_state, 'phi': phi_state}), loss.astype(jnp.float32)
  return update


def task_update(space, energy, net, opt, key='theta'):
  """``update(state, batch, rng, lambda1, lambda2) -> (state, L_F)``: one ``opt`` step on ``params[key]`` with
  the energy fixed (phi is neither differentiated nor changed)."""
  def update(state, batch, rng, energy_weight, ce_weight):
    theta, phi = state.params[key], state.params['phi']
    loss_fn = lambda theta: task_net_loss(space, energy, phi, net_logits(net, theta, batch, rng), batch,
                                          energy_weight, ce_weight)
    loss, grad = jax.value_and_grad(loss_fn)(theta)
    updates, opt_state = opt.update(grad, state.opt_state[key], theta)
    return state.replace(params={**state.params, key: optax.apply_updates(theta, updates)},
                         opt_state={**state.opt_state, key: opt_state}), loss.astype(jnp.float32)
  return update


def _parts(task, config, net_optimizer, field, key='theta'):
  """Energy, net, their optimisers, ``init`` and the net's ``predict``."""
  energy, net = task.make_energy(), task.make_inference_net()
  energy_opt = make_optimizer(config.optimizer, 'optimizer')
  net_opt = make_optimizer(net_optimizer, field)

  def init(rng):
    params = init_params(task, rng, {key: net, 'phi': energy})
    return State(step=jnp.zeros((), jnp.int32), params=params,
                 opt_state={key: net_opt.init(params[key]), 'phi': energy_opt.init(params['phi'])})

  def predict(params, batch):
    return task.space.relax(net.apply(params[key], batch))

  return energy, net, energy_opt, net_opt, init, predict


def build_dynamic(task, config) -> Method:
  cfg = config.seal
  name = cfg.energy_loss
  lam1, lam2 = _weights(cfg)
  energy, net, energy_opt, net_opt, init, predict = _parts(task, config, cfg.task_optimizer, 'seal.task_optimizer')
  update_energy = energy_update(samples_objective(task, energy, net, name, cfg), energy_opt)
  update_task = task_update(task.space, energy, net, net_opt)

  def train_step(state, batch, rng):
    k_energy, k_task = batch_lib.split(rng)
    state, loss = update_energy(state, batch, k_energy)                  # Eq. 4: samples from F_{theta_{t-1}}
    state, loss_task = update_task(state, batch, k_task, lam1, lam2)     # Eq. 5: against E_{phi_t}
    return state.replace(step=state.step + 1), {'loss': loss, 'loss_task': loss_task}

  return Method(init, train_step, predict, {'infnet': net, 'energy': energy})


def build_static(task, config) -> Method:
  cfg, space = config.seal, task.space
  name = cfg.energy_loss
  _check_energy_loss(name, cfg, space)
  lam1, lam2 = _weights(cfg)
  pretrain = cfg.pretrain_epochs
  if isinstance(pretrain, bool) or not isinstance(pretrain, int) or not 0 <= pretrain < config.num_epochs:
    raise ValueError(f'seal.pretrain_epochs must be an integer in [0, num_epochs={config.num_epochs}), '
                     f'got {pretrain!r}')
  pretrain_steps = pretrain * steps_per_epoch(task, config)
  energy, net, energy_opt, net_opt, init, predict = _parts(task, config, cfg.task_optimizer, 'seal.task_optimizer')
  if name in ('margin', 'regression'):
    # SPEN's / DVN's own loss, on GBI outputs: the static loss-net does not look at the task net.
    make_loss = (spen.margin_loss(space, space.cost(cfg.cost, 'seal.cost'), cfg.cost_scale, config.gbi, 'gbi')
                 if name == 'margin' else
                 dvn.regression_loss(space, batch_score(task), config.gbi, 'gbi'))
    objective = lambda params, batch, rng: make_loss(energy, params['phi'], batch)
  else:
    objective = samples_objective(task, energy, net, name, cfg)
  update_energy = energy_update(objective, energy_opt)
  update_task = task_update(space, energy, net, net_opt)

  def train_step(state, batch, rng):
    k_energy, k_task = batch_lib.split(rng)
    pretraining = state.step < pretrain_steps
    # lax.cond, not where: the frozen phase skips the loss-net's (GBI) work. 'loss' reads 0 once frozen.
    state, loss = jax.lax.cond(pretraining, lambda s: update_energy(s, batch, k_energy),
                               lambda s: (s, jnp.zeros((), jnp.float32)), state)
    # Pretraining: CE alone (the task net is the CE noise model of 'nce'); then Eq. 1 with the frozen energy.
    state, loss_task = update_task(state, batch, k_task, jnp.where(pretraining, 0.0, lam1),
                                   jnp.where(pretraining, 1.0, lam2))
    return state.replace(step=state.step + 1), {'loss': loss, 'loss_task': loss_task}

  return Method(init, train_step, predict, {'infnet': net, 'energy': energy})


def build_nce_gbi(task, config) -> Method:
  cfg = config.nce_gbi
  energy, net, energy_opt, net_opt, init, _ = _parts(task, config, cfg.noise_optimizer, 'nce_gbi.noise_optimizer',
                                                      key='psi')
  nce = ml_collections.ConfigDict({'cost': 'l1', 'cost_scale': 1.0, 'num_samples': cfg.num_samples,
                                   'noise_scale': 0.0})
  update_energy = energy_update(samples_objective(task, energy, net, 'nce', nce, key='psi', field='nce_gbi'),
                                energy_opt)
  update_noise = task_update(task.space, energy, net, net_opt, key='psi')
  predict_y = inference.predictor(task.space, energy, config.gbi, 'gbi')

  def train_step(state, batch, rng):
    k_energy, k_noise = batch_lib.split(rng)
    state, loss = update_energy(state, batch, k_energy)                  # Psi held constant
    state, loss_noise = update_noise(state, batch, k_noise, 0.0, 1.0)    # Psi: CE alone
    return state.replace(step=state.step + 1), {'loss': loss, 'loss_noise': loss_noise}

  def predict(params, batch):
    start = task.space.relax(net.apply(params['psi'], batch)) if config.gbi.init == 'given' else None
    return predict_y(params['phi'], batch, start)

  return Method(init, train_step, predict, {'noise': net, 'energy': energy})


SECTION = Section('seal', default_config)
NCE_GBI = MethodSpec('nce_gbi', build_nce_gbi, Section('nce_gbi', nce_gbi_config), shared=('gbi',),
                     doc="the energy ranked against a noise net's hard samples (NCE); prediction by GBI")
SEAL_STATIC = MethodSpec('seal_static', build_static, SECTION, shared=('gbi',),
                         doc='SEAL: the energy a loss for a task net, trained first, then frozen (the net predicts)')
SEAL_DYNAMIC = MethodSpec('seal_dynamic', build_dynamic, SECTION,
                          doc='SEAL: the energy a loss for a task net, trained beside it (the net predicts)')
