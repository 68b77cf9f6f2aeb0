"""The feed-forward baseline: the inference network trained by MBCE alone (no energy)."""

import jax
import jax.numpy as jnp
import optax

from implicit_jax import losses
from implicit_jax.methods import Method, State, inference_net, make_optimizer


def build(task, config) -> Method:
  net = inference_net(task, config)
  opt = make_optimizer(config.optimizer, 'optimizer')

  def init(rng):
    theta = net.init(rng, jnp.zeros((1, task.num_features), jnp.float32))
    return State(step=jnp.zeros((), jnp.int32), params={'theta': theta}, opt_state={'theta': opt.init(theta)})

  def train_step(state, batch, rng):
    logits = lambda theta: net.apply(theta, batch['x'], train=True, rngs={'dropout': rng})
    loss_fn = lambda theta: losses.bce(logits(theta), batch['y'])
    loss, grad = jax.value_and_grad(loss_fn)(state.params['theta'])
    updates, opt_state = opt.update(grad, state.opt_state['theta'], state.params['theta'])
    theta = optax.apply_updates(state.params['theta'], updates)
    return State(step=state.step + 1, params={'theta': theta}, opt_state={'theta': opt_state}), {'loss': loss}

  def predict(params, x):
    return jax.nn.sigmoid(net.apply(params['theta'], x))

  return Method(init, train_step, predict, {'infnet': net})
