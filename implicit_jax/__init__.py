"""implicit_jax: implicit (IFT) training of energy models for structured prediction, in JAX/Flax.

The tree is the architecture: ``bilevel`` (the paper's implicit gradient), ``losses`` (the energy losses),
``inference`` (gradient-based inference), ``engine/`` (the training loop, data, configs, checkpoints),
``spaces/`` (output spaces), ``tasks/`` (data, networks and evaluators of each problem) and ``methods/`` (the
implicit method and its rivals); ``batch`` (what a training batch holds, and every random key of a run) and
``plugins`` (a task, method or solver from outside the package, named by its import path). Training starts at
``implicit_jax.engine.train.train_and_evaluate``.
"""

__version__ = '0.1.0'
