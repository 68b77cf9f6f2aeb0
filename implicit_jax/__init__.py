"""implicit_jax: implicit (IFT) training of energy models for structured prediction, in JAX/Flax.

The tree is the architecture: ``bilevel`` (the paper's implicit gradient), ``losses`` (the energy losses),
``inference`` (gradient-based inference), ``networks`` (the MLP and activations the tasks' networks share),
``engine/`` (the training loop, data, configs, checkpoints, workdir guards), ``spaces/`` (output spaces),
``tasks/`` (data, networks and evaluators of each problem) and ``methods/`` (the implicit method and its rivals);
``batch`` (what a training batch holds, and every random key of a run), ``method_kit`` (what a method is, is
written with and is declared by: the methods and the plug-ins both stand on it), ``plugins`` (a task, method or
solver from outside the package, named by its import path), ``wiring`` (the tasks and methods as the engine
reaches them, registered below, and the history of the run records' formats) and ``testing`` (float64 reference
problems the tests share). The command lines: ``main`` (train), ``evaluate`` and ``predict`` (a trained run),
``tune`` (a multi-label run tuned on its own dev split); ``runner`` runs a list of them to record files. Training
starts at ``implicit_jax.engine.train.train_and_evaluate``. The paper's tables are not here: the rows are written
in ``configs/``, and the runs, records and tables are the checkout's ``experiments/``, beside the package.
"""

__version__ = '0.1.0'

# The engine reaches the tasks and methods through one registered object (engine/registry.py), never by importing
# them: importing any module of the package runs this first, so the engine's configs always find the package's.
from implicit_jax import wiring as _wiring  # pylint: disable=wrong-import-position
from implicit_jax.engine import registry as _registry  # pylint: disable=wrong-import-position

_registry.use(_wiring.PACKAGE)
