r"""Metrics of a trained run's saved (best-on-dev) model on any split.

  python -m implicit_jax.evaluate --workdir=DIR [--split=test|dev|train|all] [--data_dir=PATH] [--json]

Scores the split with the task's evaluator under the run's calibration (multi-label: F1 at 0.5 and at the
dev-tuned threshold), read from ``metrics.json``, or chosen on dev now when the run has not finished.
``--data_dir`` points a run at its data when it moved. Works on a run that is still training: it reads the best
parameters saved so far and writes nothing.
"""

import json

from absl import app, flags, logging

from implicit_jax.engine import checkpoints, cli, config as config_lib, workdir as workdir_lib

FLAGS = flags.FLAGS
flags.DEFINE_string('workdir', None, 'Training workdir (holds config.json and checkpoints).')
flags.DEFINE_enum('split', 'test', ['train', 'dev', 'test', 'all'], 'Split to score.')
flags.DEFINE_string('data_dir', None, 'Override config.data.data_dir (the run\'s data moved).')
flags.DEFINE_bool('json', False, 'Print one JSON object instead of a table.')
flags.mark_flags_as_required(['workdir'])


def evaluate_run(workdir: str, splits=('test',), data_dir: str | None = None) -> dict:
  """``{split: {'num_examples': n, **evaluator.score(...)}}`` for the saved model."""
  overrides = {'data.data_dir': data_dir} if data_dir is not None else None
  run = checkpoints.load_trained(workdir, overrides)
  workdir_lib.check_unchanged(workdir, run.task)  # other data would score rows the run may have trained on
  evaluator = run.task.evaluator
  if run.metrics is not None:
    calibration = evaluator.calibration_of(run.metrics)
  else:
    dev = run.task.splits['dev']
    calibration = evaluator.calibrate(run.predict(dev), dev)
  out = {}
  for split in splits:
    arrays = run.task.splits[split]
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


if __name__ == '__main__':
  cli.run(main)
