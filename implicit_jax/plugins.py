"""Plug-ins: a task, a method or an inverse-HVP solver from outside the package, named by its import path.

``config.task``, ``config.method`` and ``config.implicit.solver.name`` each take a built-in name, a short alias
(``tasks.FAMILIES``, ``methods.REGISTRY``, ``bilevel.SOLVERS``), or the import path of a module, or of an object in
a module, anywhere Python can import it: ``digits`` (a module on ``PYTHONPATH``), ``mylab.tasks.digits`` (a module
of an installed package), ``mylab.tasks.digits.TASK`` (an object with the same names). An alias wins over a
module of the same name. The path is what the run records in ``config.json``, so ``evaluate``, ``predict`` and
``load_trained`` import it again from the record: the module must be importable where they run too.

A name that is neither an alias nor importable, a module that fails to import, and a target that lacks a required
name each end in a one-line ``ValueError`` naming the config field (the command lines print it as ``error: ...``).

**Task** (``config.task``): the target provides what a built-in task family module provides
(``implicit_jax/tasks/__init__.py`` documents ``Task``, ``Evaluator`` and the splits):

* ``default_config() -> ConfigDict`` with exactly the sections ``data`` and ``model``;
* ``make_task(config) -> implicit_jax.tasks.Task``;
* optionally, for ``python -m implicit_jax.predict``, ``read_inputs(run, path) -> (inputs, context)`` and
  ``format_predictions(run, pred, context, threshold) -> list[str]``; without them ``predict`` reads a ``.npy``
  matrix of ``x`` and writes the output space's ``decode`` of each example.

Its splits' keys must not be one of the names training adds to a batch (``implicit_jax.batch.RESERVED``).

**Method** (``config.method``):

* ``build(task, config) -> implicit_jax.methods.Method``: ``init(rng)``, ``train_step(state, batch, rng)``,
  ``predict(params, batch)`` (``methods/__init__.py``); the batch its step receives is ``implicit_jax/batch.py``'s
  contract, and the randomness it draws comes from the step's ``rng`` (``batch.split`` it into streams);
* optionally ``SECTION = 'name'``, the config section it reads. A built-in section (``methods.SECTION_MODULES``)
  brings its own defaults; a new one needs ``default_config() -> ConfigDict``, its defaults, which
  ``base_config(task, method)`` adds and the run records;
* optionally ``SHARED = ('gbi',)``: the shared sections it reads (``methods.SHARED``), which its runs record;
* optionally ``SEMI_SUPERVISED = True``: it learns from unlabeled training rows (``Task.reward``); the others are
  refused a split that has them.

**Solver** (``implicit.solver.name``): a callable, or a module whose ``solve`` is one,
``solve(matvec, v, solver) -> (u, info)``:

* ``matvec(x)``: ``(H + damping I) x`` for a pytree x shaped as the inference network's parameters theta, H the
  Hessian of ``L_aux`` in theta (exact or finite-difference products, as ``solver.hvp`` says);
* ``v``: the right-hand side, shaped as theta; ``solver``: the validated ``bilevel.Solver`` settings
  (``iterations``, ``tol``, ``alpha``, ``damping``, ``unroll``, ...), which it may read or ignore;
* ``u ~= (H + damping I)^{-1} v``, shaped as v; ``info``, a dict, may hold ``iterations``, the number of
  ``matvec`` calls (logged; NaN when not given). The engine adds the rest: the residual ``||H u - v|| / ||v||``
  on the undamped H (one more product, with ``solver.track_residual``) and the implicit term
  ``-[d_phi d_theta L_aux]^T u``.

It runs inside ``jax.jit`` (in the backward pass of ``bilevel.ImplicitSolve``): JAX operations only, no Python
branches on array values. ``warm_start`` belongs to ``gcr``; ``refresh`` works with any solver.

**What the engine checks** of what a plug-in hands it, each failure a one-line ``ValueError`` naming the task, the
config field or the evaluator, the cause and the fix (``implicit_jax/engine/checks.py``):

* ``make_task`` returns a ``Task`` (whenever a task is built: training, ``evaluate``, ``predict``);
* once before training, before the workdir is touched: each split's stored labels ``y`` against the output space
  (``OutputSpace.label_error``): ``Binary`` wants ``[N, *event_shape]`` in [0, 1] (unlabeled rows aside),
  ``Categorical`` class ids shaped as ``mask`` and ``Multiclass`` ``[N]`` class ids, each below the number of
  classes (a negative id means no gold); then, on the example batch the networks are initialised on, the
  inference net's logits and ``predict``'s output against ``space.shape(batch)``, by ``jax.eval_shape`` (traced,
  not run);
* each dev evaluation: the evaluator's ``select`` metric is in ``metrics()`` and a finite number, before it is
  recorded or picks an epoch;
* a solver, as the first step is traced: ``info``'s values are numbers or arrays of numbers and ``iterations``
  one number (the form of ``u`` is checked too: a pytree shaped as v). Its ``u``'s values are checked where
  training checks its metrics: when the implicit term turns non-finite while the losses are finite, training
  stops naming ``implicit.solver.name``. An ``iterations`` NaN (not given) is logged, not a fault.
"""

from __future__ import annotations

import importlib
from typing import Any, Iterable


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


def method(name: str, aliases: Iterable[str]) -> Any:
  """The method module (or object) at the import path ``name`` (not an alias), checked."""
  target = load('config.method', name, 'method', aliases)
  require('config.method', name, target, ('build',), METHOD_PROTOCOL)
  section = getattr(target, 'SECTION', None)
  if section is not None and not (isinstance(section, str) and section.isidentifier()):
    raise ValueError(f'config.method: {name!r}: SECTION must be a config section name, got {section!r}')
  return target


def solver(name: str, aliases: Iterable[str]) -> Any:
  """The solve callable at the import path ``name`` (not an alias); a module gives its ``solve``."""
  target = load('solver.name', name, 'inverse-HVP solver', aliases)
  if not callable(target):
    require('solver.name', name, target, ('solve',), SOLVER_PROTOCOL)
    target = target.solve
  return target
