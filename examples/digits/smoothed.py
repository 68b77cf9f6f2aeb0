r"""A method outside the package, with a config section of its own: the inference network trained by
cross-entropy against label-smoothed targets, ``(1 - amount) y + amount / C`` for one class among C per example
or position (``Multiclass`` and ``Categorical`` output spaces).

``config.method = 'smoothed'`` names this module by its import name, as ``config.task = 'digits'`` does the task;
``--config.method=smoothed`` adds its section, ``smoothed``, to a config file made for another method:
  PYTHONPATH=examples/digits python -m implicit_jax.main --config=examples/digits/config.py \
      --config.method=smoothed --config.smoothed.amount=0.2 --workdir=/tmp/digits_smoothed
It is written with the helpers ``implicit_jax/plugins.py`` lists for methods.
"""

import jax
import jax.numpy as jnp
import ml_collections
import optax

from implicit_jax.plugins import Method, MethodSpec, Section, State, init_params, make_optimizer


def default_config():
  c = ml_collections.ConfigDict()
  c.amount = 0.1  # probability mass moved from the gold class onto all C classes evenly, in [0, 1)
  return c


def build(task, config):
  amount, space = config.smoothed.amount, task.space
  if space.name not in ('multiclass', 'categorical'):
    raise ValueError(f'config.method=smoothed: smooths one class among C; task {task.name!r} has the {space.name} '
                     'output space')
  if not 0 <= amount < 1:
    raise ValueError(f'config.smoothed.amount must be in [0, 1), got {amount!r}')
  net, opt = task.make_inference_net(), make_optimizer(config.optimizer, 'optimizer')

  def init(rng):
    theta = init_params(task, rng, {'theta': net})['theta']
    return State(step=jnp.zeros((), jnp.int32), params={'theta': theta}, opt_state={'theta': opt.init(theta)})

  def train_step(state, batch, rng):
    target = (1 - amount) * batch['y'] + amount / space.units  # batch['y']: the gold, one-hot
    logits = lambda theta: net.apply(theta, batch, train=True, rngs={'dropout': rng})
    loss, grad = jax.value_and_grad(lambda theta: space.local_loss(logits(theta), target, batch.get('mask')))(
        state.params['theta'])
    updates, opt_state = opt.update(grad, state.opt_state['theta'], state.params['theta'])
    theta = optax.apply_updates(state.params['theta'], updates)
    return State(step=state.step + 1, params={'theta': theta}, opt_state={'theta': opt_state}), {'loss': loss}

  def predict(params, batch):
    return space.relax(net.apply(params['theta'], batch))

  return Method(init, train_step, predict, {'infnet': net})


# Declared as the built-in methods are: its name, its builder, and the config section it reads with its defaults.
METHOD = MethodSpec('smoothed', build, Section('smoothed', default_config))
