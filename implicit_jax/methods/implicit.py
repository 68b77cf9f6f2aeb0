"""The paper's method (Shankar & Piratla, Algorithm 1): inference net trained on L_aux, energy on the implicit
gradient of L_prim.

    L_aux(theta, phi)  = CE(y, A_theta(x)) + lambda * E_phi(x, A_theta(x))                        (Eq. 6)
    L_prim(theta, phi) = energy loss on the gold y and negatives y_bar_k drawn from A_theta(x)
                         (ssvm, perceptron, cd, nce, dvn: ``losses.py``; samplers: the output space's)

CE is the output space's local loss (binary cross-entropy for Bernoulli units, token cross-entropy for tags),
A_theta(x) its relaxation of the
inference net's logits. Prediction is ``A_theta(x)``; with ``implicit.refine.steps > 0`` it is refined by that
many GBI steps on E_phi (Remark 3 of the paper, which does not use it).

Each outer step: ``inner_steps`` optimiser steps on theta from the previous theta (warm start, optimiser state
carried too), then one step on phi with ``dL_prim/dphi`` from ``bilevel.ImplicitSolve``; all in one jitted call.

Why ``proximal``: the implicit function theorem differentiates a *stationary point* of the inner problem, but a
few steps on a fresh batch of Eq. 6 leave theta far from one (docs/stationarity.md: ||grad|| falls to 0.71 of its
start after 5 Adam steps on bibtex), so the implicit term is the derivative of a point the step never reaches.
``L_aux + mu/2 ||theta - theta_t||^2`` has a stationary point near the warm start that a few gradient steps of
size ``1 / lambda_max`` (``inner_curvature_step``) do reach, and its IFT derivative is exact:
``dtheta*/dphi = -(H + mu I)^{-1} d_theta d_phi L_aux``. The inference net then moves by one stochastic proximal
point step per batch, ``1 / mu`` playing the part of its learning rate.

On a task with a reward (indirect supervision, Cora), L_prim is the primary loss (ssvm or cd) on the labeled rows
and, on the unlabeled rows, the rank loss of the negatives ordered by the reward (R-SPEN's, margin
``reward_margin``); L_aux's cross-entropy has no gold there (zero), its energy term pulls A_theta(x) to what the
energy has learned from the reward.

The sampling noise of the negatives is drawn first and passed as data, so L_prim is a deterministic,
differentiable function of (theta, phi) within the step.
"""

import dataclasses
from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp
import ml_collections
import optax

from implicit_jax import batch as batch_lib, bilevel, inference, losses, spaces
from implicit_jax.method_kit import (Method, MethodSpec, Section, State, energies, init_params, make_optimizer,
                                    optimizer_config, positive_int)


def default_config() -> ml_collections.ConfigDict:
  """``config.implicit``."""
  c = ml_collections.ConfigDict()
  c.inner_steps = 5              # T_inner: optimiser steps on L_aux per outer step (warm started)
  c.aux_lambda = 1.0             # lambda in L_aux = CE + lambda * E (Eq. 6)
  c.primary_loss = 'ssvm'        # L_prim: 'ssvm', 'cd', 'nce', 'dvn' or 'perceptron' (losses.py); 'dvn' regresses
                                 # the task's score (Task.score, one of its output space's scores)
  c.cost = 'l1'                  # Delta(y_bar, y) of ssvm and cd, a cost of the task's output space (spaces/)
  c.cost_scale = 1.0             # multiplies Delta
  c.inner_optimizer = optimizer_config()  # the optimiser of theta in the inner loop
  c.inner_curvature_step = 0     # k > 0: the inner optimiser is gradient descent with step 1 / lambda_max(H), the
                                 # inner Hessian's largest |eigenvalue| at the warm start estimated by k power
                                 # iterations (HVPs) every outer step; inner_optimizer.learning_rate caps the step
                                 # (and its name is ignored); with proximal > 0, Nesterov momentum set from the
                                 # condition number lambda_max / proximal. 0: inner_optimizer as configured
  c.proximal = 0.0               # mu: the inner problem is L_aux + mu/2 ||theta - theta_t||^2, theta_t the step's
                                 # warm start (stochastic proximal point, as iMAML). With mu above the most negative
                                 # curvature of L_aux the inner problem is strongly convex: T steps can reach its
                                 # stationary point, and the IFT's Hessian is H + mu I exactly. 0: Eq. 6 as written
  c.negatives = ml_collections.ConfigDict()  # negatives y_bar drawn from A_theta(x) (the output space's samplers)
  c.negatives.num_samples = 0    # sampled negatives per example (K)
  c.negatives.include_mean = True  # also use the relaxed prediction A_theta(x) itself
  c.negatives.sampler = 'concrete'  # 'concrete' (relaxed), 'straight_through' (hard forward) or 'gaussian'
  c.negatives.temperature = 0.5  # concrete temperature
  c.negatives.scale = 0.1        # gaussian noise scale
  c.solver = bilevel.default_config()  # the inverse-HVP solver: bilevel.Solver's fields and defaults, each
                                 # documented there. name: 'normal_cg', 'minres', 'gcr' (MINRES's iterate,
                                 # products fused: the cheapest), 'cg', 'neumann', 'dense', 'identity', 'none' (no
                                 # implicit term) or 'unrolled' (backprop through the inner steps)
  c.unroll = False               # inner steps and solver iterations as straight-line code, not XLA loops: the same
                                 # numbers, longer compiles; XLA:CPU runs convolution gradients inside loops several
                                 # times slower (jax-ml/jax#12868), so the convolutional tasks set it
  c.reward_margin = 1.0          # tasks with a reward (Cora): L_prim on an unlabeled row is the rank loss of its
                                 # negatives by reward (losses.reward_ranking_terms), margin * (R_i - R_j) apart
  c.refine = ml_collections.ConfigDict()  # prediction (Remark 3): GBI on E_phi from A_theta(x)
  c.refine.steps = 0             # 0 = A_theta(x), the paper's choice; k > 0 = k GBI steps
  c.refine.step_size = 0.1
  c.refine.rule = 'projected'    # 'projected' or 'mirror'
  return c


class Losses(NamedTuple):
  """The two losses of the bi-level problem, ``f(theta, phi, batch) -> scalar``, and the networks behind them.
  ``batch`` carries the inputs, the gold ``y``, the negatives' ``noise``, the ``dropout`` key (``step_batch``) and
  the energy's ``energy_dropout`` key (``methods.build``)."""

  l_aux: Callable
  l_prim: Callable
  infnet: object
  energy: object


def train_logits(infnet, theta, batch):
  # One dropout mask per outer step, shared by the inner steps, the Hessian and L_prim: within a step both
  # losses are deterministic functions of (theta, phi), as the implicit function theorem needs.
  return infnet.apply(theta, batch, train=True, rngs={'dropout': batch['dropout']})


def make_losses(task, config) -> Losses:
  """``L_aux`` (Eq. 6) and ``L_prim`` for ``config.implicit``, on the task's networks and output space."""
  cfg, neg, space = config.implicit, config.implicit.negatives, task.space
  name = cfg.primary_loss
  if name not in losses.PRIMARY_LOSSES:
    raise ValueError(f'implicit.primary_loss: unknown loss {name!r}; choose one of {losses.PRIMARY_LOSSES}')
  cost_fn = space.cost(cfg.cost, 'implicit.cost')
  score_fn = space.score(task.score, 'the task score') if name == 'dvn' else None
  spaces.check_sampler(neg.sampler)
  if neg.num_samples < 0 or (neg.num_samples == 0 and not neg.include_mean):
    raise ValueError('implicit.negatives: need num_samples > 0 or include_mean=True (no negative to contrast '
                     'with)')
  reward = getattr(task, 'reward', None)
  if reward is not None and name not in ('ssvm', 'cd'):
    raise ValueError(f'implicit.primary_loss={name!r}: a task with a reward (unlabeled rows ranked by it) takes '
                     f"'ssvm' or 'cd' on its labeled rows")
  infnet, energy = task.make_inference_net(), task.make_energy()
  lam = cfg.aux_lambda

  def l_aux(theta, phi, batch):
    logits = train_logits(infnet, theta, batch)
    mask = batch.get('mask')
    return (space.local_loss(logits, batch['y'], mask)
            + lam * jnp.mean(energy.apply(phi, batch, space.relax(logits))))

  def l_prim(theta, phi, batch):
    y, mask = batch['y'], batch.get('mask')
    logits = train_logits(infnet, theta, batch)
    y_neg = space.negatives(logits, batch['noise'], neg.sampler, neg.temperature, neg.scale,
                            neg.include_mean)                                 # [K, *y.shape]
    e_neg, e_gold = energies(energy.apply, phi, batch, y_neg, y)                   # [K, B], [B]: one pass over x
    if reward is not None:
      cost = cfg.cost_scale * cost_fn(y_neg, y, mask)
      supervised = (losses.ssvm_margin_terms if name == 'ssvm' else losses.contrastive_divergence_terms)(
          e_neg, e_gold, cost)
      ranked = losses.reward_ranking_terms(e_neg, reward(batch, y_neg), cfg.reward_margin)
      labeled = batch['labeled']
      return jnp.mean(labeled * supervised + (1.0 - labeled) * ranked)
    if name == 'ssvm':
      return losses.ssvm_margin(e_neg, e_gold, cfg.cost_scale * cost_fn(y_neg, y, mask))
    if name == 'cd':
      return losses.contrastive_divergence(e_neg, e_gold, cfg.cost_scale * cost_fn(y_neg, y, mask))
    if name == 'perceptron':
      return losses.perceptron(e_neg, e_gold)
    if name == 'dvn':
      # The gold output is a training sample too (score 1), as in Gygli et al.: without it nothing anchors the
      # energy of good outputs, and the inference net followed the energy into a collapse (bibtex: test score
      # 0.10, against 0.40 with it).
      return losses.dvn_regression(jnp.concatenate([e_gold[None], e_neg]),
                                   jnp.concatenate([jnp.ones_like(e_gold)[None], score_fn(y_neg, y, mask)]))
    # nce: P_N is the inference net's current distribution, a fixed noise model at this step (SEAL Eq. 9).
    fixed = jax.lax.stop_gradient(logits)
    return losses.nce_ranking(e_neg, e_gold, space.log_prob(fixed, y_neg, mask), space.log_prob(fixed, y, mask))

  return Losses(l_aux, l_prim, infnet, energy)


def proximal(l_aux: Callable, mu: float) -> Callable:
  """``L_aux + mu/2 ||theta - batch['anchor']||^2``: the anchor is data, so the IFT treats it as a constant."""
  def l_prox(theta, phi, batch):
    diff = jax.tree.map(jnp.subtract, theta, batch['anchor'])
    return l_aux(theta, phi, batch) + 0.5 * mu * sum(jnp.vdot(d, d) for d in jax.tree.leaves(diff))
  return l_prox


def curvature(l_aux: Callable, theta, phi, batch: dict, iterations: int, unroll: bool = False) -> jax.Array:
  """The largest |eigenvalue| of ``d_theta d_theta L_aux`` at theta, by ``iterations`` power iterations
  started from the gradient (one linearisation, then one tangent pass per HVP)."""
  grad, product = jax.linearize(lambda t: jax.grad(l_aux)(t, phi, batch), theta)
  return jax.lax.stop_gradient(bilevel.power_iteration(product, grad, iterations, unroll))


def step_batch(batch: dict, rng: jax.Array, space, negatives_config) -> dict:
  """The batch as the losses see it at this step: with the negatives' noise and the dropout key drawn from
  ``rng`` (the step's key; ``implicit_jax/batch.py`` lists what a batch holds)."""
  noise_rng, dropout_rng = batch_lib.split(rng)
  noise = space.noise(noise_rng, negatives_config.sampler, negatives_config.num_samples, batch['y'].shape)
  return dict(batch, noise=noise, dropout=batch_lib.as_data(dropout_rng))


class InnerProblem(NamedTuple):
  """The inner problem of ``config.implicit`` as one outer step poses it.

  ``l_aux`` is Eq. 6, with the proximal term when ``proximal > 0``; ``optimizer`` the inner optimiser;
  ``start(theta, theta_state, phi, batch) -> (batch, theta_state0, metrics)`` the step's batch (with the proximal
  anchor), the optimiser state the T steps start from (the carried one; a fresh one at the curvature step with its
  rate and momentum set) and what to log about it.
  """

  l_aux: Callable
  optimizer: optax.GradientTransformation
  start: Callable


def inner_problem(l_aux: Callable, config, differentiable: bool = False) -> InnerProblem:
  """``InnerProblem`` for ``config.implicit`` on Eq. 6's ``l_aux`` (``make_losses``); errors name the field.
  ``differentiable``: the inner steps will be differentiated through (the unrolled route)."""
  cfg = config.implicit
  positive_int(cfg.inner_curvature_step, 'implicit.inner_curvature_step', minimum=0)
  mu = cfg.proximal
  if isinstance(mu, bool) or not isinstance(mu, (int, float)) or not mu >= 0:
    raise ValueError(f'implicit.proximal must be a number >= 0, got {mu!r}')
  if mu:
    l_aux = proximal(l_aux, mu)
  cap = cfg.inner_optimizer.learning_rate
  if cfg.inner_curvature_step:
    if not cap > 0:
      raise ValueError(f'implicit.inner_optimizer.learning_rate must be > 0 (the cap of the curvature step), got '
                       f'{cap}')
    optimizer = optax.inject_hyperparams(optax.sgd)(learning_rate=cap, momentum=0.0, nesterov=bool(mu))
  else:
    optimizer = make_optimizer(cfg.inner_optimizer, 'implicit.inner_optimizer', differentiable=differentiable)

  def start(theta, theta_state, phi, batch):
    if mu:
      batch = dict(batch, anchor=theta)  # data, not a variable: the proximal centre of this step
    if not cfg.inner_curvature_step:
      return batch, theta_state, {}
    lam = curvature(l_aux, theta, phi, batch, cfg.inner_curvature_step, cfg.unroll)
    lr = jnp.minimum(cap, 1.0 / jnp.maximum(lam, 1e-12))
    # Each step is a new problem: the momentum buffer starts at zero. With mu > 0 the problem is (about)
    # mu-strongly convex and 1/lr-smooth, and Nesterov's momentum for condition number kappa = 1 / (lr mu)
    # cuts the steps to a given stationarity from O(kappa) to O(sqrt(kappa)).
    root = jnp.sqrt(jnp.maximum(1.0 / (lr * mu), 1.0)) if mu else jnp.ones(())
    momentum = (root - 1.0) / (root + 1.0)
    state = optimizer.init(theta)
    state = state._replace(hyperparams=dict(state.hyperparams, learning_rate=lr, momentum=momentum))
    return batch, state, {'lambda_max': lam, 'inner_lr': lr, 'inner_momentum': momentum}

  return InnerProblem(l_aux, optimizer, start)


def named_field(fn: Callable) -> Callable:
  """``fn`` whose errors about the solver (a plug-in's protocol, checked as the step is traced) name the config
  field, ``implicit.solver.*``, as the errors of its settings do."""
  def call(*args):
    try:
      return fn(*args)
    except ValueError as e:
      if str(e).startswith('solver.'):
        raise ValueError(f'implicit.{e}') from None
      raise
  return call


def build(task, config) -> Method:
  cfg = config.implicit
  positive_int(cfg.inner_steps, 'implicit.inner_steps')
  positive_int(cfg.refine.steps, 'implicit.refine.steps', minimum=0)
  l_aux, l_prim, infnet, energy = make_losses(task, config)
  l_aux, inner_opt, start = inner_problem(l_aux, config, differentiable=cfg.solver.name == 'unrolled')
  outer_opt = make_optimizer(config.optimizer, 'optimizer')
  try:
    solver = dataclasses.replace(bilevel.Solver.from_config(cfg.solver), unroll=bool(cfg.unroll))
  except ValueError as e:
    raise ValueError(f'implicit.{e}') from None
  inner = bilevel.outer_solve(l_aux, inner_opt, cfg.inner_steps, solver)
  outer_step = named_field(inner.step)
  space = task.space

  def init(rng):
    params = init_params(task, rng, {'theta': infnet, 'phi': energy})
    opt_state = {'theta': inner_opt.init(params['theta']), 'phi': outer_opt.init(params['phi'])}
    # What the solver carries between steps (bilevel.ImplicitSolve.init_memory), or None.
    memory = inner.init_memory(params['theta'], params['phi'])
    return State(step=jnp.zeros((), jnp.int32), params=params, opt_state=opt_state, memory=memory)

  def train_step(state, batch, rng, form=None):
    p, s = state.params, state.opt_state
    batch = step_batch(batch, rng, space, cfg.negatives)
    batch, theta_state0, extra = start(p['theta'], s['theta'], p['phi'], batch)
    (loss, (theta, theta_state, aux_losses)), grad, diag, memory = outer_step(
        l_prim, p['phi'], p['theta'], theta_state0, batch, state.memory, form)
    updates, phi_state = outer_opt.update(grad, s['phi'], p['phi'])
    phi = optax.apply_updates(p['phi'], updates)
    metrics = dict(diag, loss_prim=loss, loss_aux=aux_losses[-1], **extra)
    return State(step=state.step + 1, params={'theta': theta, 'phi': phi},
                 opt_state={'theta': theta_state, 'phi': phi_state}, memory=memory), metrics

  refine = None
  if cfg.refine.steps:
    gbi = ml_collections.ConfigDict(dict(cfg.refine, init='given', tol=0.0, unroll=cfg.unroll))
    refine = inference.predictor(space, energy, gbi, 'implicit.refine')

  def predict(params, batch):
    y = space.relax(infnet.apply(params['theta'], batch))
    # Remark 3: A_theta(x) refined by gradient descent on the learned energy.
    return refine(params['phi'], batch, y) if refine else y

  def cause(bad, step):
    if not bad <= FROM_SOLVER:
      return ''
    fix = ('a solver must return a finite u ~= (H + damping I)^-1 v (implicit_jax/plugins.py)'
           if solver.name not in bilevel.SOLVERS else
           'raise implicit.solver.damping (neumann: lower alpha), or choose another solver')
    return (f'the implicit term comes from the inverse-HVP solver implicit.solver.name={solver.name!r}, non-finite '
            f'at step {step} while the losses were finite: {fix}')

  # A reused term picked on the host (solver.reuse 'r<k>h'): the steps that solve and those that reuse are two
  # programs (``form``).
  form = inner.fresh if solver.reuse_policy.by_host else None
  return Method(init, train_step, predict, {'infnet': infnet, 'energy': energy}, limits=LIMITS, optional=OPTIONAL,
                cause=cause, form=form)


# What training checks of the step's metrics (methods.Method): the two losses and the solver's residual each
# against their config.divergence bound; the residual when not tracked and a plug-in solver's uncounted
# iterations are NaN by design.
LIMITS = {'loss_prim': 'max_loss', 'loss_aux': 'max_loss', 'residual': 'max_residual'}
OPTIONAL = ('residual', 'iterations')
# What the implicit term makes (bilevel's diagnostics; the explicit term is read as the gradient less it): non-finite
# while the losses are finite, it comes from the inverse-HVP solver's u (``cause``).
FROM_SOLVER = frozenset({'implicit_norm', 'cosine', 'explicit_norm'})


METHOD = MethodSpec('implicit', build, Section('implicit', default_config), semi_supervised=True,
                    doc='the paper: the inference net on L_aux, the energy on the implicit gradient of L_prim')
