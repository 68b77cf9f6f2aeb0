"""The engine: what every task and method share.

* ``train``: the loop (``train_and_evaluate``), the data-parallel step on a ``('data',)`` mesh, evaluation;
* ``data``: training batches (shuffled, length-bucketed for variable-length tasks) and padded prediction batches;
* ``config``: the package's defaults, a config's task and method resolved once (``Parts``), what a run records,
  resuming and reading records back;
* ``checkpoints``: the workdir's layout, Orbax checkpoints and ``load_trained``; ``workdir``: its guards (one
  trainer at a time, the same data on resume, a folder that can be written);
* ``checks``: what a task and a method hand the engine, checked once before training;
* ``predictions``: a run's dev and test predictions in compact form, kept in its result;
* ``writers``: TensorBoard and JSON-lines metrics; ``plots``: a run's training curves; ``xla_options``: the
  compiler options of every step;
* ``cli``: what the command lines share (one line for bad input; Ctrl-C through ``interrupts``, never inside an XLA
  compile); ``multihost``: the processes of a multi-host run;
* ``registry``: how the engine reaches the task and method plug-ins (``Plugins``, registered once by the package's
  ``__init__``: ``implicit_jax/wiring.py``).

Nothing here knows a task's data, outputs or metrics: those come from ``implicit_jax.tasks``, the step from
``implicit_jax.methods``, the implicit gradient from ``implicit_jax.bilevel``. Nothing here imports the tasks or the
methods either: they come in through ``registry``, so the engine imports downward only.
"""
