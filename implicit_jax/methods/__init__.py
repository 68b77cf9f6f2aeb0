"""Training methods, one module per family, behind one small interface (``Method``); ``build`` picks by name.

A method is three pure functions: ``init(rng) -> State``, ``train_step(state, batch, rng) -> (state, metrics)``
(jitted once per batch shape by the training loop; ``metrics`` is a dict of scalars kept on device) and
``predict(params, batch) -> y`` (the relaxed output of ``task.space.shape(batch)``). Methods see a task only
through ``implicit_jax.tasks.Task``: its networks (``make_inference_net``, ``make_energy``), its output space
(relaxation, local loss, negatives, costs, GBI) and ``example_batch``; nothing here knows what x or y are. What a
method is and is written with (``Method``, ``State``, the optimisers, ...) is ``implicit_jax/method_kit.py``,
importable from here too.

Each method is declared once, in its module: a ``MethodSpec`` with its name, its builder, the config ``Section``
it reads (that section's name and defaults, declared once however many methods read it), the shared sections it
reads and whether it learns from unlabeled rows. ``BUILT_IN`` lists those declarations; every table here
(``REGISTRY``, ``SECTIONS``, ``SHARED``, ``SEMI_SUPERVISED``) is derived from them by ``register``, which refuses a
name registered twice and a section declared twice. ``describe()`` prints them, sections and all.

``config.method`` is a name of ``REGISTRY`` or the import path of a method module outside the package
(``implicit_jax/plugins.py`` says what it exports); ``resolve`` gives the declaration of either, a plug-in's checked
by the same rules (``plugins.method``).
"""

from typing import Any, Iterable

from implicit_jax import inference, plugins
from implicit_jax.method_kit import (EPS_ROOT, FROZEN, OPTIMIZERS, Method, MethodSpec, Section, State,  # noqa: F401
                                     batch_score, energies, init_params, make_optimizer, optimizer_config,
                                     positive_int, steps_per_epoch, trainable, with_energy_key)
from implicit_jax.methods import crf, dvn, feedforward, implicit, infnet, rspen, seal, spen

# The built-in methods, in the order their sections stand in a config (base_config): each declared in its module.
BUILT_IN = (implicit.METHOD, feedforward.METHOD, crf.METHOD, spen.METHOD, dvn.METHOD, seal.NCE_GBI, infnet.INFNET,
            infnet.INFNET_PLUS, seal.SEAL_STATIC, seal.SEAL_DYNAMIC, rspen.METHOD)
# Shared config sections, defined once at the top level and read by the methods that name them
# (``MethodSpec.shared``): one ``gbi`` for every method that runs gradient-based inference. (implicit's prediction
# refinement, ``implicit.refine``, is its own: it starts from A_theta(x) and has no init, tolerance or unroll.)
SHARED_SECTIONS = (Section('gbi', inference.default_config),)


def _where(fn) -> str:
  return f'{getattr(fn, "__module__", "?")}.{getattr(fn, "__qualname__", "?")}'


def register(specs: Iterable[MethodSpec], shared: Iterable[Section] = ()) -> tuple[dict, dict, dict]:
  """``(methods, sections, shared)`` of the declarations: ``{name: MethodSpec}``, ``{name: Section}`` of the
  methods' own sections (in the order of their first reader) and of the shared ones. A name registered twice, a
  section name with two declarations (two ``Section`` objects, wherever they were written) and a shared section
  that none declares are ValueErrors naming both places."""
  shared_sections = {}
  for section in shared:
    if section.name in shared_sections:
      first = shared_sections[section.name].defaults
      raise ValueError(f'shared section {section.name!r} is declared twice ({_where(first)} and '
                       f'{_where(section.defaults)})')
    shared_sections[section.name] = section
  methods, sections = {}, {}
  for spec in specs:
    if spec.name in methods:
      raise ValueError(f'method {spec.name!r} is registered twice ({_where(methods[spec.name].build)} and '
                       f'{_where(spec.build)}): a name means one method')
    unknown = sorted(set(spec.shared) - set(shared_sections))
    if unknown:
      raise ValueError(f'method {spec.name!r} reads the shared sections {unknown}, which none declares; choose from '
                       f'{sorted(shared_sections)}')
    if spec.section is not None:
      known = sections.get(spec.section.name) or shared_sections.get(spec.section.name)
      if known is None:
        sections[spec.section.name] = spec.section
      elif known is not spec.section:
        raise ValueError(f'config section {spec.section.name!r} is declared twice ({_where(known.defaults)} and '
                         f'{_where(spec.section.defaults)}, by method {spec.name!r}): declare it once and name that '
                         'declaration in every method that reads it')
    methods[spec.name] = spec
  return methods, sections, shared_sections


REGISTRY, SECTIONS, SHARED = register(BUILT_IN, SHARED_SECTIONS)
# Methods that learn from unlabeled training rows through the task's reward (Task.reward); the others train on
# gold outputs only and refuse a split with unlabeled rows.
SEMI_SUPERVISED = tuple(name for name, spec in REGISTRY.items() if spec.semi_supervised)


def resolve(method: str) -> MethodSpec:
  """The declaration ``config.method`` names: a built-in's (an alias wins over a module of the same name), or the
  plug-in's at that import path, checked and its section bound by ``plugins.method``: an unknown name, a path that
  does not import or lacks ``build`` are one-line ValueErrors naming config.method."""
  if method in REGISTRY:
    return REGISTRY[method]
  return plugins.method(method, REGISTRY, {**SECTIONS, **SHARED}, SHARED)


def section_of(method: str) -> str | None:
  """The config section ``method`` reads (None: only the shared fields)."""
  spec = resolve(method)
  return spec.section and spec.section.name


def shared_of(method: str) -> tuple[str, ...]:
  """The shared sections (``SHARED``) ``method`` reads."""
  return resolve(method).shared


def shared_sections() -> dict:
  """Every shared section with its defaults."""
  return {name: section.defaults() for name, section in SHARED.items()}


def default_sections() -> dict:
  """Every method family's config section with its defaults."""
  return {name: section.defaults() for name, section in SECTIONS.items()}


def describe() -> str:
  """The built-in methods and the sections they read, one line each, from their declarations."""
  lines = [f'{"method":13} {"section":9} {"shared":7} what it is']
  for spec in REGISTRY.values():
    semi = ' (learns from unlabeled rows too)' if spec.semi_supervised else ''
    lines.append(f'{spec.name:13} {spec.section.name if spec.section else "-":9} {",".join(spec.shared) or "-":7} '
                 f'{spec.doc}{semi}')
  lines.append('')
  lines.append(f'{"section":9} {"defaults":46} read by')
  for name, section in {**SHARED, **SECTIONS}.items():
    readers = [spec.name for spec in REGISTRY.values() if name in spec.shared or spec.section is section]
    lines.append(f'{name:9} {_where(section.defaults):46} {", ".join(readers)}')
  return '\n'.join(lines)


def build(task: Any, config: Any, spec: MethodSpec | None = None) -> Method:
  """The method ``config.method`` names, built for ``task``; ``spec``: its declaration when resolved already
  (``resolve(config.method)``). A split with unlabeled rows is refused to a method that does not learn from them,
  and what a builder returns is checked; every step gets the energy's key (``with_energy_key``)."""
  spec = spec or resolve(config.method)
  if getattr(task, 'unlabeled_rows', 0) and not spec.semi_supervised:
    raise ValueError(f'config.method={config.method!r} learns from gold outputs only, but the training split has '
                     f'{task.unlabeled_rows} unlabeled rows: set data.unlabeled=False, or use one of '
                     f'{SEMI_SUPERVISED}')
  method = spec.build(task, config)
  if not isinstance(method, Method):
    raise ValueError(f'config.method: {config.method!r}: build() returned a {type(method).__name__}, not an '
                     'implicit_jax.methods.Method')
  if method.form is not None and not callable(method.form):
    raise ValueError(f'config.method: {config.method!r}: build() returned a Method whose form is a '
                     f'{type(method.form).__name__}: it must be None or step -> hashable')
  train_step = method.train_step
  return method._replace(train_step=lambda state, batch, rng, *form: train_step(
      state, with_energy_key(batch, rng), rng, *form))
