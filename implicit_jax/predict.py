r"""Predictions of a trained run's saved (best-on-dev) model for a file, one line per example.

  python -m implicit_jax.predict --workdir=DIR --input=FILE [--output=OUT] [--threshold=tuned|FLOAT]
                                 [--data_dir=PATH] [--scores] [--format=auto|FORMAT]

What a file may be, and what the output lines are, is up to the run's task: its module's ``npy_inputs``,
``read_inputs``, ``FORMATS`` and ``format_predictions`` (``implicit_jax/plugins.py``), built-in or a plug-in
alike; nothing here knows a task by its name. ``FILE``: a ``.npy`` of the model's input ``x`` already preprocessed
like the run's inputs (multi-label: a numeric feature matrix [N, D]; tagging: word ids [N, T], 0 after each
sentence's end), or a file the run's task reads:

* multi-label: an ARFF file in the run's format; its label columns may hold anything (``?``, old labels) or be
  absent. Each output line is one example's predicted label names, comma-separated (an empty line predicts none).
* tagging (``FORMATS``: conll, text): a CoNLL-format file (a token per line in the first column, a blank line
  between sentences; further columns are ignored, except the POS and chunk columns a run with NER+ features reads)
  or raw text (one sentence per line, tokens split on whitespace); ``--format`` says which, 'auto' (the default)
  tells them apart and says what it chose. Words are looked up in the run's recorded vocabulary (a word it lacks
  is UNK, as in training). The output is CoNLL-style: ``token<TAB>predicted-tag`` per line, a blank line between
  sentences.
* a task without ``format_predictions``: the output space's ``decode`` of each example on a line (a class id, a
  row of 0/1 labels).

``--format`` takes 'auto' or a name of the task's ``FORMATS``; a task that names none takes 'auto' only.
``--scores`` writes the relaxed outputs instead, one row of numbers per example. ``--threshold`` is the decision
threshold of thresholded outputs: 'tuned' (the default) is the run's dev-tuned one.
"""

import os
import sys

import numpy as np
from absl import app, flags, logging

from implicit_jax import tasks
from implicit_jax.engine import checkpoints, cli

FLAGS = flags.FLAGS


def _threshold_given(spec: str) -> bool:
  """Whether ``--threshold`` is 'tuned' or a number in (0, 1): checked as the flags are parsed, before the run is
  read."""
  try:
    return spec == 'tuned' or 0 < float(spec) < 1
  except ValueError:
    return False


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


def load_npy(path: str) -> np.ndarray:
  """A numeric array from a .npy file; an object or text array, or a file that is not a .npy, is a one-line error
  saying what it holds and what predict needs."""
  with open(path, 'rb') as f:
    if f.read(6) != b'\x93NUMPY':
      raise ValueError(f'{path}: not a .npy file (no NumPy header; a text file?): save the inputs with numpy.save, '
                       'or give the task\'s own file format')
  try:
    x = np.load(path, allow_pickle=False)
  except ValueError as e:
    if 'allow_pickle' not in str(e):
      raise ValueError(f'{path}: cannot read the .npy file: {e}') from None
    raise ValueError(f'{path}: an array of Python objects, which predict does not load (loading it could run code '
                     'from the file): save numbers, e.g. numpy.save(path, x.astype(numpy.float32))') from None
  if not (np.issubdtype(x.dtype, np.number) or x.dtype == np.bool_):
    what = 'text' if x.dtype.kind in 'US' else f'{x.dtype} values'
    raise ValueError(f'{path}: holds {what} (dtype {x.dtype}), not numbers: predict reads the model\'s numeric '
                     'inputs from a .npy; give the task\'s own file format for anything else')
  return x


def read(run, path: str, input_format: str = 'auto'):
  """``(inputs, context)`` of the file ``path`` by the hooks the run's task module provides
  (``implicit_jax/plugins.py``): a ``.npy`` through ``npy_inputs``, or as the input ``x`` itself for a task that
  reads ``x`` alone; another file through ``read_inputs``, given ``input_format`` when the task names its formats
  (``FORMATS``). A hook the file needs and the task lacks, and a format it does not name, are one-line errors
  naming the task."""
  task, family = run.config.task, tasks.family(run.config.task)
  formats = getattr(family, 'FORMATS', None)
  if formats is not None and (isinstance(formats, str) or not all(isinstance(f, str) for f in formats)):
    raise ValueError(f'task {task!r}: FORMATS must be a tuple of format names, got {formats!r} (see '
                     'implicit_jax/plugins.py)')
  if input_format != 'auto' and input_format not in (formats or ()):
    raise ValueError(f'--format={input_format}: task {task!r} ' + (
        f'reads the formats {", ".join(formats)} (or auto)' if formats else
        'names no file formats (its module defines no FORMATS; see implicit_jax/plugins.py): leave --format out'))
  if not path.endswith('.npy'):
    if not callable(getattr(family, 'read_inputs', None)):
      raise ValueError(f'{path}: task {task!r} reads no input files (its module provides no read_inputs(run, path); '
                       'see implicit_jax/plugins.py): give a .npy of the input x')
    return family.read_inputs(run, path, input_format) if formats else family.read_inputs(run, path)
  if input_format != 'auto':
    raise ValueError(f'--format={input_format} names a file format of task {task!r}; {path} is a .npy')
  x = load_npy(path)
  if callable(getattr(family, 'npy_inputs', None)):
    return family.npy_inputs(run, path, x)
  reads = sorted(run.task.inputs(run.task.splits['train']))
  if reads != ['x']:
    raise ValueError(f'{path}: task {task!r} reads the inputs {", ".join(reads)}, and a .npy gives x alone: its '
                     'module provides no npy_inputs(run, path, x) to make them from it (see implicit_jax/plugins.py)'
                     + ('; give a file in the task\'s own format' if callable(getattr(family, 'read_inputs', None))
                        else ''))
  return {'x': x}, None


def predict_file(workdir: str, path: str, threshold: str = 'tuned', data_dir: str | None = None,
                 input_format: str = 'auto'):
  """``(relaxed outputs [N, ...], output lines)`` for the examples of ``path``: the task's
  ``format_predictions`` of them, or else one line per example of the output space's ``decode``."""
  if os.path.isdir(path):
    raise IsADirectoryError(f'--input={path} is a folder: give a file of examples (a .npy of inputs, or a file in '
                            'the run\'s dataset format)')
  run = checkpoints.load_trained(workdir, {'data.data_dir': data_dir} if data_dir is not None else None)
  t = _threshold(threshold, run)
  inputs, context = read(run, path, input_format)
  try:
    pred = run.predict(inputs)
  except ValueError as e:
    raise ValueError(f'{path}: {e}') from None
  family = tasks.family(run.config.task)
  if callable(getattr(family, 'format_predictions', None)):
    return pred, family.format_predictions(run, pred, context, t)
  return pred, [' '.join(str(v) for v in np.ravel(row)) for row in run.task.space.decode(pred, t)]


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
  pred, lines = predict_file(FLAGS.workdir, FLAGS.input, FLAGS.threshold, FLAGS.data_dir, FLAGS.format)
  if FLAGS.scores:
    lines = [' '.join(f'{s:.6f}' for s in np.ravel(row)) for row in pred]
  text = '\n'.join(lines) + '\n'
  if FLAGS.output:
    with open(FLAGS.output, 'w') as f:
      f.write(text)
    print(f'wrote {len(pred)} predictions to {FLAGS.output}', file=sys.stderr)
  else:
    sys.stdout.write(text)


def define_flags() -> None:
  """The command line's flags, defined when run as a program only: evaluate and predict define some of the same
  names, and a process importing both as libraries (a test session, a notebook) would see them defined twice."""
  flags.DEFINE_string('workdir', None, 'Training workdir (holds config.json and checkpoints).')
  flags.DEFINE_string('input', None, 'A .npy feature matrix, or a file in the run\'s dataset format.')
  flags.DEFINE_string('output', None, 'Where to write predictions (default: stdout).')
  flags.DEFINE_string('threshold', 'tuned', '"tuned" (the run\'s dev-tuned threshold) or a number in (0, 1).')
  flags.DEFINE_string('data_dir', None, 'Override config.data.data_dir (label names, scaling statistics).')
  flags.DEFINE_bool('scores', False, 'Write relaxed outputs instead of decoded ones.')
  flags.DEFINE_string('format', 'auto', 'The input file\'s format, among those the run\'s task names (its '
                      'FORMATS; tagging: conll for CoNLL columns, text for a sentence per line); auto tells them '
                      'apart.')
  flags.mark_flags_as_required(['workdir', 'input'])
  flags.register_validator('threshold', _threshold_given, message='--threshold: "tuned" or a number in (0, 1)')


if __name__ == '__main__':
  define_flags()
  cli.run(main)
