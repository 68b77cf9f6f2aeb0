"""DVN (Gygli, Norouzi & Angelova 2017): the energy regresses the task score of outputs, prediction by GBI.

With our convention (lower energy = better) the value network is ``v(x, y) = sigmoid(-E_phi(x, y))``, fitted by
cross-entropy to the soft F1 of y against the gold output (``losses.dvn_regression``) on three kinds of y:

* inference outputs: GBI on E from ``gbi.init`` (what the model would predict now);
* adversarial outputs: from the inference output, ``gbi.steps`` projected *ascent* steps on the regression loss
  itself, the outputs the value network is currently most wrong about (Gygli et al., section 3.2);
* the gold output, score 1.

All three are constants for the phi update. Prediction: GBI on E (``spen.gbi_predict``).
"""

import jax
import jax.numpy as jnp
import optax

from implicit_jax import inference, losses
from implicit_jax.methods import Method
from implicit_jax.methods.spen import energy_method, gbi_predict


def value_regression(energy, phi, x, samples, y):
  """The regression loss on ``samples`` [S, B, L] (constants), each scored by its soft F1 against y (gold: 1)."""
  return losses.dvn_regression(energy.apply(phi, x, samples), losses.soft_f1(samples, y))


def regression_loss(config):
  """DVN's ``make_loss`` for ``energy_method``: inference, adversarial and gold outputs; SEAL-static's
  'regression' loss-net trains on it too."""
  gbi = config.gbi

  def make_loss(energy, phi, x, y):
    predict_y = gbi_predict(energy, gbi)
    y_inf = predict_y(phi, x) if gbi.init != 'given' else predict_y(phi, x, jnp.full(y.shape, 0.5))
    # Ascent on the per-example regression loss = descent on its negative, with the same GBI machinery.
    negative_loss = lambda y_bar: -optax.sigmoid_binary_cross_entropy(-energy.apply(phi, x, y_bar),
                                                                       losses.soft_f1(y_bar, y))
    y_adv, _ = inference.gradient_based_inference(negative_loss, y_inf, gbi.steps, gbi.step_size, gbi.rule)
    samples = jax.lax.stop_gradient(jnp.stack([y_inf, y_adv, y]))           # [3, B, L]
    return lambda phi: value_regression(energy, phi, x, samples, y)

  return make_loss


def build(task, config) -> Method:
  return energy_method(task, config, regression_loss(config))
