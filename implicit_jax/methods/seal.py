"""SEAL (Lee et al. 2022): an energy E_phi (the loss-net) as a trainable loss for a task net F_theta, which then
predicts alone, in one forward pass (``F_theta(x) = sigmoid(logits)``).

    L_F(theta; phi) = lambda1 * mean_B E_phi(x, F_theta(x)) + lambda2 * MBCE(y, F_theta(x))            (Eq. 1)

The loss-net's loss L_E (``seal.energy_loss``) on outputs of the task net, p = F_theta(x), held constant:

* margin:       [Delta(p, y) - E(x, p) + E(x, y)]_+, Delta = implicit.cost * implicit.cost_scale      (Eq. 6)
* regression:   CE(s(y_bar, y), sigmoid(-E(x, y_bar))) over y_bar in {p, y}, s = soft F1               (Eq. 7)
* regression_s: the same over {p, clip(p + scale * eps_k, 0, 1) for k = 1..K, y}, eps_k ~ N(0, I)
* nce:          NCE ranking on y_0 = y and K samples y_k ~ P_N = prod_j Bernoulli(p_j), with
                s(y) = -E(x, y) - log P_N(y)                                                      (Eq. 8-9)

K = ``negatives.num_samples``, scale = ``negatives.scale``; the other ``negatives`` fields are not used here.

* ``build_dynamic`` (Eq. 4-5): every step, one phi step on L_E with samples from F_{theta_{t-1}}, then one
  theta step on L_F with E_{phi_t}.
* ``build_static`` (Eq. 3): for the first ``seal.pretrain_epochs`` the loss-net trains (margin: SPEN's
  cost-augmented GBI loss; regression: DVN's loss on GBI and adversarial outputs; regression_s and nce: as above)
  while the task net trains on MBCE alone, which makes it the cross-entropy noise model Psi of 'nce'. Then phi is
  frozen and theta trains on L_F.
* ``build_nce_gbi``: the energy trained by 'nce' against a noise net Psi trained on MBCE alongside, prediction by
  GBI on the energy (SEAL Table 1, "NCE ranking" with GBI); Psi's output is GBI's start with ``gbi.init='given'``.

Parameters: ``{'phi': energy, 'theta': task net}`` (``'psi'`` for the noise net of nce_gbi). Metrics: 'loss'
(L_E; 0 in seal_static once the energy is frozen, where it is not evaluated), 'loss_task' (the task net's loss:
MBCE while pretraining, then L_F), 'loss_noise' (nce_gbi: Psi's MBCE).
"""

import jax
import jax.numpy as jnp
import optax

from implicit_jax import losses, negatives
from implicit_jax.methods import Method, State, dvn, inference_net, make_optimizer, spen

ENERGY_LOSSES = ('margin', 'regression', 'regression_s', 'nce')
_SAMPLER = {'regression_s': 'gaussian', 'nce': 'straight_through'}  # losses that draw K samples, and how


def _num_samples(config, name):
  k = config.negatives.num_samples
  if isinstance(k, bool) or not isinstance(k, int) or k < 1:
    raise ValueError(f'negatives.num_samples must be a positive integer for the {name!r} energy loss, got {k!r}')
  return k


def _check_energy_loss(name, config):
  if name not in ENERGY_LOSSES:
    raise ValueError(f'seal.energy_loss: unknown energy loss {name!r}; choose one of {ENERGY_LOSSES}')
  if name == 'margin' and config.implicit.cost not in losses.COSTS:
    raise ValueError(f'implicit.cost: unknown cost {config.implicit.cost!r}; choose one of {sorted(losses.COSTS)}')
  if name in _SAMPLER:
    _num_samples(config, name)
  if name == 'regression_s' and not config.negatives.scale > 0:
    raise ValueError(f'negatives.scale must be > 0 for regression_s, got {config.negatives.scale}')


def _weights(config):
  """``(lambda1, lambda2)``, checked."""
  out = []
  for field in ('energy_weight', 'bce_weight'):
    w = config.seal[field]
    if isinstance(w, bool) or not isinstance(w, (int, float)) or not w >= 0:
      raise ValueError(f'seal.{field} must be a number >= 0, got {w!r}')
    out.append(float(w))
  if out == [0.0, 0.0]:
    raise ValueError('seal.energy_weight and seal.bce_weight are both 0: the task net would not train')
  return tuple(out)


def sample_energy_loss(energy, name, config):
  """``loss(phi, x, y, logits, noise) -> L_E`` for ``name`` on the task net's outputs ``logits`` [B, L], which
  are constants here (the loss-net update must not move the task net). ``noise`` [K, B, L] is from
  ``draw_noise`` (None for margin and regression)."""
  _check_energy_loss(name, config)
  cost_fn, cost_scale = losses.COSTS.get(config.implicit.cost), config.implicit.cost_scale
  scale = config.negatives.scale

  def loss(phi, x, y, logits, noise):
    logits = jax.lax.stop_gradient(logits)
    p = jax.nn.sigmoid(logits)
    if name == 'margin':
      return losses.ssvm_margin(energy.apply(phi, x, p), energy.apply(phi, x, y), cost_scale * cost_fn(p, y))
    if name == 'regression':
      return dvn.value_regression(energy, phi, x, jnp.stack([p, y]), y)
    if name == 'regression_s':
      perturbed = negatives.negatives(logits, noise, 'gaussian', 1.0, scale, include_mean=True)  # [K + 1, B, L]
      return dvn.value_regression(energy, phi, x, jnp.concatenate([perturbed, y[None]]), y)
    # nce: hard samples (straight_through's forward value); P_N is the task net's distribution, a constant.
    samples = jax.lax.stop_gradient(negatives.negatives(logits, noise, 'straight_through', 1.0, scale, False))
    return losses.nce_ranking(energy.apply(phi, x, samples), energy.apply(phi, x, y),
                              losses.bernoulli_log_prob(logits, samples), losses.bernoulli_log_prob(logits, y))

  return loss


def draw_noise(rng, name, config, shape):
  """The noise of ``name``'s K samples of ``shape`` [B, L]; None where it draws none."""
  if name not in _SAMPLER:
    return None
  return negatives.draw_noise(rng, _SAMPLER[name], config.negatives.num_samples, shape)


def net_logits(net, params, x, rng):
  """Training-mode logits (dropout from ``rng``)."""
  return net.apply(params, x, train=True, rngs={'dropout': rng})


def samples_objective(energy, net, name, config, key='theta'):
  """``objective(params, x, y, rng) -> loss(phi)``: L_E on samples from the net ``params[key]`` (constants)."""
  loss = sample_energy_loss(energy, name, config)

  def objective(params, x, y, rng):
    noise_rng, dropout_rng = jax.random.split(rng)
    logits = net_logits(net, params[key], x, dropout_rng)
    noise = draw_noise(noise_rng, name, config, y.shape)
    return lambda phi: loss(phi, x, y, logits, noise)

  return objective


def task_net_loss(energy, phi, logits, x, y, energy_weight, bce_weight):
  """``L_F = lambda1 * mean_B E_phi(x, sigmoid(logits)) + lambda2 * MBCE(logits, y)`` (Eq. 1)."""
  return energy_weight * jnp.mean(energy.apply(phi, x, jax.nn.sigmoid(logits))) + bce_weight * losses.bce(logits, y)


def energy_update(objective, opt):
  """``update(state, batch, rng) -> (state, L_E)``: one ``opt`` step on phi; the other parameters are untouched."""
  def update(state, batch, rng):
    phi = state.params['phi']
    loss, grad = jax.value_and_grad(objective(state.params, batch['x'], batch['y'], rng))(phi)
    updates, phi_state = opt.update(grad, state.opt_state['phi'], phi)
    return state.replace(params={**state.params, 'phi': optax.apply_updates(phi, updates)},
                         opt_state={**state.opt_state, 'phi': phi_state}), loss.astype(jnp.float32)
  return update


def task_update(energy, net, opt, key='theta'):
  """``update(state, batch, rng, lambda1, lambda2) -> (state, L_F)``: one ``opt`` step on ``params[key]`` with
  the energy fixed (phi is neither differentiated nor changed)."""
  def update(state, batch, rng, energy_weight, bce_weight):
    theta, phi = state.params[key], state.params['phi']
    loss_fn = lambda theta: task_net_loss(energy, phi, net_logits(net, theta, batch['x'], rng), batch['x'],
                                          batch['y'], energy_weight, bce_weight)
    loss, grad = jax.value_and_grad(loss_fn)(theta)
    updates, opt_state = opt.update(grad, state.opt_state[key], theta)
    return state.replace(params={**state.params, key: optax.apply_updates(theta, updates)},
                         opt_state={**state.opt_state, key: opt_state}), loss.astype(jnp.float32)
  return update


def _parts(task, config, key='theta'):
  """Energy, net, their optimisers, ``init`` and the task net's ``predict``."""
  energy, net = spen.make_energy(task, config), inference_net(task, config)
  energy_opt = make_optimizer(config.optimizer, 'optimizer')
  net_opt = make_optimizer(config.seal.task_optimizer, 'seal.task_optimizer')

  def init(rng):
    k_net, k_phi = jax.random.split(rng)
    x0 = jnp.zeros((1, task.num_features), jnp.float32)
    theta = net.init(k_net, x0)
    phi = energy.init(k_phi, x0, jnp.zeros((1, task.num_labels), jnp.float32))
    return State(step=jnp.zeros((), jnp.int32), params={key: theta, 'phi': phi},
                 opt_state={key: net_opt.init(theta), 'phi': energy_opt.init(phi)})

  def predict(params, x):
    return jax.nn.sigmoid(net.apply(params[key], x))

  return energy, net, energy_opt, net_opt, init, predict


def build_dynamic(task, config) -> Method:
  name = config.seal.energy_loss
  lam1, lam2 = _weights(config)
  energy, net, energy_opt, net_opt, init, predict = _parts(task, config)
  update_energy = energy_update(samples_objective(energy, net, name, config), energy_opt)
  update_task = task_update(energy, net, net_opt)

  def train_step(state, batch, rng):
    k_energy, k_task = jax.random.split(rng)
    state, loss = update_energy(state, batch, k_energy)                  # Eq. 4: samples from F_{theta_{t-1}}
    state, loss_task = update_task(state, batch, k_task, lam1, lam2)     # Eq. 5: against E_{phi_t}
    return state.replace(step=state.step + 1), {'loss': loss, 'loss_task': loss_task}

  return Method(init, train_step, predict, {'infnet': net, 'energy': energy})


def build_static(task, config) -> Method:
  name = config.seal.energy_loss
  _check_energy_loss(name, config)
  lam1, lam2 = _weights(config)
  pretrain = config.seal.pretrain_epochs
  if isinstance(pretrain, bool) or not isinstance(pretrain, int) or not 0 <= pretrain < config.num_epochs:
    raise ValueError(f'seal.pretrain_epochs must be an integer in [0, num_epochs={config.num_epochs}), '
                     f'got {pretrain!r}')
  pretrain_steps = pretrain * (len(task.splits['train'][0]) // config.batch_size)
  energy, net, energy_opt, net_opt, init, predict = _parts(task, config)
  if name in ('margin', 'regression'):
    # SPEN's / DVN's own loss, on GBI outputs: the static loss-net does not look at the task net.
    make_loss = spen.margin_loss(config) if name == 'margin' else dvn.regression_loss(config)
    objective = lambda params, x, y, rng: make_loss(energy, params['phi'], x, y)
  else:
    objective = samples_objective(energy, net, name, config)
  update_energy = energy_update(objective, energy_opt)
  update_task = task_update(energy, net, net_opt)

  def train_step(state, batch, rng):
    k_energy, k_task = jax.random.split(rng)
    pretraining = state.step < pretrain_steps
    # lax.cond, not where: the frozen phase skips the loss-net's (GBI) work. 'loss' reads 0 once frozen.
    state, loss = jax.lax.cond(pretraining, lambda s: update_energy(s, batch, k_energy),
                               lambda s: (s, jnp.zeros((), jnp.float32)), state)
    # Pretraining: MBCE alone (the task net is the CE noise model of 'nce'); then Eq. 1 with the frozen energy.
    state, loss_task = update_task(state, batch, k_task, jnp.where(pretraining, 0.0, lam1),
                                   jnp.where(pretraining, 1.0, lam2))
    return state.replace(step=state.step + 1), {'loss': loss, 'loss_task': loss_task}

  return Method(init, train_step, predict, {'infnet': net, 'energy': energy})


def build_nce_gbi(task, config) -> Method:
  energy, net, energy_opt, net_opt, init, _ = _parts(task, config, key='psi')
  update_energy = energy_update(samples_objective(energy, net, 'nce', config, key='psi'), energy_opt)
  update_noise = task_update(energy, net, net_opt, key='psi')
  predict_y = spen.gbi_predict(energy, config.gbi)

  def train_step(state, batch, rng):
    k_energy, k_noise = jax.random.split(rng)
    state, loss = update_energy(state, batch, k_energy)                  # Psi held constant
    state, loss_noise = update_noise(state, batch, k_noise, 0.0, 1.0)    # Psi: MBCE alone
    return state.replace(step=state.step + 1), {'loss': loss, 'loss_noise': loss_noise}

  def predict(params, x):
    start = jax.nn.sigmoid(net.apply(params['psi'], x)) if config.gbi.init == 'given' else None
    return predict_y(params['phi'], x, start)

  return Method(init, train_step, predict, {'noise': net, 'energy': energy})
