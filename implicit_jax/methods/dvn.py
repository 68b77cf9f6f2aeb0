"""DVN (Gygli, Norouzi & Angelova 2017): the energy regresses the task score of outputs, prediction by GBI.

With our convention (lower energy = better) the value network is ``v(x, y) = sigmoid(-E_phi(x, y))``, fitted by
cross-entropy to the task's score of y against the gold output (``losses.dvn_regression``; ``Task.score``) on
three kinds of y:

* inference outputs: GBI on E from ``gbi.init`` (what the model would predict now);
* adversarial outputs: from the inference output, ``gbi.steps`` projected *ascent* steps on the regression
  loss itself, the outputs the value network is currently most wrong about (Gygli et al., section 3.2);
* the gold output, score 1.

On a task with a reward (Cora) the unlabeled rows' target is the reward of y instead of its score against the
gold (``methods.batch_score``): DVN regressing the reward, as the paper's DVN row.

All three are constants for the phi update. Prediction: GBI on E (``inference.predictor``). DVN has no section of
its own: it reads the shared ``config.gbi`` (inference and adversarial outputs in training, prediction).
"""

import jax
import jax.numpy as jnp
import optax

from implicit_jax import inference, losses
from implicit_jax.method_kit import Method, MethodSpec, batch_score
from implicit_jax.methods.spen import energy_method


def value_regression(energy, phi, batch, samples, score_fn):
  """The regression loss on ``samples`` [S, *y.shape] (constants), each scored against the gold y."""
  return losses.dvn_regression(energy.apply(phi, batch, samples), score_fn(samples, batch))


def regression_loss(space, score_fn, gbi, field: str):
  """DVN's ``make_loss`` for ``energy_method``: inference, adversarial and gold outputs; SEAL-static's
  'regression' loss-net trains on it too."""
  inference.check(gbi.steps, gbi.step_size, gbi.rule, field)
  space.check_init(gbi.init, f'{field}.init')

  def make_loss(energy, phi, batch):
    y = batch['y']
    start = space.initial(gbi.init, y.shape, jnp.full(y.shape, 0.5) if gbi.init == 'given' else None,
                          f'{field}.init')
    energy_of = lambda y_bar: energy.apply(phi, batch, y_bar)
    y_inf, _ = inference.gradient_based_inference(space, energy_of, start, gbi.steps, gbi.step_size, gbi.rule,
                                                  gbi.tol, gbi.unroll)
    # Ascent on the per-example regression loss = descent on its negative, with the same GBI machinery.
    negative_loss = lambda y_bar: -optax.sigmoid_binary_cross_entropy(-energy_of(y_bar), score_fn(y_bar, batch))
    y_adv, _ = inference.gradient_based_inference(space, negative_loss, y_inf, gbi.steps, gbi.step_size, gbi.rule,
                                                  unroll=gbi.unroll)
    samples = jax.lax.stop_gradient(jnp.stack([y_inf, y_adv, y]))           # [3, *y.shape]
    return lambda phi: value_regression(energy, phi, batch, samples, score_fn)

  return make_loss


def build(task, config) -> Method:
  gbi = config.gbi
  score_fn = batch_score(task)
  return energy_method(task, config, gbi, regression_loss(task.space, score_fn, gbi, 'gbi'), 'gbi')


METHOD = MethodSpec('dvn', build, shared=('gbi',), semi_supervised=True,
                    doc='the energy regresses the task score (the reward on unlabeled rows); prediction by GBI')
