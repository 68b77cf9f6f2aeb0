r"""Metrics of a trained run's saved (best-on-dev) model on any split.

  python -m implicit_jax.evaluate --workdir=DIR [--split=test|dev|train|all] [--data_dir=PATH] [--json]

Scores the split at threshold 0.5 and at the run's dev-tuned threshold (from ``metrics.json``; tuned on dev
now when the run has not finished). ``--data_dir`` points a run at its data when it moved. Works on an
interrupted run too: the best parameters saved so far are used.
"""

import json
import sys

from absl import app, flags, logging

from implicit_jax import checkpoints, metrics, train

FLAGS = flags.FLAGS
flags.DEFINE_string('workdir', None, 'Training workdir (holds config.json and checkpoints).')
flags.DEFINE_enum('split', 'test', ['train', 'dev', 'test', 'all'], 'Split to score.')
flags.DEFINE_string('data_dir', None, 'Override config.data.data_dir (the run\'s data moved).')
flags.DEFINE_bool('json', False, 'Print one JSON object instead of a table.')
flags.mark_flags_as_required(['workdir'])


def evaluate_run(workdir: str, splits=('test',), data_dir: str | None = None) -> dict:
  """``{split: {'threshold': t, 'at_0.5': {...}, 'at_tuned': {...}}}`` for the saved model."""
  overrides = {'data.data_dir': data_dir} if data_dir is not None else None
  run = checkpoints.load_trained(workdir, overrides)
  if run.metrics is not None:
    threshold = run.metrics['threshold']
  else:
    x_dev, y_dev = run.task.splits['dev']
    threshold, _ = train.tune_threshold(run.predict(x_dev), y_dev)
  out = {}
  for split in splits:
    x, y = run.task.splits[split]
    probs = run.predict(x)
    out[split] = {'threshold': threshold, 'num_examples': len(x), 'at_0.5': metrics.all_f1(probs, y, 0.5),
                  'at_tuned': metrics.all_f1(probs, y, threshold)}
  return out


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f'unexpected arguments: {argv[1:]}')
  logging.set_verbosity(logging.WARNING)  # Orbax logs every save and restore at INFO
  splits = ('train', 'dev', 'test') if FLAGS.split == 'all' else (FLAGS.split,)
  try:
    result = evaluate_run(FLAGS.workdir, splits, FLAGS.data_dir)
  except (ValueError, FileNotFoundError) as e:
    print(f'error: {e}', file=sys.stderr)
    sys.exit(1)
  if FLAGS.json:
    print(json.dumps(result, indent=2))
    return
  print(f'{"split":6} {"n":>6} {"threshold":>9} {"example-F1":>10} {"micro-F1":>9} {"macro-F1":>9}')
  for split, r in result.items():
    for name, t in (('at_0.5', 0.5), ('at_tuned', r['threshold'])):
      m = r[name]
      print(f'{split:6} {r["num_examples"]:6d} {t:9.2f} {m["example_f1"]:10.4f} {m["micro_f1"]:9.4f} '
            f'{m["macro_f1"]:9.4f}')


if __name__ == '__main__':
  app.run(main)
