"""What the command lines (``main``, ``evaluate``, ``predict``) share: bad input ends in one line, not a traceback.

``run(main)`` is ``absl.app.run`` with two guards. Flags are parsed by ``parse_flags``: a misspelt config override,
a config file that does not exist or fails to load, a value of the wrong type, each print ``error: ...`` naming the
flag and exit with status 2. While ``main`` runs, the errors that mean bad input or a bad environment (a field out
of range, a missing or malformed file, a diverged run, a full disk) print ``error: ...`` and exit with status 1.
Anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import sys

from absl import app, flags

# ValueError: settings and file contents; OSError: paths, permissions, disk space; FloatingPointError: a run
# that diverged. While flags are parsed, KeyError too: a config field that does not exist (later, a KeyError is a
# bug and keeps its traceback).
USER_ERRORS = (ValueError, OSError, FloatingPointError)


def one_line(error: BaseException) -> str:
  """The message of ``error`` on one line: the first line, and the last when they differ (a nested traceback's
  last line is its cause)."""
  text = str(error.args[0]) if isinstance(error, KeyError) and error.args else str(error)
  lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
  if not lines:
    return type(error).__name__
  return lines[0] if len(lines) == 1 else f'{lines[0]} {lines[-1]}'


def _config_error(error: BaseException, argv) -> str:
  overrides = [a.split('=', 1)[0] for a in argv if a.startswith('--config.')]
  if isinstance(error, KeyError):
    name, *hint = str(error.args[0]).splitlines() if error.args else ['?']
    hint = ' '.join(hint)
    return f'{", ".join(overrides) or "--config"}: the config has no field {name}. {hint}'.strip()
  if isinstance(error, OSError):
    config = next((a.split('=', 1)[1] for a in argv if a.startswith('--config=')), '?')
    return f'--config={config}: cannot load it: {str(error).strip().splitlines()[-1].strip()}'
  return one_line(error)


def parse_flags(argv):
  """``absl`` flag parsing with one-line errors (exit status 2)."""
  try:
    args = flags.FLAGS(argv)
    if 'config' in flags.FLAGS and flags.FLAGS.config is not None:
      # A config file that failed to load is a placeholder raising on first use: use it now.
      'seed' in flags.FLAGS.config  # pylint: disable=pointless-statement
    return args
  except (flags.Error, KeyError, *USER_ERRORS) as e:
    print(f'error: {_config_error(e, argv)}', file=sys.stderr)
    print(f'(run {argv[0] if argv else "the command"} --help for the flags)', file=sys.stderr)
    sys.exit(2)


def run(main) -> None:
  """``app.run(main)``; errors of ``USER_ERRORS`` end the program with one line and status 1."""

  def guarded(argv):
    try:
      main(argv)
    except USER_ERRORS as e:
      print(f'error: {one_line(e)}', file=sys.stderr, flush=True)
      sys.exit(1)

  app.run(guarded, flags_parser=parse_flags)
