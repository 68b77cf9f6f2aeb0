"""What a task and a method hand the engine, checked once before training, so that a plug-in that breaks the
contract (``implicit_jax/plugins.py``) ends in one line naming it instead of training on nonsense or failing deep
inside a jitted step.

Before the workdir is touched (``before_training``): every split's stored labels against the output space
(``OutputSpace.label_error``: shape and values), then the shapes the networks and the method give on the example
batch the networks are initialised on, against ``space.shape``: the inference net's logits and ``predict``'s
relaxed output; then the training split against ``config.batch_size`` (an epoch holds at least one batch). Shapes
come from ``jax.eval_shape``: traced, never run, so the check costs no compute (an initialisation that needs
concrete values is run). Each dev evaluation: the evaluator's ``select`` metric, which picks the best epoch, must
be a finite number (``select_metric``). The errors are ValueErrors: the command lines print them as one line.
"""

from __future__ import annotations

import math

import jax
import numpy as np

from implicit_jax import batch as batch_lib
from implicit_jax.engine import data


def labels(task) -> None:
  """Each split's stored labels ``y`` fit the task's output space."""
  for split in data.SPLITS:
    problem = task.space.label_error(task.splits[split])
    if problem:
      raise ValueError(f"task {task.name}: the {split} split's {problem}")


def _shape(tree) -> tuple | str:
  """The shape of an array's abstract value, or what the value is when it is no single array."""
  return tuple(tree.shape) if hasattr(tree, 'shape') else f'a {type(tree).__name__}'


def _initialised(init, *args):
  """``init(*args)`` as shapes, by ``jax.eval_shape``; run for real where it needs concrete values (an
  initialisation may read its key on the host: nothing but the jitted step and predict must be traceable)."""
  try:
    return jax.eval_shape(init, *args)
  except (jax.errors.ConcretizationTypeError, jax.errors.TracerArrayConversionError,
          jax.errors.TracerIntegerConversionError):
    return init(*args)


def inference_net(task, batch: dict, want: tuple) -> None:
  """``make_inference_net()``'s logits have the space's shape (``tasks.Task``)."""
  net = task.make_inference_net()
  params = _initialised(net.init, batch_lib.init_key(0), batch)
  got = _shape(jax.eval_shape(net.apply, params, batch))
  if got != want:
    raise ValueError(f"task {task.name}: make_inference_net()'s output has shape {got}; the {task.space.name} output "
                     f'space wants {want} for this batch (its logits: one per output unit, tasks.Task)')


def predict(method, config, batch: dict, want: tuple, space_name: str) -> None:
  """``method.predict`` gives a relaxed output of the space's shape (``methods.Method``)."""
  state = _initialised(method.init, batch_lib.init_key(0))
  got = _shape(jax.eval_shape(method.predict, state.params, batch))
  if got != want:
    raise ValueError(f'config.method: {config.method!r}: predict(params, batch) returned shape {got}; the '
                     f'{space_name} output space wants {want} for this batch (the relaxed output of '
                     'task.space.shape(batch), implicit_jax/methods/__init__.py)')


def before_training(task, method, config) -> None:
  """The labels, then the inference net's and ``predict``'s shapes, on the batch the networks are initialised
  on (inputs only, as prediction sees them); then that the training split holds a batch."""
  labels(task)
  batch = task.inputs(task.example_batch())
  want = tuple(task.space.shape(batch))
  inference_net(task, batch, want)
  predict(method, config, batch, want, task.space.name)
  n_train = data.num_examples(task.splits['train'])
  if n_train < config.batch_size:
    raise ValueError(f'config.batch_size={config.batch_size} exceeds the {n_train} training examples')


def select_metric(task, metrics: dict, epoch: int):
  """The dev value of the evaluator's ``select``, which picks the best epoch, as ``metrics`` holds it: a finite
  number, else an error naming the evaluator and the metric."""
  name = task.evaluator.select
  source = f'task {task.name}: {type(task.evaluator).__name__}.metrics()'
  if name not in metrics:
    raise ValueError(f'{source} gave no {name!r}, its select metric (the one that picks the best epoch), at epoch '
                     f'{epoch}; it gave {sorted(metrics)}')
  value = metrics[name]
  number = not isinstance(value, bool) and isinstance(value, (int, float, np.number))
  if not number or not math.isfinite(value):
    raise ValueError(f'{source} gave the dev {name!r} {value if number else repr(value)} at epoch {epoch}; its '
                     'select metric picks the best epoch and must be a finite number (Evaluator.metrics)')
  return value
