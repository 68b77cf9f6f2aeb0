"""R-SPEN (Rooshenas, Kamath & McCallum 2018, "Training structured prediction energy networks with indirect
supervision"): the energy alone, trained to rank outputs as a reward ranks them; prediction by GBI.

Each step, per example: GBI on E (``config.gbi``) from ``gbi.init`` gives y_inf; ``rspen.num_samples`` discrete
outputs are drawn around it (the output space's hard samples of ``logits_of(y_inf) / temperature``: Gumbel-max per
token on tags, Bernoulli per unit on binary outputs; the local exploration of the search); on a labeled row the
gold output joins them. Every output is scored (the reward on unlabeled rows, the task score against the gold
on labeled ones, ``methods.batch_score``) and the energy pays the rank loss (``losses.reward_ranking_terms``)::

    [margin * (R_i - R_j) + E(x, y_i) - E(x, y_j)]_+   for every pair with R_i > R_j

The outputs are constants for the phi update.
"""

import jax
import jax.numpy as jnp
import ml_collections

from implicit_jax import batch as batch_lib, inference, losses
from implicit_jax.method_kit import Method, MethodSpec, Section, batch_score, positive_int
from implicit_jax.methods.spen import energy_method


def default_config() -> ml_collections.ConfigDict:
  """``config.rspen``; GBI (the samples' centre in training, prediction) reads the shared ``config.gbi``."""
  c = ml_collections.ConfigDict()
  c.num_samples = 8              # discrete outputs drawn around the GBI output per example and step
  c.temperature = 1.0            # of the sampling: lower stays closer to the GBI output
  c.margin = 1.0                 # rank margin per unit of reward difference
  return c


def rank_loss(task, cfg, gbi, field: str):
  space, score_fn = task.space, batch_score(task)
  inference.check(gbi.steps, gbi.step_size, gbi.rule, 'gbi')
  positive_int(cfg.num_samples, f'{field}.num_samples')
  if not cfg.temperature > 0:
    raise ValueError(f'{field}.temperature must be > 0, got {cfg.temperature}')

  def make_loss(energy, phi, batch):
    y = batch['y']
    energy_of = lambda y_bar: energy.apply(phi, batch, y_bar)
    start = space.initial(gbi.init if gbi.init != 'given' else 'half', y.shape, field='gbi.init')
    y_inf, _ = inference.gradient_based_inference(space, energy_of, start, gbi.steps, gbi.step_size, gbi.rule,
                                                  gbi.tol, gbi.unroll)
    key = batch_lib.from_data(batch['step_key'])  # the training step's key (spen.energy_method)
    noise = space.noise(key, 'straight_through', cfg.num_samples, y.shape)
    draws = space.samples(space.logits_of(y_inf) / cfg.temperature, noise, 'straight_through', 1.0, 0.0)
    samples = jax.lax.stop_gradient(jnp.concatenate([y_inf[None], draws, y[None]]))     # [S, *y.shape]
    labeled = batch.get('labeled', jnp.ones(y.shape[:1], y.dtype))
    valid = jnp.concatenate([jnp.ones((1 + cfg.num_samples,) + labeled.shape, y.dtype), labeled[None]])
    rewards = score_fn(samples, batch)
    return lambda phi: jnp.mean(losses.reward_ranking_terms(energy.apply(phi, batch, samples), rewards,
                                                            cfg.margin, valid))

  return make_loss


def build(task, config) -> Method:
  cfg = config.rspen
  return energy_method(task, config, config.gbi, rank_loss(task, cfg, config.gbi, 'rspen'), 'gbi')


METHOD = MethodSpec('rspen', build, Section('rspen', default_config), shared=('gbi',), semi_supervised=True,
                    doc="the energy alone, ranking outputs as the task's reward ranks them; prediction by GBI")
