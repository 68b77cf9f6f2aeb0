"""The feed-forward baseline: the inference network trained by its output space's cross-entropy alone, no energy
(MBCE on multi-label data, token cross-entropy on tags)."""

import jax
import jax.numpy as jnp
import optax

from implicit_jax.method_kit import Method, MethodSpec, State, init_params, make_optimizer


def build(task, config) -> Method:
  net, space = task.make_inference_net(), task.space
  opt = make_optimizer(config.optimizer, 'optimizer')

  def init(rng):
    theta = init_params(task, rng, {'theta': net})['theta']
    return State(step=jnp.zeros((), jnp.int32), params={'theta': theta}, opt_state={'theta': opt.init(theta)})

  def train_step(state, batch, rng):
    logits = lambda theta: net.apply(theta, batch, train=True, rngs={'dropout': rng})
    loss_fn = lambda theta: space.local_loss(logits(theta), batch['y'], batch.get('mask'))
    loss, grad = jax.value_and_grad(loss_fn)(state.params['theta'])
    updates, opt_state = opt.update(grad, state.opt_state['theta'], state.params['theta'])
    theta = optax.apply_updates(state.params['theta'], updates)
    return State(step=state.step + 1, params={'theta': theta}, opt_state={'theta': opt_state}), {'loss': loss}

  def predict(params, batch):
    return space.relax(net.apply(params['theta'], batch))

  return Method(init, train_step, predict, {'infnet': net})


METHOD = MethodSpec('feedforward', build,
                    doc='the inference net by cross-entropy alone, no energy (config.optimizer trains it)')
