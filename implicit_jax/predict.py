r"""Predictions of a trained run's saved (best-on-dev) model for a file, one line per example.

  python -m implicit_jax.predict --workdir=DIR --input=FILE [--output=OUT] [--threshold=tuned|FLOAT]
                                 [--data_dir=PATH] [--scores]

``FILE``: a ``.npy`` feature matrix [N, D] already preprocessed like the run's inputs, or a file the run's task
reads (multi-label: an ARFF file in the run's format, whose label columns may hold anything). Each output line
is one example's decoded output (multi-label: its predicted label names, comma-separated; an empty line predicts
none); ``--scores`` writes the relaxed outputs instead, one row of numbers per example. ``--threshold`` is the
decision threshold of thresholded outputs: 'tuned' (the default) is the run's dev-tuned one.
"""

import os
import sys

import numpy as np
from absl import app, flags, logging

from implicit_jax import tasks
from implicit_jax.engine import checkpoints, cli

FLAGS = flags.FLAGS
flags.DEFINE_string('workdir', None, 'Training workdir (holds config.json and checkpoints).')
flags.DEFINE_string('input', None, 'A .npy feature matrix, or a file in the run\'s dataset format.')
flags.DEFINE_string('output', None, 'Where to write predictions (default: stdout).')
flags.DEFINE_string('threshold', 'tuned', '"tuned" (the run\'s dev-tuned threshold) or a number in (0, 1).')
flags.DEFINE_string('data_dir', None, 'Override config.data.data_dir (label names, scaling statistics).')
flags.DEFINE_bool('scores', False, 'Write relaxed outputs instead of decoded ones.')
flags.mark_flags_as_required(['workdir', 'input'])


def _threshold(spec: str, run) -> float:
  if spec == 'tuned':
    if run.metrics is None:
      raise ValueError('--threshold=tuned: the run has not finished (no metrics.json); give a number')
    return float(run.task.evaluator.calibration_of(run.metrics).get('threshold', 0.5))
  try:
    value = float(spec)
  except ValueError:
    raise ValueError(f'--threshold: expected "tuned" or a number, got {spec!r}') from None
  if not 0 < value < 1:
    raise ValueError(f'--threshold must be in (0, 1), got {value}')
  return value


def predict_file(workdir: str, path: str, threshold: str = 'tuned', data_dir: str | None = None):
  """``(relaxed outputs [N, ...], output lines)`` for the examples of ``path``."""
  run = checkpoints.load_trained(workdir, {'data.data_dir': data_dir} if data_dir is not None else None)
  t = _threshold(threshold, run)
  family = tasks.family(run.config.task)
  if path.endswith('.npy'):
    inputs, context = {'x': np.load(path)}, None
  elif hasattr(family, 'read_inputs'):
    inputs, context = family.read_inputs(run, path)
  else:
    raise ValueError(f'{path}: task {run.config.task!r} reads no input files; give a .npy feature matrix')
  try:
    pred = run.predict(inputs)
  except ValueError as e:
    raise ValueError(f'{path}: {e}') from None
  if hasattr(family, 'format_predictions'):
    lines = family.format_predictions(run, pred, context, t)
  else:
    lines = [' '.join(str(v) for v in np.ravel(row)) for row in run.task.space.decode(pred, t)]
  return pred, lines


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f'unexpected arguments: {argv[1:]}')
  logging.set_verbosity(logging.WARNING)  # Orbax logs every restore at INFO
  if FLAGS.output and not os.path.isdir(os.path.dirname(os.path.abspath(FLAGS.output))):
    raise FileNotFoundError(f'--output: the folder of {FLAGS.output} does not exist')  # before the work
  if FLAGS.output and (os.path.realpath(FLAGS.output) == os.path.realpath(FLAGS.input) or (
      os.path.exists(FLAGS.output) and os.path.exists(FLAGS.input) and os.path.samefile(FLAGS.output, FLAGS.input))):
    raise ValueError(f'--output={FLAGS.output} is the input file: writing predictions there would replace it; '
                     'give another path')
  pred, lines = predict_file(FLAGS.workdir, FLAGS.input, FLAGS.threshold, FLAGS.data_dir)
  if FLAGS.scores:
    lines = [' '.join(f'{s:.6f}' for s in np.ravel(row)) for row in pred]
  text = '\n'.join(lines) + '\n'
  if FLAGS.output:
    with open(FLAGS.output, 'w') as f:
      f.write(text)
    print(f'wrote {len(lines)} predictions to {FLAGS.output}', file=sys.stderr)
  else:
    sys.stdout.write(text)


if __name__ == '__main__':
  cli.run(main)
