"""Plug-ins: a task, a method or an inverse-HVP solver from outside the package, named by its import path.

``config.task``, ``config.method`` and ``config.implicit.solver.name`` each take a built-in name, a short alias
(``tasks.FAMILIES``, ``methods.REGISTRY``, ``bilevel.SOLVERS``), or the import path of a module, or of an object in
a module, anywhere Python can import it: ``digits`` (a module on ``PYTHONPATH``), ``mylab.tasks.digits`` (a module
of an installed package), ``mylab.tasks.digits.TASK`` (an object with the same names). An alias wins over a
module of the same name. The path is what the run records in ``config.json``, so ``evaluate``, ``predict`` and
``load_trained`` import it again from the record: the module must be importable where they run too.

A name that is neither an alias nor importable, a module that fails to import, and a target that lacks a required
name each end in a one-line ``ValueError`` naming the config field (the command lines print it as ``error: ...``).
This docstring is the whole contract: everything the engine, a command line or a built-in method may ask of a
plug-in is listed below. ``examples/digits`` is a task and a method written from it.

**Task** (``config.task``): the target provides what a built-in task family module provides
(``implicit_jax/tasks/__init__.py`` documents ``Task``, ``Evaluator`` and the splits):

* ``default_config() -> ConfigDict`` with exactly the sections ``data`` and ``model``;
* ``make_task(config) -> implicit_jax.tasks.Task``. Its splits' keys must not be one of the names training adds
  to a batch (``implicit_jax.batch.RESERVED``); which keys its output space reads is listed below;
* for the ``crf`` method only: an energy (``make_energy()``) with a method ``potentials(batch) -> (u, W)``, the
  unary energies ``u`` [B, T, C] and the transition energies ``W`` [C, C] (lower is better) of a linear chain
  whose energy is ``E(x, y) = sum_t u[t, y_t] + sum_t W[y_{t-1}, y_t]`` over the real positions, and a
  ``Categorical`` space (``methods/crf.py``; the tagging task's ``SequenceEnergy`` is one). crf refuses an
  energy without it, naming the task.

For ``python -m implicit_jax.predict`` (``predict.predict_file``), all optional; ``run`` is the trained run
(``engine.checkpoints.load_trained``: ``run.config``, ``run.task``, ``run.workdir``, ``run.predict``):

* ``npy_inputs(run, path, x) -> (inputs, context)``: the model's inputs (a dict of arrays, every key the task's
  splits hold but ``y``) from the numeric array ``x`` of a ``.npy`` file. Without it, a ``.npy`` is the input
  ``x`` itself, which serves a task whose splits hold ``x`` alone; a task that reads more (``mask``, features)
  and lacks the hook is refused in one line naming the task, what it reads and the hook;
* ``read_inputs(run, path[, input_format]) -> (inputs, context)``: the model's inputs from a file in the task's
  own format (any file not named ``.npy``). Without it such a file is refused, naming the task;
* ``FORMATS = ('conll', 'text')``: the names of the file formats ``read_inputs`` tells apart, which
  ``--format`` then takes; ``read_inputs`` is called with ``input_format``, 'auto' (the default: tell them apart
  from the file) or one of them. Without ``FORMATS``, ``read_inputs(run, path)`` is called with two arguments and
  any ``--format`` but 'auto' is refused, naming the task;
* ``format_predictions(run, pred, context, threshold) -> list[str]``: the output lines of the relaxed
  predictions ``pred`` (``context``: what the reader returned; ``threshold``: the decision threshold of
  thresholded outputs, the run's dev-tuned one by default). Without it, one line per example: the output space's
  ``decode`` of it, its values space-separated.

**Output spaces and the batch keys they read** (``implicit_jax/spaces``): ``space.shape(batch)`` sizes every
relaxed output, and the methods pass ``batch['y']`` and ``batch.get('mask')`` to the space's losses, costs and
scores, so a task's splits must hold what its space reads:

* ``Binary(event_shape)``: ``x`` (its length is the batch size); ``y`` [B, *event_shape] in [0, 1]; ``mask``,
  when the batch has one, weighs each output unit in an example's sums (same shape as ``y``);
* ``Categorical(C)``: ``mask`` [B, T] (1 at the real positions; ``shape`` reads T from it, so it is required);
  ``y`` class ids [B, T] as stored, one-hot [B, T, C] in a batch;
* ``Multiclass(C)``: ``x`` (its length is the batch size); ``y`` class ids [B] as stored, one-hot [B, C] in a
  batch; a ``mask`` is not read.

``labeled`` (rows with gold outputs, ``Task.reward``) is read by the spaces' label checks and the semi-supervised
methods. Every other key is an input for the task's own networks; what training adds is ``implicit_jax/batch.py``.

**Method** (``config.method``):

* ``build(task, config) -> implicit_jax.methods.Method``: ``init(rng)``, ``train_step(state, batch, rng)``,
  ``predict(params, batch)`` (``methods/__init__.py``); the batch its step receives is ``implicit_jax/batch.py``'s
  contract, and the randomness it draws comes from the step's ``rng`` (``batch.split`` it into streams);
* optionally ``SECTION = 'name'``, the config section it reads. A section of the package (``methods.SECTIONS``,
  ``methods.SHARED``) brings its own defaults; a new one needs ``default_config() -> ConfigDict``, its defaults,
  which ``base_config(task, method)`` adds and the run records. ``--config.method=<import path>`` on the command
  line adds the section to a config file built for another method, so ``--config.<name>.<field>=`` overrides
  follow it;
* optionally ``SHARED = ('gbi',)``: the shared sections it reads (``methods.SHARED``), which its runs record;
* optionally ``SEMI_SUPERVISED = True``: it learns from unlabeled training rows (``Task.reward``); the others are
  refused a split that has them.

Or, as the built-in methods declare themselves, one ``METHOD = MethodSpec(name, build, Section(name,
default_config), shared=..., semi_supervised=...)`` (``implicit_jax/method_kit.py``; the path may also name the
``MethodSpec`` itself). Either way ``method`` reads it into a ``MethodSpec``, checked by the rules the built-in
declarations are (``methods.register``): a section name means one declaration, and ``SHARED`` names declared
shared sections. Its ``name`` is the import path ``config.method`` gives, which its runs record.

The helpers the built-in methods are written with, importable from here (``from implicit_jax.plugins import
State, init_params, make_optimizer``; they live in ``implicit_jax/method_kit.py``):

* ``State(step, params, opt_state, memory=None)``: the training state ``init`` returns and ``train_step``
  carries (a Flax struct: ``params`` and ``opt_state`` are dicts of pytrees, by the names of the parameter sets;
  ``memory``, what a method carries between steps besides them, e.g. the implicit method's solver memory);
* ``Method(init, train_step, predict, modules={}, limits=None, optional=(), cause=None, form=None)``: what ``build``
  returns; ``form(step) -> hashable``, for a step of several static forms, names the form of outer step ``step`` (from
  0), which ``train_step`` then takes as a fourth argument, one compiled program each (the implicit method's solving
  and reusing steps with ``solver.reuse='r<k>h'``); ``limits`` maps a step metric to the ``config.divergence``
  field bounding it (None: every ``loss*`` metric against ``max_loss``), ``optional`` names the metrics that are NaN
  by design when not computed, and ``cause(bad, step)`` says what the method knows of a step whose metrics ``bad`` are
  non-finite (the implicit method names its solver when only the implicit term's are), added to the error that stops
  the run; the engine reads a step's metrics by these alone;
* ``init_params(task, rng, {'theta': net, 'phi': energy})``: the networks' initial parameters on the task's
  example batch (the energy, named ``phi``, gets a zero output too);
* ``make_optimizer(cfg, field, differentiable=False)``: the optax optimiser of a section such as
  ``config.optimizer`` (``name``, ``learning_rate``, ``clip_norm``, ``weight_decay``), errors naming ``field``;
  ``optimizer_config(learning_rate)`` builds such a section for a method's own defaults;
* ``positive_int(value, field)``: a setting checked to be a positive integer, the error naming ``field``;
* ``batch_score(task)``: ``score(y_bar, batch)``, the task score against the gold (DVN's target).

**Solver** (``implicit.solver.name``): a callable, or a module whose ``solve`` is one,
``solve(matvec, v, solver) -> (u, info)``: the contract every built-in solver meets too
(``implicit_jax.solvers.BUILT_IN``, one table; the backward pass of ``bilevel.ImplicitSolve`` calls a solver only
through ``solvers.call``):

* ``matvec(x)``: ``(H + damping I) x`` for a pytree x shaped as the inference network's parameters theta, H the
  Hessian of ``L_aux`` in theta (exact or finite-difference products, as ``solver.hvp`` says). It is an
  ``implicit_jax.hessian.Operator``, which also gives ``matvec.hessian(x)`` (``H x``, undamped),
  ``matvec.fused(d)`` (``(H d, C^T d)`` in one pass, ``C = d_phi d_theta L_aux``), ``matvec.gradient()``
  (``d_theta L_aux``), the point ``matvec.theta``, ``matvec.phi`` and ``matvec.memory`` (the previous step's u
  with ``solver.warm_start``);
* ``v``: the right-hand side, shaped as theta; ``solver``: the validated ``bilevel.Solver`` settings
  (``iterations``, ``tol``, ``alpha``, ``damping``, ``unroll``, ...), which it may read or ignore;
* ``u ~= (H + damping I)^{-1} v``, shaped as v; ``info``, a dict, may hold ``iterations``, the number of
  ``matvec`` calls (logged; NaN when not given). The engine adds the rest: the residual ``||H u - v|| / ||v||``
  on the undamped H (one more product, with ``solver.track_residual``) and the implicit term
  ``-[d_phi d_theta L_aux]^T u``. A solver that has either already gives it in ``info`` as ``residual`` or
  ``implicit`` (a pytree shaped as phi: then no mixed VJP is made), and may give ``alpha`` and ``grad_norm``
  (``||d_theta L_aux||``), logged as they are;
* optionally ``solve.linearize = False``: it calls ``matvec.fused`` (or no product) only, so the engine does not
  linearise the gradient for ``matvec`` beforehand (``gcr``, ``none``).

It runs inside ``jax.jit`` (in the backward pass of ``bilevel.ImplicitSolve``): JAX operations only, no Python
branches on array values. ``warm_start`` belongs to ``gcr``; ``reuse`` works with any solver.

**What the engine checks** of what a plug-in hands it, each failure a one-line ``ValueError`` naming the task, the
config field or the evaluator, the cause and the fix (``implicit_jax/engine/checks.py``):

* ``make_task`` returns a ``Task`` (whenever a task is built: training, ``evaluate``, ``predict``); a config field
  it reads that its ``default_config()`` does not declare is named with the plug-in's file and line
  (``implicit_jax/plugin_faults.py``);
* once before training, before the workdir is touched: each split's stored labels ``y`` against the output space
  (``OutputSpace.label_error``): ``Binary`` wants ``[N, *event_shape]`` in [0, 1] (unlabeled rows aside),
  ``Categorical`` class ids shaped as ``mask`` and ``Multiclass`` ``[N]`` class ids, each below the number of
  classes (a negative id means no gold); then, on the example batch the networks are initialised on, the
  inference net's logits and ``predict``'s output against ``space.shape(batch)``, by ``jax.eval_shape`` (traced,
  not run);
* each dev evaluation: the evaluator's ``select`` metric is in ``metrics()`` and a finite number, before it is
  recorded or picks an epoch;
* a solver, as the first step is traced: ``info``'s values are numbers or arrays of numbers and ``iterations``
  one number (the form of ``u`` is checked too: a pytree shaped as v); a traced value used as a Python one (an
  ``if`` on an array, ``int()``, ``np.asarray``) is named with the solver's file and line and what to use
  instead. Its ``u``'s values are checked where training checks its metrics: when the implicit term turns
  non-finite while the losses are finite, training stops naming ``implicit.solver.name``. An ``iterations`` NaN
  (not given) is logged, not a fault;
* ``predict``, before the model is read: a hook the input needs and the task lacks (``npy_inputs`` for a task
  that reads more than ``x``, ``read_inputs`` for a file not named ``.npy``), and a ``--format`` its ``FORMATS``
  do not name (``implicit_jax/predict.py``).
"""

from __future__ import annotations

import importlib
from typing import Any, Iterable

import ml_collections

from implicit_jax.method_kit import (Method, MethodSpec, Section, State, batch_score, init_params,  # noqa: F401
                                     make_optimizer, optimizer_config, positive_int)

# The kit a method is written with (docstring), importable from here: implicit_jax/method_kit.py, which the
# built-in methods import too. It imports nothing of the package's methods, so neither imports the other.
METHOD_HELPERS = ('State', 'Method', 'MethodSpec', 'Section', 'init_params', 'make_optimizer', 'optimizer_config',
                  'positive_int', 'batch_score')


def _not_found(error: ModuleNotFoundError, module: str) -> bool:
  """Whether ``error`` says that ``module`` itself (or a package above it) does not exist, rather than that
  something it imports is missing."""
  return bool(error.name) and (module == error.name or module.startswith(error.name + '.'))


def load(field: str, path: str, what: str, aliases: Iterable[str] = ()) -> Any:
  """The module or object at ``path``: the longest prefix that imports as a module, then attributes.

  ``field`` (the config field) and ``what`` ('task', 'method', ...) name the setting in errors; ``aliases``,
  the built-in names, are listed there."""
  choices = f'choose one of {sorted(aliases)} or' if aliases else 'give'
  parts = path.split('.') if isinstance(path, str) else []
  if not parts or not all(p.isidentifier() for p in parts):
    raise ValueError(f'{field}: unknown {what} {path!r}; {choices} an import path (a.b.c)')
  missing = None  # the longest prefix that is no module
  for i in range(len(parts), 0, -1):
    module = '.'.join(parts[:i])
    try:
      target = importlib.import_module(module)
    except ModuleNotFoundError as e:
      if _not_found(e, module):
        missing = missing or e.name
        continue  # not a module: perhaps an attribute of a shorter prefix
      raise ValueError(f'{field}: importing {module!r} failed: {e}') from None
    except (ImportError, SyntaxError) as e:
      raise ValueError(f'{field}: importing {module!r} failed: {type(e).__name__}: {e}') from None
    for j, attr in enumerate(parts[i:], i):
      if not hasattr(target, attr):
        raise ValueError(f'{field}: cannot import {path!r}: no module named {missing!r}, and '
                         f'{".".join(parts[:j])!r} has no attribute {attr!r}')
      target = getattr(target, attr)
    return target
  raise ValueError(f'{field}: unknown {what} {path!r}; {choices} the import path of a plug-in (no module named '
                   f'{missing!r}: is its folder on PYTHONPATH, or its package installed?)')


def require(field: str, path: str, target: Any, names: Iterable[str], protocol: str) -> None:
  """Raises a one-line ValueError when ``target`` lacks one of ``names``; ``protocol`` says what it must export."""
  missing = [n for n in names if not callable(getattr(target, n, None))]
  if missing:
    raise ValueError(f'{field}: {path!r} does not provide {", ".join(missing)} ({protocol}; see '
                     'implicit_jax/plugins.py)')


TASK_PROTOCOL = 'a task exports default_config() and make_task(config)'
METHOD_PROTOCOL = 'a method exports build(task, config) -> methods.Method'
SOLVER_PROTOCOL = 'a solver is a callable solve(matvec, v, solver) -> (u, info), or a module that exports solve'


def task(name: str, aliases: dict) -> Any:
  """The task family module (or object) ``config.task`` names: an alias of ``aliases`` or an import path."""
  if name in aliases:
    return importlib.import_module(aliases[name])
  target = load('config.task', name, 'task', aliases)
  require('config.task', name, target, ('default_config', 'make_task'), TASK_PROTOCOL)
  sections = target.default_config()
  if not hasattr(sections, 'keys') or sorted(sections.keys()) != ['data', 'model']:
    got = sorted(sections.keys()) if hasattr(sections, 'keys') else type(sections).__name__
    raise ValueError(f'config.task: {name!r}: default_config() must hold exactly the sections data and model, got '
                     f'{got}')
  return target


def method(name: str, aliases: Iterable[str], sections: dict, shared: dict) -> MethodSpec:
  """The declaration of the method at the import path ``name`` (not an alias): its ``METHOD`` (or the
  ``MethodSpec`` the path names), else one read from its ``build``, ``SECTION``, ``default_config``, ``SHARED`` and
  ``SEMI_SUPERVISED``; named ``name``. ``sections``: the package's sections by name (a section of one of those names
  is that declaration), ``shared``: the shared ones ``SHARED`` may name. A path that does not import, a target
  without ``build``, a new section without ``default_config()`` (or whose ``default_config()`` gives no ConfigDict)
  and an unknown shared section are one-line ValueErrors naming config.method and the path."""
  target = load('config.method', name, 'method', aliases)
  declared = target if isinstance(target, MethodSpec) else getattr(target, 'METHOD', None)
  if declared is not None and not isinstance(declared, MethodSpec):
    raise ValueError(f'config.method: {name!r}: METHOD must be an implicit_jax.plugins.MethodSpec, got a '
                     f'{type(declared).__name__}')
  if declared is None:
    require('config.method', name, target, ('build',), METHOD_PROTOCOL)
    declared = _read(name, target)
  section = declared.section
  if section is not None:
    section = sections.get(section.name) or _new_section(name, section)
  unknown = sorted(set(declared.shared) - set(shared))
  if unknown:
    raise ValueError(f'config.method: {name!r}: SHARED names {unknown}, not shared sections; choose from '
                     f'{sorted(shared)}')
  return declared._replace(name=name, section=section)


def _read(name: str, target: Any) -> MethodSpec:
  """The ``MethodSpec`` of a plug-in that exports the names instead of declaring one."""
  section = getattr(target, 'SECTION', None)
  if section is not None and not (isinstance(section, str) and section.isidentifier()):
    raise ValueError(f'config.method: {name!r}: SECTION must be a config section name, got {section!r}')
  return MethodSpec(name, target.build, section and Section(section, getattr(target, 'default_config', None)),
                    tuple(getattr(target, 'SHARED', ())), bool(getattr(target, 'SEMI_SUPERVISED', False)))


def _new_section(name: str, section: Section) -> Section:
  """``section``, a name the package does not know, checked to come with its defaults."""
  if not callable(section.defaults):
    raise ValueError(f'config.method: {name!r} reads the new section {section.name!r} but does not provide '
                     f'default_config() (its defaults; see implicit_jax/plugins.py)')
  defaults = section.defaults()
  if not isinstance(defaults, ml_collections.ConfigDict):
    raise ValueError(f'config.method: {name!r}: default_config() returned a {type(defaults).__name__}, not an '
                     'ml_collections.ConfigDict')
  return section


def solver(name: str, aliases: Iterable[str]) -> Any:
  """The solve callable at the import path ``name`` (not an alias); a module gives its ``solve``."""
  target = load('solver.name', name, 'inverse-HVP solver', aliases)
  if not callable(target):
    require('solver.name', name, target, ('solve',), SOLVER_PROTOCOL)
    target = target.solve
  return target
