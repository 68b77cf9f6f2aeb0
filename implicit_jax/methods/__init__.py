"""Training methods, one module per family, behind one small interface (``Method``); ``build`` picks by name.

A method is three pure functions: ``init(rng) -> State``, ``train_step(state, batch, rng) -> (state, metrics)``
(jitted once per batch shape by the training loop; ``metrics`` is a dict of scalars kept on device) and
``predict(params, batch) -> y`` (the relaxed output of ``task.space.shape(batch)``). Methods see a task only
through ``implicit_jax.tasks.Task``: its networks (``make_inference_net``, ``make_energy``), its output space
(relaxation, local loss, negatives, costs, GBI) and ``example_batch``; nothing here knows what x or y are.

Each family reads its own config section (``SECTION_MODULES``), defined with its defaults in its module
(``default_config``), plus the shared ``config.optimizer`` (the outer, energy optimiser) and the shared sections of
``SHARED`` it uses (``config.gbi``: gradient-based inference, one section for every method that runs it).

``config.method`` is a name of ``REGISTRY`` or the import path of a method module outside the package
(``implicit_jax/plugins.py`` says what it exports); ``plugin`` resolves one.
"""

import importlib
from typing import Any, Callable, Hashable, Iterable, NamedTuple

import flax
import jax
import ml_collections
import numpy as np
import optax

from implicit_jax import batch as batch_lib, plugins

OPTIMIZERS = {'adam': optax.adam, 'sgd': optax.sgd, 'adamw': optax.adamw}

# config.method -> (module of implicit_jax.methods, its builder, the config section it reads); modules load on use.
REGISTRY = {
    'implicit': ('implicit', 'build', 'implicit'),
    'feedforward': ('feedforward', 'build', None),
    'crf': ('crf', 'build', None),
    'spen': ('spen', 'build', 'spen'),
    'dvn': ('dvn', 'build', None),
    'nce_gbi': ('seal', 'build_nce_gbi', 'nce_gbi'),
    'infnet': ('infnet', 'build_infnet', 'infnet'),
    'infnet_plus': ('infnet', 'build_infnet_plus', 'infnet'),
    'seal_static': ('seal', 'build_static', 'seal'),
    'seal_dynamic': ('seal', 'build_dynamic', 'seal'),
    'rspen': ('rspen', 'build', 'rspen'),
}
# Methods that learn from unlabeled training rows through the task's reward (Task.reward); the others train on
# gold outputs only and refuse a split with unlabeled rows.
SEMI_SUPERVISED = ('implicit', 'dvn', 'rspen')
# config section -> the module whose default_config() defines it (its methods' settings, documented there).
SECTION_MODULES = {'implicit': 'implicit', 'spen': 'spen', 'nce_gbi': 'seal', 'infnet': 'infnet', 'seal': 'seal',
                   'rspen': 'rspen'}
# Shared config sections, defined once at the top level: section -> (its defaults, the built-in methods that read
# it). A plug-in method names those it reads in ``SHARED = ('gbi',)``. (implicit's prediction refinement,
# ``implicit.refine``, is its own: it starts from A_theta(x) and has no init, tolerance or unroll.)
SHARED = {'gbi': ('implicit_jax.inference', ('spen', 'dvn', 'rspen', 'nce_gbi', 'seal_static'))}


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
  if not cfg.learning_rate > 0:
    raise ValueError(f'{field}.learning_rate must be > 0, got {cfg.learning_rate}')
  if not cfg.get('weight_decay', 0.0) >= 0:
    raise ValueError(f'{field}.weight_decay must be >= 0, got {cfg.weight_decay}')
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
  import jax.numpy as jnp  # pylint: disable=import-outside-toplevel
  batch = task.example_batch()
  y0 = jnp.zeros(task.space.shape(batch), jnp.float32)
  keys = [rng] if len(nets) == 1 else list(batch_lib.split(rng, len(nets)))
  return {name: module.init(key, batch, y0) if name == 'phi' else module.init(key, batch)
          for key, (name, module) in zip(keys, nets.items())}


def steps_per_epoch(task: Any, config: Any) -> int:
  """Training steps in an epoch: every batch is full, the remainder of the shuffled split is left for the next."""
  return len(task.splits['train']['y']) // config.batch_size


def plugin(method: str):
  """The module (or object) of a method outside the package, named by its import path, or None for a built-in
  name; an unknown name or a path that does not import or lacks ``build`` is a ValueError naming config.method."""
  if method in REGISTRY:
    return None
  return plugins.method(method, REGISTRY)


def section_of(method: str) -> str | None:
  """The config section ``method`` reads (None: only the shared fields); a plug-in's is checked to come with its
  defaults (``plugins.method_section``)."""
  return REGISTRY[method][2] if method in REGISTRY else plugins.method_section(method)[1]


def shared_of(method: str) -> tuple[str, ...]:
  """The shared sections (``SHARED``) ``method`` reads."""
  target = plugin(method)
  if target is None:
    return tuple(name for name, (_, readers) in SHARED.items() if method in readers)
  names = tuple(getattr(target, 'SHARED', ()))
  unknown = sorted(set(names) - set(SHARED))
  if unknown:
    raise ValueError(f'config.method: {method!r}: SHARED names {unknown}, not shared sections; choose from '
                     f'{sorted(SHARED)}')
  return names


def shared_sections() -> dict:
  """Every shared section with its defaults."""
  return {name: importlib.import_module(module).default_config() for name, (module, _) in SHARED.items()}


def semi_supervised(method: str) -> bool:
  """Whether ``method`` learns from unlabeled training rows (``SEMI_SUPERVISED``, or a plug-in's own flag)."""
  target = plugin(method)
  return method in SEMI_SUPERVISED if target is None else bool(getattr(target, 'SEMI_SUPERVISED', False))


def default_sections(method: str | None = None) -> dict:
  """Every method family's config section with its defaults, and the section a plug-in ``method`` defines
  (``plugins.method_section``)."""
  sections = {section: importlib.import_module(f'implicit_jax.methods.{module}').default_config(section)
              for section, module in SECTION_MODULES.items()}
  if method is not None:
    _, section, defaults = plugins.method_section(method)
    if section is not None and section not in sections:
      sections[section] = defaults
  return sections


def batch_score(task: Any, field: str = 'the task score') -> Callable:
  """``score(y_bar, batch) -> [..., B]``: the task score of outputs against the batch's gold ones (DVN's target);
  on a task with a reward, the reward on the unlabeled rows (``labeled`` 0) instead."""
  import jax.numpy as jnp  # pylint: disable=import-outside-toplevel
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
  import jax.numpy as jnp  # pylint: disable=import-outside-toplevel
  rank = jnp.ndim(batch['y'])
  dtype = jnp.result_type(*(y.dtype for y in outputs if jnp.issubdtype(y.dtype, jnp.floating)), jnp.float32)
  stacked = [y.astype(dtype) if y.ndim > rank else y[None].astype(dtype) for y in outputs]
  ends = np.cumsum([y.shape[0] for y in stacked])
  parts = jnp.split(energy_apply(phi, batch, jnp.concatenate(stacked)), ends[:-1])
  return tuple(e if y.ndim > rank else e[0] for y, e in zip(outputs, parts))


def build(task: Any, config: Any) -> Method:
  target = plugin(config.method)
  if getattr(task, 'unlabeled_rows', 0) and not semi_supervised(config.method):
    raise ValueError(f'config.method={config.method!r} learns from gold outputs only, but the training split has '
                     f'{task.unlabeled_rows} unlabeled rows: set data.unlabeled=False, or use one of '
                     f'{SEMI_SUPERVISED}')
  if target is None:
    module, builder, _ = REGISTRY[config.method]
    method = getattr(importlib.import_module(f'implicit_jax.methods.{module}'), builder)(task, config)
  else:
    method = target.build(task, config)
    if not isinstance(method, Method):
      raise ValueError(f'config.method: {config.method!r}: build() returned a {type(method).__name__}, not an '
                       'implicit_jax.methods.Method')
    if method.form is not None and not callable(method.form):
      raise ValueError(f'config.method: {config.method!r}: build() returned a Method whose form is a '
                       f'{type(method.form).__name__}: it must be None or step -> hashable')
  train_step = method.train_step
  return method._replace(train_step=lambda state, batch, rng, *form: train_step(
      state, with_energy_key(batch, rng), rng, *form))


def with_energy_key(batch: dict, rng: jax.Array) -> dict:
  """The training batch with ``energy_dropout`` (``implicit_jax/batch.py``), a key as data from which an energy
  with dropout (tagging's ``model.energy_dropout``; other energies ignore it) draws its mask: one mask for every
  energy evaluation of the step (gold, negatives, inference, the implicit method's inner steps and Hessian), so
  that E stays a function within the step, and none at evaluation, whose batches lack the key."""
  return dict(batch, energy_dropout=batch_lib.energy_dropout_key(rng))
