r"""Metrics of a trained run's saved (best-on-dev) model on any split.

  python -m implicit_jax.evaluate --workdir=DIR [--split=test|dev|train|all] [--data_dir=PATH] [--json]

Scores the split with the task's evaluator under the run's calibration (multi-label: F1 at 0.5 and at the
dev-tuned threshold), read from ``metrics.json``, or chosen on dev now when the run has not finished.
``--data_dir`` points a run at its data when it moved. Works on a run that is still training: it reads the best
parameters saved so far and writes nothing. Data whose fingerprint differs from the run's record is refused; a
multi-label split in which some label is never positive is scored with a warning naming those labels.
"""

import json
import sys

import numpy as np
from absl import app, flags, logging

from implicit_jax.engine import checkpoints, cli, config as config_lib
from implicit_jax.spaces.binary import Binary

FLAGS = flags.FLAGS


def _warn_never_positive(task, split: str, y) -> None:
  """Multi-label: a label no example of the split holds scores as perfectly predicted whenever it is never
  predicted (F1 1.0 on an all-zero column), which says nothing: warn, naming the labels."""
  y = np.asarray(y)
  if not isinstance(task.space, Binary) or y.ndim != 2 or not len(y):
    return
  never = np.flatnonzero(~np.any(y > 0, axis=0))
  if never.size:
    names = task.names.get('y') or [str(j) for j in range(y.shape[1])]
    shown = ', '.join(repr(names[j]) for j in never[:5]) + (f' (+{never.size - 5} more)' if never.size > 5 else '')
    print(f'warning: the {split} split has no positive example of {never.size} of {y.shape[1]} labels: {shown}; '
          'its scores say nothing about them', file=sys.stderr, flush=True)


def evaluate_run(workdir: str, splits=('test',), data_dir: str | None = None) -> dict:
  """``{split: {'num_examples': n, **evaluator.score(...)}}`` for the saved model."""
  overrides = {'data.data_dir': data_dir} if data_dir is not None else None
  # Other data would score rows the run may have trained on; checked before the parameters are read, since data of
  # another vocabulary or label set builds a model they do not fit.
  run = checkpoints.load_trained(workdir, overrides, same_data=True)
  evaluator = run.task.evaluator
  if run.metrics is not None:
    calibration = evaluator.calibration_of(run.metrics)
  else:
    dev = run.task.splits['dev']
    calibration = evaluator.calibrate(run.predict(dev), dev)
  out = {}
  for split in splits:
    arrays = run.task.splits[split]
    _warn_never_positive(run.task, split, arrays['y'])
    out[split] = {'num_examples': len(arrays['y']), **evaluator.score(run.predict(arrays), arrays, calibration)}
  return out


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f'unexpected arguments: {argv[1:]}')
  logging.set_verbosity(logging.WARNING)  # Orbax logs every save and restore at INFO
  splits = ('train', 'dev', 'test') if FLAGS.split == 'all' else (FLAGS.split,)
  result = evaluate_run(FLAGS.workdir, splits, FLAGS.data_dir)
  if FLAGS.json:
    print(json.dumps(result, indent=2))
    return
  rows = {split: config_lib.flatten(r) for split, r in result.items()}
  columns = list(next(iter(rows.values())))
  widths = [max(len(c), 8) for c in columns]
  print(f'{"split":6} ' + ' '.join(f'{c:>{w}}' for c, w in zip(columns, widths)))
  for split, r in rows.items():
    cells = [f'{r[c]:{w}.4f}' if isinstance(r[c], float) else f'{r[c]!s:>{w}}' for c, w in zip(columns, widths)]
    print(f'{split:6} ' + ' '.join(cells))


def define_flags() -> None:
  """The command line's flags, defined when run as a program only: evaluate and predict define some of the same
  names, and a process importing both as libraries (a test session, a notebook) would see them defined twice."""
  flags.DEFINE_string('workdir', None, 'Training workdir (holds config.json and checkpoints).')
  flags.DEFINE_enum('split', 'test', ['train', 'dev', 'test', 'all'], 'Split to score.')
  flags.DEFINE_string('data_dir', None, 'Override config.data.data_dir (the run\'s data moved).')
  flags.DEFINE_bool('json', False, 'Print one JSON object instead of a table.')
  flags.mark_flags_as_required(['workdir'])


if __name__ == '__main__':
  define_flags()
  cli.run(main)
