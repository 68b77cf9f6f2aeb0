"""Tasks: what differs between structured-prediction problems, behind the one interface the engine uses.

A task owns its data (splits of arrays), its output space (``implicit_jax.spaces``), its networks (an inference
net and an energy, as Flax modules) and its evaluator (metrics, the metric that selects the best epoch, and
calibration chosen on dev). The training loop, the methods, ``bilevel`` and the checkpoints see a task only
through ``Task`` and ``Evaluator``; a new problem is a new family module, here or anywhere importable, plus a
config.

A family module (``config.task`` names one: an alias of ``FAMILIES``, or the import path of a module outside the
package, ``implicit_jax/plugins.py``) provides:

* ``default_config() -> ConfigDict`` with the sections ``data`` and ``model``, every field documented;
* ``make_task(config) -> Task``;
* optionally, for the predict command line, ``npy_inputs``, ``read_inputs``, ``FORMATS`` and
  ``format_predictions`` (the model's inputs from a ``.npy`` or a file of the task's own format, the names of its
  formats, the output lines), each documented in ``implicit_jax/plugins.py``.

Splits are dicts of numpy arrays with a leading example axis: ``y`` holds the gold labels as stored (the output
space's ``gold`` turns them into the relaxed coordinates training batches carry), every other key is an input the
networks may read (``x``, ``mask``, ...). Networks take the batch dict and read the keys they need; what training
adds to a batch, and who may read it, is ``implicit_jax/batch.py``'s contract. Variable-length examples are padded
along axis 1 of the arrays named in ``padded``, with a ``mask`` of the real positions; batches are cut to the
smallest of ``buckets`` that holds their longest example, so the jitted step compiles once per bucket.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

import numpy as np

from implicit_jax import batch as batch_lib, plugin_faults, plugins
from implicit_jax.engine.data import SPLITS, first_non_finite

FAMILIES = {
    'synthetic': 'implicit_jax.tasks.mlc.synthetic',  # multi-label, generated: the default smoke task
    'mlc': 'implicit_jax.tasks.mlc',                  # multi-label benchmarks (MULAN, FunCat) or your own files
    'tagging': 'implicit_jax.tasks.tagging',          # sequence labeling (generated HMM, Twitter POS, CoNLL-2003)
    'segmentation': 'implicit_jax.tasks.segmentation',  # binary image segmentation (Weizmann horses)
    'citations': 'implicit_jax.tasks.citations',      # Cora citation fields: few labels, rule reward, unlabeled pool
}
DATA_DIR_ENV = 'IMPLICIT_JAX_DATA_DIR'  # the data directory when a task's data.data_dir is empty


class Evaluator:
  """Metrics of relaxed predictions on a split (numpy, host side). Subclasses set ``select`` and implement
  ``metrics``; tasks with a calibration chosen on dev (MLC's threshold) override ``calibrate`` and the rest.

  ``pred`` is always aligned with the split: one row per example, padded positions as the split pads them.
  """

  select: str = ''  # the key of metrics() whose dev value picks the best epoch (higher is better)
  headline: str = ''  # the test figure the tables lead with (result key 'test_' + headline), for example_scores

  def metrics(self, pred: np.ndarray, split: dict) -> dict[str, float]:
    """The per-epoch dev metrics, a flat dict of floats holding ``select``."""
    raise NotImplementedError

  def describe(self, metrics: dict) -> str:
    """The progress line's text for ``metrics``."""
    return ', '.join(f'{k} {v:.4f}' for k, v in metrics.items())

  def calibrate(self, dev_pred: np.ndarray, dev: dict) -> dict:
    """Post-hoc settings chosen on dev predictions (none by default)."""
    return {}

  def score(self, pred: np.ndarray, split: dict, calibration: dict) -> dict:
    """Every metric of a split under ``calibration``: what ``evaluate`` prints and the final result records."""
    return self.metrics(pred, split)

  def final(self, dev_pred: np.ndarray, dev: dict, test_pred: np.ndarray, test: dict) -> dict:
    """What the run's result records: the calibration chosen on dev and the test split's scores under it."""
    calibration = self.calibrate(dev_pred, dev)
    return {**calibration, **{f'test_{k}': v for k, v in self.score(test_pred, test, calibration).items()}}

  def decisions(self, pred: np.ndarray, split: dict, calibration: dict | None = None) -> dict[str, np.ndarray] | None:
    """The discrete outputs of ``pred`` that the metrics of this evaluator read (tag ids, thresholded masks, ...),
    small integer or boolean arrays: what a run's record keeps to be rescored (``engine.predictions``). With
    ``calibration`` None (dev), what ``calibrate`` and ``metrics`` read; with a calibration (test), what ``score``
    reads under it (and at the default). None: this evaluator keeps none."""
    return None

  def relaxed(self, decisions: dict[str, np.ndarray], split: dict) -> np.ndarray:
    """An array aligned with ``split`` that ``metrics``, ``final`` and ``score`` score exactly as they scored the
    predictions ``decisions`` were taken from."""
    raise NotImplementedError(f'{type(self).__name__} keeps no decisions to rescore')

  def example_scores(self, pred: np.ndarray, split: dict) -> tuple[np.ndarray, np.ndarray]:
    """``(num, den)``, one entry per example, with ``sum(num) / sum(den)`` the ``headline`` figure of ``pred`` on
    ``split`` (a mean of per-example scores has ``den`` all ones; a corpus-level ratio such as chunk F1 sums its
    counts): what a bootstrap over examples resamples (experiments/claims.py)."""
    raise NotImplementedError(f'{type(self).__name__} defines no per-example scores')

  def calibration_of(self, result: dict) -> dict:
    """The calibration a finished run chose, read back from its result."""
    return {}

  def summary(self, result: dict) -> str:
    """The closing line of a run."""
    shown = ', '.join(f'{k[5:]} {v:.4f}' for k, v in result.items()
                      if k.startswith('test_') and isinstance(v, float))
    return f'test {shown} (best dev epoch {result["best_epoch"]})'


@dataclasses.dataclass(frozen=True)
class Task:
  """One problem's data, output space, networks and evaluator.

  Attributes:
    name: the dataset, e.g. 'bibtex'.
    splits: ``{'train', 'dev', 'test'}`` -> dict of arrays (module docstring).
    space: the output space.
    make_inference_net: ``(heads=1) -> nn.Module`` whose ``apply(params, batch, train=False)`` gives the
      logits of ``space.shape(batch)`` (a tuple of ``heads`` of them, from one shared trunk, when heads > 1).
      Dropout, when configured, needs a ``'dropout'`` rng with ``train=True``.
    make_energy: ``() -> nn.Module`` whose ``apply(params, batch, y)`` gives ``E(x, y)`` for y of shape
      ``[..., *space.shape(batch)]``: ``[..., B]``, lower is better.
    evaluator: the task's ``Evaluator``.
    score: the output space's task score the task is measured by (DVN's regression target), e.g. 'f1'.
    info: provenance for the run's result (sizes, seeds, files, split protocol).
    padded: split arrays padded along axis 1 (variable-length outputs; needs ``mask``); () for fixed shapes.
    buckets: the padded lengths batches are cut to (the split's full length is always the last resort).
    names: column names where the task has them, e.g. ``{'x': feature names, 'y': label names}``: prediction
      inputs are matched to the training data by them. Recorded in the workdir's ``data.json`` at the run's start.
    preprocess: what turning a new file into the model's inputs must repeat of the training data (MLC: nominal
      value codes, standardisation statistics), in JSON types; recorded with ``names``, so that ``predict``
      applies the run's own, not those of the training files as they are later.
    augment: ``(batch, rng: np.random.Generator) -> batch``, applied to each training batch on the host (e.g.
      random flips of images and masks), or None. It draws from the epoch's data generator only, so the data of
      a step depends on (seed, epoch) alone and a resumed run sees the batches of an uninterrupted one. It may
      change the inputs' shapes (segmentation's random crops): the networks are initialised on an augmented
      example (``example_batch``).
    predict_views: ``(predict, inputs) -> y``, how a prediction batch is predicted when the networks see views of
      the inputs (segmentation's crops: ``predict``, inputs -> relaxed outputs as numpy, on each window, the
      outputs averaged into one of the full inputs' shape), or None: ``predict(inputs)``.
    reward: ``(batch, y) -> [..., B]``, a score in [0, 1] of any (relaxed) output from the inputs alone, never the
      gold (indirect supervision: Cora's rules), or None. A task with a reward may put unlabeled rows in its
      training split (``labeled`` 0, gold all -1); the methods that learn from it (``methods.SEMI_SUPERVISED``)
      use the reward there, the others refuse such rows.
  """

  name: str
  splits: dict
  space: Any
  make_inference_net: Callable
  make_energy: Callable
  evaluator: Evaluator
  score: str = ''
  info: dict = dataclasses.field(default_factory=dict)
  padded: tuple[str, ...] = ()
  buckets: tuple[int, ...] = ()
  names: dict = dataclasses.field(default_factory=dict)  # column names of inputs/outputs where known ({'x': ...})
  preprocess: dict = dataclasses.field(default_factory=dict)
  augment: Callable | None = None
  reward: Callable | None = None
  predict_views: Callable | None = None

  @property
  def unlabeled_rows(self) -> int:
    """Training rows without gold outputs (``labeled`` 0)."""
    labeled = self.splits['train'].get('labeled')
    return 0 if labeled is None else int(np.sum(np.asarray(labeled) == 0))

  def __post_init__(self):
    for split in SPLITS:
      if split not in self.splits:
        raise ValueError(f'task {self.name}: no {split!r} split')
      arrays = self.splits[split]
      if 'y' not in arrays:
        raise ValueError(f'task {self.name}: the {split} split has no gold outputs "y"')
      clash = sorted(set(arrays) & set(batch_lib.RESERVED))
      if clash:  # training adds these to a batch: an input of the same name would be overwritten
        raise ValueError(f'task {self.name}: the {split} split uses {clash}, names training adds to a batch '
                         '(implicit_jax/batch.py); rename them')
      sizes = {k: len(v) for k, v in arrays.items()}
      if len(set(sizes.values())) != 1:
        raise ValueError(f'task {self.name}: the {split} split\'s arrays disagree on the number of examples: '
                         f'{sizes}')
      for key, value in arrays.items():
        first = first_non_finite(value)
        if first is not None:
          raise ValueError(f'task {self.name}: {split} {key} contains NaN or Inf (first at index {first})')
    if self.padded:
      widths = {(s, k): self.splits[s][k].shape[1] for s in SPLITS for k in self.padded}
      if len(set(widths.values())) != 1 or any('mask' not in self.splits[s] for s in SPLITS):
        raise ValueError(f'task {self.name}: padded arrays need one common width and a mask, got {widths}')

  def example_batch(self) -> dict:
    """One all-zero example with the inputs' shapes and dtypes (and the shortest bucket's length), augmented:
    what the networks are initialised on, of the shapes they train on."""
    arrays = self.splits['train']
    batch = {k: np.zeros((1,) + v.shape[1:], v.dtype) for k, v in arrays.items()}
    if self.padded:
      length = min(self.buckets) if self.buckets else arrays['mask'].shape[1]
      batch = {k: (v[:, :length] if k in self.padded else v) for k, v in batch.items()}
      batch['mask'] = np.ones_like(batch['mask'])
    # An augmentation that crops changes the shapes the networks see, and an energy's dense layers are sized by
    # them; the draws do not matter (all zeros), so a fixed generator.
    return self.augment(batch, np.random.default_rng(0)) if self.augment else batch

  def inputs(self, arrays: dict) -> dict:
    """The arrays networks read (everything but the gold outputs)."""
    return {k: v for k, v in arrays.items() if k != 'y'}


def family(name: str):
  """The family module ``config.task`` names: a built-in alias (``FAMILIES``) or an import path."""
  return plugins.task(name, FAMILIES)


def get_task(config) -> Task:
  target = family(config.task)
  try:
    task = target.make_task(config)
  except (AttributeError, KeyError) as e:
    if config.task in FAMILIES:
      raise  # the package's own task: a bug, which keeps its traceback
    error = plugin_faults.unknown_field('config.task', config.task, plugin_faults.files(target, target.make_task), e)
    if error is None:
      raise
    raise error from None
  if not isinstance(task, Task):  # else the first use of it fails, naming no plug-in (a forgotten return: None)
    got = 'None' if task is None else f'a {type(task).__name__}'
    raise ValueError(f'config.task: make_task of {config.task!r} returned {got}, not an implicit_jax.tasks.Task '
                     '(see implicit_jax/plugins.py)')
  return task
