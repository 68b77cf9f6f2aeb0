"""Tasks: arrays for each split plus the sizes the models need. ``get_task(config)`` picks one by name."""

import dataclasses

import numpy as np


@dataclasses.dataclass(frozen=True)
class Task:
  """Multi-label data split into ``train``/``dev``/``test``, each an ``(x [N, D] float32, y [N, L] float32)``."""

  name: str
  splits: dict
  num_features: int
  num_labels: int
  info: dict = dataclasses.field(default_factory=dict)  # provenance (seeds, sizes, files) for the run's output

  def __post_init__(self):
    for split, (x, y) in self.splits.items():
      if x.ndim != 2 or x.shape[1] != self.num_features:
        raise ValueError(f'task {self.name}: {split} x has shape {x.shape}, expected [N, {self.num_features}]')
      if y.shape != (x.shape[0], self.num_labels):
        raise ValueError(f'task {self.name}: {split} y has shape {y.shape}, expected [{x.shape[0]}, '
                         f'{self.num_labels}]')
      if not np.all(np.isfinite(x)):
        raise ValueError(f'task {self.name}: {split} features contain NaN or Inf')


def get_task(config) -> Task:
  from implicit_jax.tasks import mlc, synthetic  # pylint: disable=import-outside-toplevel
  registry = {'synthetic': synthetic.make_task, 'mlc': mlc.make_task}
  if config.task not in registry:
    raise ValueError(f'config.task: unknown task {config.task!r}; choose one of {sorted(registry)}')
  return registry[config.task](config)
