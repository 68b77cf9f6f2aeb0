"""Configs: the package's defaults, what a run records, and how a workdir's record is compared and read back.

A config has these sections, each defined once, with its defaults and their documentation, where named:

* the core fields, ``core_config`` (seed, task, method, ``optimizer``, batches, epochs, logging, devices,
  ``divergence``), read by every run (``optimizer``: the outer, energy optimiser of every method; the whole net
  for feedforward);
* ``data`` and ``model``, the task's: ``implicit_jax.tasks.<family>.default_config``;
* the methods' sections (``implicit``, ``spen``, ``seal``, ...) and the shared ones (``gbi``: gradient-based
  inference, one section for every method that runs it), each declared once, with its defaults, by the module of
  the methods that read it (``implicit_jax.methods``: ``MethodSpec``, ``Section``). Which method reads which is
  derived from those declarations alone: ``python -c 'from implicit_jax import methods; print(methods.describe())'``
  prints it. A plug-in method may bring a new section and name the shared ones it reads
  (``implicit_jax/plugins.py``).

One ``gbi`` for every method that runs GBI: a published row whose method needs other GBI settings than its config
file's sets them in its own overrides (the rows written in the config files: bibtex's spen and dvn rows), so that
a row's config says what it runs.

``base_config(task, method)`` assembles the defaults, every field documented where it is defined. Config files in
``configs/`` start from it and override what changes; ``from_file`` loads one by path, from any working
directory (a config that builds on a sibling passes its own ``__file__``). A run records ``recorded(config)``:
the core fields, the task's sections, its method's section and the shared ones it reads, nothing it does not read.
(``base_config`` keeps every method's section, so that ``--config.method=`` can switch the method of a config
file after it is built; what a run records, and is compared on, is only what its method reads.)

Resuming. ``compare`` decides whether a config may continue a recorded run: the fields that change a run's
results must agree; ``MUTABLE`` ones (how long it runs, what it prints, where it runs) may change; a field the
record lacks, added to the code since, must hold its default. ``load`` reads a record back into a full config,
defaults filling what it lacks. Both rest on one rule instead of a migration table: **a new field's default
reproduces what the code did before the field existed.**

Records of the earlier layouts are translated once by ``upgrade``: the first format's (before tasks were
plug-ins: top-level ``solver``, ``negatives`` and ``gbi`` that every method shared), the second's (a ``gbi``
inside each GBI method's section: ``spen.gbi``, ``dvn.gbi``, ``rspen.gbi``, ``nce_gbi.gbi``, ``seal.gbi``) and the
third's (the implicit term's reuse as two fields, ``implicit.solver.refresh`` and ``refresh_by``, now the one
``implicit.solver.reuse``). That history is the methods', kept with them in ``implicit_jax/wiring.py``, which also
names what replaced a retired field when a config file or command line still sets it.

The task's and the methods' sections reach this module through one object, the registered plug-ins
(``engine/registry.py``; the package's, ``implicit_jax/wiring.py``, registered by ``implicit_jax/__init__.py``):
nothing here imports ``implicit_jax.tasks`` or ``implicit_jax.methods``. They resolve a config's task and method
once into ``Parts`` (``parts_of``; ``check`` returns the config's): its sections, what it records and how it
compares, and how its task and method are made, which a run passes down instead of the names. A run record is its
own recipe: ``from_record`` (and ``from_file`` on a ``.json``) reads one back as the config that reruns it.
"""

from __future__ import annotations

import copy
import dataclasses
import json
from pathlib import Path
from typing import Any, Callable

import ml_collections

from implicit_jax.engine import registry, rows

# Fields a resumed run may change: how long it runs, what it prints, and where (a run may move to another
# machine; the data-parallel step computes the same function, up to the order of float sums).
MUTABLE = ('num_epochs', 'log_every', 'checkpoint_every', 'checkpoint_epoch_ends', 'num_devices', 'eval_batch_size',
           'divergence.max_loss', 'divergence.max_residual', 'config_file', 'overrides', 'chosen_on')
TASK_SECTIONS = ('data', 'model')


def core_config() -> ml_collections.ConfigDict:
  c = ml_collections.ConfigDict()
  c.seed = 0                  # parameter init, data order and sampling all derive from it
  c.task = 'synthetic'        # the task family (implicit_jax/tasks: 'synthetic', 'mlc', 'tagging', 'segmentation',
                              # 'citations', or the import path of a task module: implicit_jax/plugins.py); its
                              # sections data and model come with it, so a config file names its task once
  c.method = 'implicit'       # a method of implicit_jax/methods ('implicit', the paper's; each declared in its
                              # module with the section it reads: methods.describe() lists them), or the import
                              # path of a method module (implicit_jax/plugins.py)
  c.optimizer = ml_collections.ConfigDict()  # the outer optimiser: energy phi (the whole net for 'feedforward')
  c.optimizer.name = 'adam'   # 'adam', 'sgd' or 'adamw'
  c.optimizer.learning_rate = 1e-3
  c.optimizer.weight_decay = 1e-4  # 'adamw' only: decoupled weight decay (optax's default)
  c.optimizer.clip_norm = 0.0  # > 0: gradients clipped to this global norm before the update (SEAL's horses
                              # configs clip); 0 = no clipping
  c.batch_size = 32           # global batch, split over the devices of the ('data',) mesh
  c.eval_batch_size = 1024    # prediction batch for dev/test (the last one padded and masked: one compile)
  c.num_devices = 0           # devices in the data-parallel mesh; 0 = all (every host's, when multi-host)
  c.num_epochs = 10
  c.log_every = 100           # steps between progress lines (the only host synchronisation)
  c.checkpoint_every = 1000   # steps between checkpoints in the workdir (also one at every epoch end); 0 = epoch
                              # ends only. Rerunning with the same workdir resumes from the latest checkpoint
  c.checkpoint_epoch_ends = True  # a checkpoint at every epoch end too; False: only every checkpoint_every steps
                              # and after the last epoch, for epochs of a second or so, where a save each epoch
                              # (about 0.1 s) is a large share of the run (a kill then loses up to
                              # checkpoint_every steps, redone on resume)
  c.divergence = ml_collections.ConfigDict()  # a run whose numbers explode stops, naming the quantity, the step
                              # and the last good checkpoint (as a NaN does); 0 turns a check off
  c.divergence.max_loss = 1e6       # largest |loss| logged (every metric named loss*) before the run is stopped
  c.divergence.max_residual = 1e3   # largest relative residual ||H u - v|| / ||v|| of the implicit solver
  c.config_file = ''          # the --config that made the run, 'path[:arg]' (e.g. 'configs/bibtex.py:mbce'):
                              # where its values came from, so a record names the row it reproduces. Set by the
                              # command line (or the script that loaded it); '' for a config built in code
  c.overrides = ()            # the --config.<field>=<value> flags given with it, as the command line parsed them:
                              # with config_file, the command that makes the run again (set by the command line)
  c.chosen_on = ''            # the dataset on whose dev split this config's settings were chosen, as a shipped
                              # dataset's config file says ('bibtex' in configs/bibtex.py); '' = none named (settings
                              # chosen across datasets, as configs/custom.py's, or a config built in code). A task
                              # may refuse other data with them (mlc: data.name=custom); it changes no result
  return c


@dataclasses.dataclass(frozen=True)
class Parts:
  """A config's task and method, resolved once by the registered plug-ins (``parts_of``: ``engine/registry.py``; the
  package's are ``implicit_jax/wiring.py``), and what this module derives from them. ``check`` returns a config's;
  a run passes it down instead of looking its task and method up again.

  ``task``, ``method``: the names (``config.task``, ``config.method``); ``sections``: ``{name: ConfigDict}``, every
  section a config of them holds besides the core fields, with its defaults, in a config's order: the task's
  (``data``, ``model``), the shared ones, every method family's and the method's own; ``own``: the section the
  method reads (None: the shared fields only); ``shared``: the shared sections it reads; ``make_task(config)``: the
  task, its data read; ``build_method(task, config)``: the method, built for it."""
  task: str
  method: str
  sections: dict
  own: str | None
  shared: tuple[str, ...]
  make_task: Callable[[Any], Any]
  build_method: Callable[[Any, Any], Any]

  def defaults(self) -> ml_collections.ConfigDict:
    """Every default (``base_config``): the core fields and a copy of the sections (a config made from them
    changes no other)."""
    c = core_config()
    c.task, c.method = self.task, self.method
    for name, section in self.sections.items():
      c[name] = copy.deepcopy(section)
    return c

  def check_sections(self, config) -> None:
    """Refuses a config that lacks the method's own section or whose task sections are not the task's fields."""
    if self.own and self.own not in config:  # a plug-in's own section: the config was built for another method
      raise ValueError(f'config.{self.own}: missing, the section method {config.method!r} reads; start the config '
                       f'from base_config(task, {config.method!r})')
    for name in TASK_SECTIONS:
      want, have = set(flatten(config_json(self.sections[name]))), set(flatten(config_json(config.get(name) or {})))
      if want != have:
        extra, missing = sorted(have - want), sorted(want - have)
        raise ValueError(f'config.{name} does not hold the fields of task {config.task!r} (unexpected: {extra}, '
                         f'missing: {missing}); start the config from a config file of that task')

  def recorded(self, config) -> dict:
    """What a run of ``config`` records and is compared on (``recorded``): the core fields, the task's sections,
    the method's own section and the shared sections it reads."""
    keep = set(core_config().keys()) | set(TASK_SECTIONS) | set(self.shared) | {self.own}
    return {k: v for k, v in config_json(config).items() if k in keep}

  def compare(self, stored: dict, record: dict) -> list[str]:
    """``compare``'s differences of the run whose record is ``record`` (``recorded``) from ``stored``."""
    check_known(stored)
    old, new = flatten(upgrade(stored)), flatten(record)
    defaults = flatten(self.recorded(self.defaults()))
    diffs = []
    for key in sorted(set(old) | set(new)):
      if key in MUTABLE or key not in new:  # a section the method does not read is not recorded, nor compared
        continue
      if key not in old:
        if new[key] != defaults.get(key, _ABSENT):
          diffs.append(f'{key} (not recorded: the run used its default {defaults.get(key)!r}, now {new[key]!r})')
      elif old[key] != new[key]:
        diffs.append(f'{key} (stored {old[key]!r}, now {new[key]!r})')
    return diffs


def parts_of(task: str, method: str) -> Parts:
  """The ``Parts`` of ``task`` and ``method`` (``config.task``, ``config.method``), by the registered plug-ins; an
  unknown task or method is a ValueError naming the field (the task's first)."""
  return registry.plugins().parts(task, method)


def base_config(task: str = 'synthetic', method: str = 'implicit') -> ml_collections.ConfigDict:
  """Every default: the core fields, ``task``'s data and model sections, the shared sections, every method family's
  section and a plug-in method's own (of the registered plug-ins, ``engine/registry.py``). Locked: a config file
  that sets a field the config lacks (a misspelt ``c.optimizer.learning_rat = 0.5``, an unknown ``c.no_such = 3``) is
  refused at that line, naming the nearest field, instead of training at the default and recording the typo."""
  config = parts_of(task, method).defaults()
  config.lock()
  return config


def add_method_section(config: ml_collections.ConfigDict, method: str) -> None:
  """Adds to ``config`` the sections ``base_config(config.task, method)`` has and ``config`` lacks, with their
  defaults: a plug-in method's own section, absent from a config file built for another method. What
  ``--config.method=<import path>`` does before the command line's other overrides apply (``engine/cli.py``), so
  that they may set its fields; the section is resolved as ``base_config`` resolves it (``parts_of``: a plug-in's
  declaration, read by ``implicit_jax/plugins.py``'s ``method``)."""
  defaults = base_config(config.task, method)
  missing = [name for name in defaults if name not in config]
  with config.unlocked():
    for name in missing:
      config[name] = defaults[name]


def from_file(path, relative_to: str | None = None, arg: str | None = None) -> ml_collections.ConfigDict:
  """``get_config()`` of a config file, or ``get_config(arg)``: ``arg`` given, or ``path`` of the form
  ``'file.py:arg'`` as ``--config=`` takes it (ml_collections passes what follows the first ':' to
  ``get_config``; big_vision's convention for a config file holding several experiments). A relative ``path`` is
  taken from the folder of the file ``relative_to`` when given (configs building on a sibling pass their
  ``__file__``), else the working directory."""
  if arg is None and isinstance(path, str) and ':' in path:
    path, arg = path.split(':', 1)
  p = Path(path)
  if relative_to is not None and not p.is_absolute():
    p = Path(relative_to).resolve().parent / p
  if not p.is_file():
    raise FileNotFoundError(f'config file {p} not found')
  if p.suffix == '.json':
    if arg is not None:
      raise ValueError(f'{path}: a run record is one config, it takes no argument (got {arg!r})')
    return from_record(path)
  module = rows.load_module(p)
  return module.get_config() if arg is None else module.get_config(arg)


def from_record(path) -> ml_collections.ConfigDict:
  """The config of a run record: a published run's JSON (``docs/**/runs*/*.json``, ``docs/sweeps/**.json``: its
  ``config``) or a workdir's ``config.json``, read back by ``load`` (an earlier format upgraded, a field the record
  lacks at its default, which reproduces what the code did before the field existed). The record is the run's
  recipe: ``--config=<record>.json`` reruns it, ``--config.seed=``, ``--config.data.data_dir=`` and any other
  override applying as to a config file. ``config_file`` names the record, so the rerun's own record says what it
  reproduces; the record's ``overrides`` are part of its values already, and the rerun records its own."""
  try:
    record = json.loads(Path(path).read_text())
  except json.JSONDecodeError as e:
    raise ValueError(f'{path}: not JSON ({e})') from None
  stored = record.get('config', record) if isinstance(record, dict) else None
  if not isinstance(stored, dict) or 'task' not in stored:
    raise ValueError(f'{path}: not a run record (no config: a run\'s JSON holds one under "config", a workdir\'s '
                     'config.json is one)')
  try:
    config = load(stored)
  except NewerRecord as e:
    raise NewerRecord(f'{path} {e}') from None
  config.config_file, config.overrides = str(path), ()
  return config


# ----------------------------------------------------------------------------------------------- checks


def check(config) -> Parts:
  """Rejects out-of-range core fields, an unknown task or method, task sections that are not the task's and a
  missing section of the method's, before anything is built. Returns the config's ``Parts`` (its task and method,
  resolved here once by the registered plug-ins), for the run to pass down."""
  for field in ('batch_size', 'num_epochs', 'log_every', 'eval_batch_size'):
    value = config.get(field)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
      raise ValueError(f'config.{field} must be a positive integer, got {value!r}')
  for field in ('max_loss', 'max_residual'):
    value = config.divergence.get(field)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
      raise ValueError(f'config.divergence.{field} must be a number >= 0 (0 = no check), got {value!r}')
  seed = config.get('seed')
  if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**63:  # numpy's and JAX's range
    raise ValueError(f'config.seed must be an integer in [0, 2**63), got {seed!r}')
  every = config.get('checkpoint_every', 0)
  if isinstance(every, bool) or not isinstance(every, int) or every < 0:
    raise ValueError(f'config.checkpoint_every must be a non-negative integer, got {every!r}')
  ends = config.get('checkpoint_epoch_ends', True)
  if not isinstance(ends, bool):
    raise ValueError(f'config.checkpoint_epoch_ends must be True or False, got {ends!r}')
  if not ends and not every:
    raise ValueError('config.checkpoint_epoch_ends=False needs config.checkpoint_every > 0: else the run saves '
                     'nothing before its last epoch, and a kill loses all of it')
  parts = parts_of(config.task, config.method)  # an unknown task or method is named here
  parts.check_sections(config)
  return parts


# -------------------------------------------------------------------------------------------- records


def flatten(d: dict, prefix: str = '') -> dict:
  """``{'a': {'b': 1}} -> {'a.b': 1}``: the dotted names configs are overridden and compared by."""
  out = {}
  for k, v in d.items():
    if isinstance(v, dict):
      out.update(flatten(v, f'{prefix}{k}.'))
    else:
      out[f'{prefix}{k}'] = v
  return out


def config_json(config) -> dict:
  """The config as plain JSON types (tuples become lists)."""
  return json.loads(json.dumps(config.to_dict() if hasattr(config, 'to_dict') else config))


def recorded(config) -> dict:
  """What a run records and is compared on: core fields, the task's sections, the method's section and the
  shared sections it reads (``Parts.recorded``)."""
  return parts_of(config['task'], config['method']).recorded(config)


def upgrade(stored: dict) -> dict:
  """A record of an earlier format in the current one, with the values the run used; a current record is returned
  as it is. The formats are the plug-ins' history (the package's: ``implicit_jax/wiring.py``)."""
  return registry.plugins().upgrade(stored)


_ABSENT = object()


class NewerRecord(ValueError):
  """A config record holds fields this code does not know: a newer version wrote it (or a hand edited it)."""


def check_known(stored: dict) -> None:
  """Raises NewerRecord naming the fields of ``stored`` (upgraded) that today's config of its task and method
  lacks. Such a record cannot be honoured: its run read settings this code would drop, and resuming would rewrite
  the record without them. (No committed record of an earlier format has any, once upgraded.)"""
  stored = upgrade(stored)
  _refuse_unknown(stored, base_config(stored.get('task', 'synthetic'), stored.get('method', 'implicit')))


def _refuse_unknown(upgraded: dict, defaults: ml_collections.ConfigDict) -> None:
  known = flatten(config_json(defaults))
  unknown = [k for k in flatten(upgraded) if k not in known]
  if unknown:
    shown = ', '.join(unknown[:5]) + (f' (+{len(unknown) - 5} more)' if len(unknown) > 5 else '')
    raise NewerRecord(f'holds fields this version of implicit_jax does not know ({shown}): a newer version wrote '
                      'it, or it was edited; read or resume it with the version that wrote it')


def compare(stored: dict, config) -> list[str]:
  """The differences that forbid ``config`` from continuing the run recorded as ``stored`` (empty: it may).
  Raises NewerRecord for a record this code cannot honour (``check_known``). (``Parts.compare``.)"""
  parts = parts_of(config.task, config.method)
  return parts.compare(stored, parts.recorded(config))


def load(stored: dict) -> ml_collections.ConfigDict:
  """A recorded config as a full config: the defaults of its task and method, overlaid by what it recorded."""
  stored = upgrade(stored)
  config = base_config(stored.get('task', 'synthetic'), stored.get('method', 'implicit'))
  _refuse_unknown(stored, config)  # check_known, on the defaults built here
  _overlay(config, stored)
  return config


def _overlay(config: ml_collections.ConfigDict, values: dict) -> None:
  for key, value in values.items():
    if key not in config:
      continue  # a field the code no longer has
    if isinstance(value, dict):
      _overlay(config[key], value)
    else:
      config[key] = tuple(value) if isinstance(config[key], tuple) and isinstance(value, list) else value
