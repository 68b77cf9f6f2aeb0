"""The engine: what every task and method share.

* ``train``: the loop (``train_and_evaluate``), the data-parallel step on a ``('data',)`` mesh, evaluation;
* ``data``: training batches (shuffled, length-bucketed for variable-length tasks) and padded prediction batches;
* ``config``: the package's defaults, what a run records, resuming and reading records back;
* ``checkpoints``: the workdir, Orbax checkpoints and ``load_trained``;
* ``writers``: TensorBoard and JSON-lines metrics; ``xla_options``: the compiler options of every step.

Nothing here knows a task's data, outputs or metrics: those come from ``implicit_jax.tasks``, the step from
``implicit_jax.methods``, the implicit gradient from ``implicit_jax.bilevel``.
"""
