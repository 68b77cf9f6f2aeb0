"""What a method is, and what it is written with: the kit the built-in methods (``implicit_jax/methods/``) and the
plug-ins (``implicit_jax/plugins.py``) share, re-exported by both.

* ``Method`` and ``State``: the three functions the training loop calls and the state they carry (the interface
  ``implicit_jax/methods/__init__.py`` describes);
* ``MethodSpec`` and ``Section``: a method's declaration, written once in its module (its name, builder, config
  section with its defaults, the shared sections it reads), from which ``implicit_jax.methods`` derives every table;
* the helpers: optimisers of a config section, initial parameters, checked settings, the task score of a batch,
  the energies of several outputs in one call, the energy's dropout key.

It imports nothing of the package above ``batch``: the methods and the plug-ins both stand on it, and neither
imports the other through it.
"""

import math
from typing import Any, Callable, Hashable, Iterable, NamedTuple

import flax
import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import optax

from implicit_jax import batch as batch_lib

OPTIMIZERS = {'adam': optax.adam, 'sgd': optax.sgd, 'adamw': optax.adamw}


@flax.struct.dataclass
class State:
  step: jax.Array
  params: dict            # named parameter sets, e.g. {'theta': inference net, 'phi': energy}
  opt_state: dict         # one optimiser state per trained set (and any constant a method fixes at init)
  memory: Any = None      # what a method carries from one step to the next besides those: the implicit method's
                          # solver memory (bilevel.ImplicitSolve.init_memory); None for the others


class Method(NamedTuple):
  """A method's functions and what the training loop is to check of its step's metrics.

  ``limits``: metric name -> the ``config.divergence`` field that bounds its mean's magnitude (the run stops past
  it); None (the default): every metric named ``loss*`` against ``max_loss``. ``optional``: metrics that are NaN
  by design when not computed (not a fault). ``cause``: ``(bad, step) -> str``, what the method can say of the
  first step whose metrics ``bad`` (a set of names) are non-finite, added to the error that stops the run ('' for
  nothing); None: nothing to say. ``form``: ``step -> hashable``, for a step that takes several static forms, the
  form of outer step ``step`` (counted from 0 on the host): ``train_step`` then takes it as a fourth argument and
  the engine compiles one program per form; None (the default): one form."""
  init: Callable[[jax.Array], State]
  train_step: Callable[[State, dict, jax.Array], tuple[State, dict]]
  predict: Callable[[dict, dict], jax.Array]
  modules: dict = {}      # the Flax modules behind params, by role ('infnet', 'energy'): for analysis tools
  limits: dict | None = None
  optional: tuple = ()
  cause: Callable[[set, int], str] | None = None
  form: Callable[[int], Hashable] | None = None

  def divergence_limits(self, metrics: Iterable[str]) -> dict:
    """``{metric: config.divergence field}`` for the metrics of this method's step (``limits``)."""
    if self.limits is not None:
      return {name: self.limits[name] for name in metrics if name in self.limits}
    return {name: 'max_loss' for name in metrics if name.startswith('loss')}


# A module whose name ends so holds fixed parameters (pretrained word vectors kept as they are: the tagging task's
# model.freeze_embeddings). The network stops their gradient, so Adam's and SGD's updates of them are exactly zero;
# AdamW's decoupled decay, which reads the parameters rather than the gradient, is masked off them.
FROZEN = '_frozen'


def trainable(params) -> Any:
  """``params``' tree of booleans: False on the leaves of ``FROZEN`` modules."""
  return jax.tree_util.tree_map_with_path(
      lambda path, _: not any(str(getattr(k, 'key', '')).endswith(FROZEN) for k in path), params)


# Adam divides by sqrt(nu); at nu = 0 (a parameter whose gradient has always been zero, as first-layer rows of
# sparse features absent from a batch) sqrt has an infinite derivative and a gradient through the update is NaN.
# optax's eps_root, inside the square root, leaves the trajectory unchanged to float32 precision.
EPS_ROOT = 1e-16


def make_optimizer(cfg, field: str, differentiable: bool = False) -> optax.GradientTransformation:
  """``cfg`` has ``name`` and ``learning_rate`` (and, read by 'adamw' only, ``weight_decay``); errors name
  ``field`` (the config path). ``differentiable``: the updates will be differentiated through (Adam gets
  ``eps_root``)."""
  if cfg.name not in OPTIMIZERS:
    raise ValueError(f'{field}.name: unknown optimizer {cfg.name!r}; choose one of {sorted(OPTIMIZERS)}')
  # inf passes a comparison with 0 (and trained a few steps before the first non-finite update): finite, too
  if not (cfg.learning_rate > 0 and math.isfinite(cfg.learning_rate)):
    raise ValueError(f'{field}.learning_rate must be a finite number > 0, got {cfg.learning_rate}')
  if not (cfg.get('weight_decay', 0.0) >= 0 and math.isfinite(cfg.get('weight_decay', 0.0))):
    raise ValueError(f'{field}.weight_decay must be a finite number >= 0, got {cfg.weight_decay}')
  # A section without the field (the inner optimisers') leaves AdamW at optax's default decay.
  kwargs = {'weight_decay': cfg.weight_decay} if cfg.name == 'adamw' and 'weight_decay' in cfg else {}
  if cfg.name == 'adamw':
    kwargs['mask'] = trainable
  if differentiable and cfg.name in ('adam', 'adamw'):
    kwargs['eps_root'] = EPS_ROOT
  clip = cfg.get('clip_norm', 0.0)
  if isinstance(clip, bool) or not isinstance(clip, (int, float)) or not clip >= 0:
    raise ValueError(f'{field}.clip_norm must be a number >= 0 (0 = no clipping), got {clip!r}')
  optimizer = OPTIMIZERS[cfg.name](cfg.learning_rate, **kwargs)
  # Without clipping the optimiser and its state are exactly those of the records made before the field.
  return optax.chain(optax.clip_by_global_norm(clip), optimizer) if clip else optimizer


def optimizer_config(learning_rate: float = 1e-3) -> ml_collections.ConfigDict:
  # name: 'adam', 'sgd', 'adamw'; clip_norm > 0: gradients clipped to that global norm first (0 = off)
  return ml_collections.ConfigDict({'name': 'adam', 'learning_rate': learning_rate, 'clip_norm': 0.0})


def positive_int(value, field: str, minimum: int = 1) -> int:
  """``value`` checked to be an integer >= ``minimum``; the error names ``field``."""
  if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
    kind = 'positive' if minimum == 1 else 'non-negative' if minimum == 0 else f'>= {minimum}'
    raise ValueError(f'{field} must be a {kind} integer, got {value!r}')
  return value


def init_params(task: Any, rng: jax.Array, nets: dict) -> dict:
  """Initial parameters of ``nets`` (``{name: module}``, in order) on the task's example batch, one key each
  (``rng`` itself for a single net). The energy, by convention named ``'phi'``, is also given a zero output."""
  batch = task.example_batch()
  y0 = jnp.zeros(task.space.shape(batch), jnp.float32)
  keys = [rng] if len(nets) == 1 else list(batch_lib.split(rng, len(nets)))
  return {name: module.init(key, batch, y0) if name == 'phi' else module.init(key, batch)
          for key, (name, module) in zip(keys, nets.items())}


def steps_per_epoch(task: Any, config: Any) -> int:
  """Training steps in an epoch: every batch is full, the remainder of the shuffled split is left for the next."""
  return len(task.splits['train']['y']) // config.batch_size


def batch_score(task: Any, field: str = 'the task score') -> Callable:
  """``score(y_bar, batch) -> [..., B]``: the task score of outputs against the batch's gold ones (DVN's target);
  on a task with a reward, the reward on the unlabeled rows (``labeled`` 0) instead."""
  gold_score = task.space.score(task.score, field)
  reward = getattr(task, 'reward', None)  # duck-typed tasks (tests) may lack the field
  if reward is None:
    return lambda y_bar, batch: gold_score(y_bar, batch['y'], batch.get('mask'))

  def score(y_bar, batch):
    return jnp.where(batch['labeled'] > 0, gold_score(y_bar, batch['y'], batch.get('mask')),
                     reward(batch, y_bar))

  return score


def energies(energy_apply: Callable, phi: Any, batch: dict, *outputs: jax.Array) -> tuple:
  """The energies of several outputs of one batch, from one call: ``energy_apply(phi, batch, y)`` of each ``y``
  (shaped as ``batch['y']``, or with one leading axis of samples), as ``[B]`` or ``[K, B]``.

  An energy shares its pass over x (the feature net b(x), the tagging energy's BiLSTM) among the leading axes of
  its y (the energy contract); the gold output and the negatives of a loss, stacked, therefore pay for it once,
  where a call each would run it, and differentiate it, once per call."""
  rank = jnp.ndim(batch['y'])
  dtype = jnp.result_type(*(y.dtype for y in outputs if jnp.issubdtype(y.dtype, jnp.floating)), jnp.float32)
  stacked = [y.astype(dtype) if y.ndim > rank else y[None].astype(dtype) for y in outputs]
  ends = np.cumsum([y.shape[0] for y in stacked])
  parts = jnp.split(energy_apply(phi, batch, jnp.concatenate(stacked)), ends[:-1])
  return tuple(e if y.ndim > rank else e[0] for y, e in zip(outputs, parts))


def with_energy_key(batch: dict, rng: jax.Array) -> dict:
  """The training batch with ``energy_dropout`` (``implicit_jax/batch.py``), a key as data from which an energy
  with dropout (tagging's ``model.energy_dropout``; other energies ignore it) draws its mask: one mask for every
  energy evaluation of the step (gold, negatives, inference, the implicit method's inner steps and Hessian), so
  that E stays a function within the step, and none at evaluation, whose batches lack the key."""
  return dict(batch, energy_dropout=batch_lib.energy_dropout_key(rng))


class Section(NamedTuple):
  """A config section of the methods: its name and ``defaults()``, a fresh ConfigDict of its fields, each documented
  where ``defaults`` defines them. Declared once, in the module that reads it; every method reading the section
  names this one declaration (two declarations of one name are refused: ``implicit_jax.methods.register``)."""
  name: str
  defaults: Callable[[], ml_collections.ConfigDict]


class MethodSpec(NamedTuple):
  """A method as the package registers it, declared once in its module.

  ``name``: what ``config.method`` calls it (a plug-in's is its import path); ``build(task, config) -> Method``;
  ``section``: the ``Section`` it reads, None for the shared fields alone; ``shared``: the names of the shared
  sections it reads (``implicit_jax.methods.SHARED``: ``('gbi',)``); ``semi_supervised``: it learns from unlabeled
  training rows through the task's reward (``Task.reward``), where the others refuse a split that has them;
  ``doc``: one line, what it is (``implicit_jax.methods.describe`` lists them)."""
  name: str
  build: Callable[[Any, Any], Method]
  section: Section | None = None
  shared: tuple[str, ...] = ()
  semi_supervised: bool = False
  doc: str = ''
