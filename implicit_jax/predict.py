r"""Predictions of a trained run's saved (best-on-dev) model for a dataset file, written as label names.

  python -m implicit_jax.predict --workdir=DIR --input=FILE [--output=OUT] [--threshold=tuned|FLOAT]
                                 [--data_dir=PATH] [--scores]

``FILE``: an ARFF file in the format the run was trained on (MULAN/MEKA or Clus; the label columns may hold
anything, they are not used), or a ``.npy`` feature matrix [N, D] already preprocessed like the run's inputs.
Each output line is one example: its predicted labels, comma-separated (an empty line predicts none);
``--scores`` writes the relaxed scores instead, one row of L numbers per example. The threshold defaults to
the run's dev-tuned one.
"""

import sys

import numpy as np
from absl import app, flags, logging

from implicit_jax import checkpoints
from implicit_jax.data import mlc_datasets

FLAGS = flags.FLAGS
flags.DEFINE_string('workdir', None, 'Training workdir (holds config.json and checkpoints).')
flags.DEFINE_string('input', None, 'ARFF file in the run\'s dataset format, or a .npy feature matrix.')
flags.DEFINE_string('output', None, 'Where to write predictions (default: stdout).')
flags.DEFINE_string('threshold', 'tuned', '"tuned" (the run\'s dev-tuned threshold) or a number in (0, 1).')
flags.DEFINE_string('data_dir', None, 'Override config.data.data_dir (XML label names, scaling statistics).')
flags.DEFINE_bool('scores', False, 'Write relaxed scores instead of label names.')
flags.mark_flags_as_required(['workdir', 'input'])


def _threshold(spec: str, run) -> float:
  if spec == 'tuned':
    if run.metrics is None:
      raise ValueError('--threshold=tuned: the run has not finished (no metrics.json); give a number')
    return float(run.metrics['threshold'])
  try:
    value = float(spec)
  except ValueError:
    raise ValueError(f'--threshold: expected "tuned" or a number, got {spec!r}') from None
  if not 0 < value < 1:
    raise ValueError(f'--threshold must be in (0, 1), got {value}')
  return value


def predict_file(workdir: str, path: str, threshold: str = 'tuned', data_dir: str | None = None):
  """``(scores [N, L], predicted [N, L] bool, label names)`` for the examples of ``path``."""
  run = checkpoints.load_trained(workdir, {'data.data_dir': data_dir} if data_dir is not None else None)
  t = _threshold(threshold, run)
  names = [str(j) for j in range(run.task.num_labels)]
  if path.endswith('.npy'):
    x = np.load(path).astype(np.float32)
  else:
    d = run.config.data
    data = mlc_datasets.read_for_prediction(
        path, d.name, d.data_dir, d.protocol, d.dev_fraction, d.split_seed, num_labels=run.task.num_labels,
        train_file=d.train_file, test_file=d.test_file, xml_file=d.xml_file, file_format=d.format)
    x, names = data.x.astype(np.float32), list(data.label_names)
  try:
    scores = run.predict(x)
  except ValueError as e:
    raise ValueError(f'{path}: {e}') from None
  return scores, scores >= t, names


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f'unexpected arguments: {argv[1:]}')
  logging.set_verbosity(logging.WARNING)  # Orbax logs every restore at INFO
  try:
    scores, predicted, names = predict_file(FLAGS.workdir, FLAGS.input, FLAGS.threshold, FLAGS.data_dir)
  except (ValueError, FileNotFoundError) as e:
    print(f'error: {e}', file=sys.stderr)
    sys.exit(1)
  if FLAGS.scores:
    lines = [' '.join(f'{s:.6f}' for s in row) for row in scores]
  else:
    lines = [','.join(names[j] for j in np.flatnonzero(row)) for row in predicted]
  text = '\n'.join(lines) + '\n'
  if FLAGS.output:
    with open(FLAGS.output, 'w') as f:
      f.write(text)
    print(f'wrote {len(lines)} predictions to {FLAGS.output}', file=sys.stderr)
  else:
    sys.stdout.write(text)


if __name__ == '__main__':
  app.run(main)
