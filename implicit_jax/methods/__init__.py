"""Training methods, one module each, behind one small interface (``Method``); ``build`` picks by name.

A method is three pure functions: ``init(rng) -> State``, ``train_step(state, batch, rng) -> (state, metrics)``
(jitted once by the training loop; ``metrics`` is a dict of scalars kept on device) and
``predict(params, x) -> y_relaxed`` in [0, 1]^L.
"""

from typing import Any, Callable, NamedTuple

import flax
import jax
import optax

OPTIMIZERS = {'adam': optax.adam, 'sgd': optax.sgd, 'adamw': optax.adamw}


@flax.struct.dataclass
class State:
  step: jax.Array
  params: dict            # named parameter sets, e.g. {'theta': inference net, 'phi': energy}
  opt_state: dict         # one optimiser state per trained set


class Method(NamedTuple):
  init: Callable[[jax.Array], State]
  train_step: Callable[[State, dict, jax.Array], tuple[State, dict]]
  predict: Callable[[dict, jax.Array], jax.Array]
  modules: dict = {}      # the Flax modules behind params, by role ('infnet', 'energy'): for analysis tools


def make_optimizer(cfg, field: str) -> optax.GradientTransformation:
  """``cfg`` has ``name`` and ``learning_rate``; errors name ``field`` (the config path)."""
  if cfg.name not in OPTIMIZERS:
    raise ValueError(f'{field}.name: unknown optimizer {cfg.name!r}; choose one of {sorted(OPTIMIZERS)}')
  if not cfg.learning_rate > 0:
    raise ValueError(f'{field}.learning_rate must be > 0, got {cfg.learning_rate}')
  return OPTIMIZERS[cfg.name](cfg.learning_rate)


def inference_net(task: Any, config: Any):
  """``A_theta``: the MLP inference network every method shares, sized by ``config.model``."""
  from implicit_jax.networks import MLPInferenceNet  # pylint: disable=import-outside-toplevel
  m = config.model
  if not 0.0 <= m.dropout < 1.0:
    raise ValueError(f'model.dropout must be in [0, 1), got {m.dropout}')
  return MLPInferenceNet(task.num_labels, tuple(m.inference_hidden), m.activation, m.dropout)


# config.method -> (module of implicit_jax.methods, its builder); modules load on first use.
REGISTRY = {
    'implicit': ('implicit', 'build'),
    'feedforward': ('feedforward', 'build'),
    'spen': ('spen', 'build'),
    'dvn': ('dvn', 'build'),
    'nce_gbi': ('seal', 'build_nce_gbi'),
    'infnet': ('infnet', 'build_infnet'),
    'infnet_plus': ('infnet', 'build_infnet_plus'),
    'seal_static': ('seal', 'build_static'),
    'seal_dynamic': ('seal', 'build_dynamic'),
}


def build(task: Any, config: Any) -> Method:
  import importlib  # pylint: disable=import-outside-toplevel
  if config.method not in REGISTRY:
    raise ValueError(f'config.method: unknown method {config.method!r}; choose one of {sorted(REGISTRY)}')
  module, builder = REGISTRY[config.method]
  return getattr(importlib.import_module(f'implicit_jax.methods.{module}'), builder)(task, config)
