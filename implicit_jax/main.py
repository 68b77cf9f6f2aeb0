r"""Command line: ``python -m implicit_jax.main --config=configs/default.py --workdir=DIR``.

``--config=RECORD.json`` reruns a recorded run from its own config (a published run's record in ``docs/``, or a
workdir's config.json; ``engine/config.py``'s ``from_record``): a record is its own recipe, and
``--config.seed=K`` or ``--config.data.data_dir=DIR`` override it as they would a config file.

Flags only; the work is ``train.train_and_evaluate``. Configs are locked, so a misspelt override
(``--config.optimzer.learning_rate=...``) is an error. Bad settings, bad data, a busy or unwritable workdir and a
diverged run end with one message naming the field, file, path or step, not a traceback (``engine/cli.py``).
``--distributed`` runs one process per host (docs/multihost.md); the processes check at the start that they run the
same config, workdir and data (``engine/multihost.py``); a process that fails ends at once, and the others stop
within seconds with an error, instead of waiting for it.
"""

import os
import sys
import traceback

from absl import app, flags, logging
from ml_collections import config_flags

from implicit_jax.engine import cli, multihost, train

FLAGS = flags.FLAGS
cli.define_config_flag('Path to a config file with get_config(), or path:arg for get_config(arg) (e.g. '
                       'configs/bibtex.py:mbce, a published row), or a run record (.json: a published run\'s '
                       'record, e.g. docs/mlc/runs/bibtex-mbce-seed0.json, or a workdir\'s config.json), which '
                       'reruns that run.')
flags.DEFINE_string('workdir', None, 'Directory for metrics and checkpoints.')
flags.DEFINE_bool('distributed', False, 'Call jax.distributed.initialize() first (one process per host; the '
                  'flags below default to the cluster environment: SLURM, Cloud TPU, Kubernetes, Open MPI; '
                  'docs/multihost.md).')
flags.DEFINE_string('coordinator_address', None, 'With --distributed: host:port of process 0, which serves the '
                    'coordination (default: $JAX_COORDINATOR_ADDRESS or the cluster environment).')
flags.DEFINE_integer('num_processes', None, 'With --distributed: how many processes the run has.')
flags.DEFINE_integer('process_id', None, 'With --distributed: this process\'s index, 0 to num_processes - 1.')
flags.DEFINE_integer('heartbeat_timeout', 100, 'With --distributed: seconds without word from a process after '
                     'which it counts as dead and the others stop with an error.', lower_bound=1)
flags.DEFINE_integer('initialization_timeout', 300, 'With --distributed: seconds to wait for every process to '
                     'join at the start (hosts may start apart); then the run stops with an error.', lower_bound=1)
flags.mark_flags_as_required(['config', 'workdir'])


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f'unexpected arguments: {argv[1:]}')
  logging.set_verbosity(logging.WARNING)  # Orbax logs every save and restore at INFO
  # The run records which file (and argument) its values came from: config.json then names the row it reproduces.
  FLAGS.config.config_file = config_flags.get_config_filename(FLAGS['config'])
  FLAGS.config.overrides = cli.overrides(config_flags.get_override_values(FLAGS['config']))
  if not FLAGS.distributed:
    _train()
    return
  import jax  # pylint: disable=import-outside-toplevel
  multihost.initialize(FLAGS.coordinator_address, FLAGS.num_processes, FLAGS.process_id, FLAGS.heartbeat_timeout,
                       FLAGS.initialization_timeout)
  try:
    _train()
  except BaseException as e:  # pylint: disable=broad-except  # every way out of a failed process is the same
    _end_now(e, f'process {jax.process_index()} of {jax.process_count()}')


def _train():
  try:
    train.train_and_evaluate(FLAGS.config, FLAGS.workdir)
  except KeyboardInterrupt:
    raise cli.Interrupted(f'{FLAGS.workdir} keeps its last checkpoint; the same command resumes from it') from None


def _end_now(error: BaseException, where: str) -> None:
  """Ends a failed process of a multi-host run at once, after one line on stderr (a bug keeps its traceback).

  An ordinary exit runs JAX's shutdown, which waits at a barrier for every process, while the others wait in a
  collective for this one: all of them would hang for minutes. Ending now closes this process's connections, so
  the others stop within seconds: a collective fails (the branch below, on their side) or JAX's coordination
  service reports the lost process and ends them (after --heartbeat_timeout at most)."""
  status = 1
  if multihost.lost_peer(error):
    message = (f'error: {where}: lost contact with another process of the run ({cli.one_line(error)[:300]}); '
               'its output says why it stopped. The workdir keeps its last checkpoint; the same command on every '
               'host resumes from it')
  elif isinstance(error, cli.USER_ERRORS):
    message = f'error: {where}: {cli.one_line(error)}'
  elif isinstance(error, KeyboardInterrupt):
    message, status = f'interrupted: {where}{": " + cli.one_line(error) if str(error) else ""}', 130
  elif isinstance(error, SystemExit):
    message, status = '', error.code if isinstance(error.code, int) else 1
  else:
    message = f'error: {where}: {"".join(traceback.format_exception(error)).rstrip()}'
  if message:
    print(message, file=sys.stderr)
  sys.stdout.flush()
  sys.stderr.flush()
  os._exit(status)  # pylint: disable=protected-access


if __name__ == '__main__':
  cli.run(main)
