r"""Command line: ``python -m implicit_jax.main --config=configs/default.py --workdir=DIR``.

Flags only; the work is ``train.train_and_evaluate``. Configs are locked, so a misspelt override
(``--config.optimzer.learning_rate=...``) is an error. Bad settings, bad data, a busy or unwritable workdir and a
diverged run end with one message naming the field, file, path or step, not a traceback (``engine/cli.py``).
"""

from absl import app, flags, logging
from ml_collections import config_flags

from implicit_jax.engine import cli, train

FLAGS = flags.FLAGS
config_flags.DEFINE_config_file('config', None, 'Path to a config file with get_config(), or path:arg for '
                                'get_config(arg) (e.g. configs/bibtex.py:mbce, a published row).', lock_config=True)
flags.DEFINE_string('workdir', None, 'Directory for metrics and checkpoints.')
flags.DEFINE_bool('distributed', False, 'Call jax.distributed.initialize() first (one process per host; the '
                  'coordinator comes from the cluster environment or JAX_COORDINATOR_ADDRESS etc.).')
flags.mark_flags_as_required(['config', 'workdir'])


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f'unexpected arguments: {argv[1:]}')
  logging.set_verbosity(logging.WARNING)  # Orbax logs every save and restore at INFO
  if FLAGS.distributed:
    import jax  # pylint: disable=import-outside-toplevel
    jax.distributed.initialize()
  # The run records which file (and argument) its values came from: config.json then names the row it reproduces.
  FLAGS.config.config_file = config_flags.get_config_filename(FLAGS['config'])
  try:
    train.train_and_evaluate(FLAGS.config, FLAGS.workdir)
  except KeyboardInterrupt:
    raise cli.Interrupted(f'{FLAGS.workdir} keeps its last checkpoint; the same command resumes from it') from None


if __name__ == '__main__':
  cli.run(main)
