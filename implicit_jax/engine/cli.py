"""What the command lines (``main``, ``evaluate``, ``predict``) share: bad input ends in one line, not a traceback.

``run(main)`` is ``absl.app.run`` with two guards. Flags are parsed by ``parse_flags``: a misspelt config override
(nested ones too), a config file that does not exist, does not parse, defines no ``get_config()``, whose
``get_config()`` raises or returns something other than a ConfigDict, a value of the wrong type, each print
``error: ...`` naming the flag or file and exit with status 2. While ``main`` runs, the errors that mean bad input
or a bad environment (a field out of range, a missing or malformed file, a diverged run, a full disk) print
``error: ...`` and exit with status 1; Ctrl-C prints one line and exits with status 130 (``interrupts.py``: never
inside an XLA compile, which crashed the process at its exit, nor lost where Python drops exceptions). Anything else
is a bug and keeps its traceback.
"""

from __future__ import annotations

import os
import re
import sys
import traceback
import warnings

import ml_collections
from absl import app, flags
from ml_collections import config_flags

from implicit_jax.engine import config as config_lib, interrupts, registry

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
  config = next((a.split('=', 1)[1] for a in argv if a.startswith('--config=')), '?')
  path = os.path.abspath(config.split(':', 1)[0])
  # A relative --config is loaded under its relative name: compare the frames' files as absolute paths too.
  lines = [(frame.lineno, frame.line or '') for frame in traceback.extract_tb(error.__traceback__)
           if os.path.abspath(frame.filename) == path]
  locked = re.search(r'Key "([^"]+)" does not exist and cannot be added', str(error))
  if lines and locked:  # the config file itself sets a field the (locked) config lacks: a typo in the file
    key = locked.group(1)
    retired = _retired_in_line(key, lines[-1][1])
    if retired:
      return f'--config={config}: line {lines[-1][0]} sets {key!r} ({retired[0]}), {retired[1]}'
    hint = re.search(r'Did you mean "[^"]+" instead of "[^"]+"\?', str(error))
    return (f'--config={config}: line {lines[-1][0]} sets {key!r}, a field the config does not have'
            + (f'. {hint.group(0)}' if hint else ''))
  if isinstance(error, AttributeError) and error.args and isinstance(error.args[0], KeyError):
    error = error.args[0]  # a misspelt nested field (--config.optimizer.learning_rat): ml_collections wraps it
  if isinstance(error, KeyError):
    name, *hint = str(error.args[0]).splitlines() if error.args else ['?']
    hint = ' '.join(hint)
    field = name.strip('\'"')
    named = [o for o in overrides if field in o[len('--config.'):].split('.')]  # the override at fault
    for override in named:
      retired = registry.plugins().retired(override[len('--config.'):], _value_of(override, argv))
      if retired:
        return f'{override}: {retired}'
    return f'{", ".join(named or overrides) or "--config"}: the config has no field {name}. {hint}'.strip()
  if isinstance(error, OSError):
    return f'--config={config}: cannot load it: {str(error).strip().splitlines()[-1].strip()}'
  # The config file's own code failed: a syntax error, no get_config(), get_config() raising.
  if isinstance(error, SyntaxError):
    return f'--config={config}: cannot load it: {type(error).__name__} at line {error.lineno}: {error.msg}'
  if isinstance(error, AttributeError) and 'get_config' in str(error):
    return f'--config={config}: cannot load it: the file defines no get_config()'
  if lines:
    return f'--config={config}: get_config() failed at line {lines[-1][0]}: {type(error).__name__}: {one_line(error)}'
  return one_line(error)


def _value_of(flag: str, argv) -> str | None:
  """The value ``argv`` gives ``flag`` (``--flag=value`` or the next word; the last one given), or None."""
  value = None
  for i, arg in enumerate(argv):
    if arg.startswith(f'{flag}='):
      value = arg.split('=', 1)[1]
    elif arg == flag and i + 1 < len(argv):
      value = argv[i + 1]
  return value


def _retired_in_line(key: str, line: str) -> tuple[str, str] | None:
  """``(field, what sets it now)`` when the config file's ``line``, which sets ``key``, sets a retired field
  (``Plugins.retired``): the dotted names the line writes (``c.section.key = 3``, or ``c.section.update(key=3)``),
  each tried without its leading parts (the config's own name)."""
  written = re.search(rf'\b{re.escape(key)}\s*=\s*([^,)\s]+)', line)
  value = written.group(1).strip('\'"') if written else None
  for path in re.findall(r'[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+', line):
    parts = path.split('.')
    parts = parts[:-1] + [key] if parts[-1] == 'update' else parts
    if parts[-1] != key:
      continue
    for start in range(len(parts)):
      retired = registry.plugins().retired('.'.join(parts[start:]), value)
      if retired:
        return '.'.join(parts[start:]), retired
  return None


class _ConfigParser(flags.ArgumentParser):
  """``--config=``'s value: a config file (``path[:arg]``, loaded by ml_collections' own parser, ``file_parser``)
  or a run record (``.json``, ``config_lib.from_record``: a published run's JSON or a workdir's config.json reruns
  that run); to which it adds the section of the method that ``--config.method=`` names (``method``, set by
  ``parse_flags`` from the command line ``argv``) when the config lacks it (``config.add_method_section``):
  ml_collections checks the other overrides against the config as loaded, so ``--config.<its section>.<field>=``
  needs the section first."""

  def __init__(self, file_parser):
    self._file_parser = file_parser
    self.method, self.argv = None, ()

  def parse(self, argument):
    if argument.split(':', 1)[0].endswith('.json'):
      config = config_lib.from_file(argument)
      config.lock()  # as ml_collections locks a config file's: a misspelt override is an error
    else:
      config = self._file_parser.parse(argument)
    if self.method is not None and isinstance(config, ml_collections.ConfigDict) and 'task' in config:
      try:
        config_lib.add_method_section(config, self.method)
      except ValueError as e:
        # The run's own check names a bad method (exit 1); here only when an override needs its section. Not as a
        # ValueError, which absl would prefix with the --config flag.
        if any(a.split('=', 1)[0].split('.')[1] not in config for a in self.argv if a.startswith('--config.')):
          raise _MethodError(str(e)) from None
    return config

  def flag_type(self):
    return self._file_parser.flag_type()


class _MethodError(Exception):
  """A method named by ``--config.method=`` that does not resolve, while flags are parsed."""


def define_config_flag(help_string: str, name: str = 'config', flag_values=flags.FLAGS, **kwargs):
  """``config_flags.DEFINE_config_file(name)``, locked, whose value may also be a run record, with a plug-in method's
  section (``_ConfigParser``): ml_collections takes no parser of its own, so its parser is wrapped before any flag
  is parsed. ``kwargs`` go to ``DEFINE_config_file`` (``sys_argv``: the command line its overrides are read
  from)."""
  holder = config_flags.DEFINE_config_file(name, None, help_string, flag_values=flag_values, lock_config=True,
                                           **kwargs)
  flag_values[name].parser = _ConfigParser(flag_values[name].parser)
  return holder


def parse_flags(argv):
  """``absl`` flag parsing with one-line errors (exit status 2)."""
  try:
    parser = flags.FLAGS['config'].parser if 'config' in flags.FLAGS else None
    if isinstance(parser, _ConfigParser):  # main, tune
      parser.method, parser.argv = _method_of(argv), argv
    args = flags.FLAGS(argv)
    if 'config' in flags.FLAGS and flags.FLAGS.config is not None:
      # A config file that failed to load is a placeholder raising on first use: use it now.
      'seed' in flags.FLAGS.config  # pylint: disable=pointless-statement
      if not isinstance(flags.FLAGS.config, ml_collections.ConfigDict):
        config = next((a.split('=', 1)[1] for a in argv if a.startswith('--config=')), '?')
        raise ValueError(f'--config={config}: get_config() returned a {type(flags.FLAGS.config).__name__}, not an '
                         'ml_collections.ConfigDict (start from config_lib.from_file or base_config)')
    return args
  except Exception as e:  # pylint: disable=broad-except  # while parsing, only flags and the config file run
    print(f'error: {_config_error(e, argv)}', file=sys.stderr)
    print(f'(run {argv[0] if argv else "the command"} --help for the flags)', file=sys.stderr)
    sys.exit(2)


def overrides(values: dict) -> tuple[str, ...]:
  """The ``--config.<field>=<value>`` flags a command line was given (``config_flags.get_override_values``), each
  as a shell word that gives the same value again; the fields that record provenance are left out."""
  out = []
  for field, value in values.items():
    if field in ('config_file', 'overrides'):
      continue
    text = value if isinstance(value, str) else repr(tuple(value) if isinstance(value, list) else value)
    out.append(f'--config.{field}={text}')
  return tuple(out)


class Interrupted(KeyboardInterrupt):
  """Ctrl-C, with what the user should know (e.g. that the run resumes)."""


def guarded(main, *args) -> int:
  """``main(*args)``'s exit status, with the errors of ``USER_ERRORS`` printed in one line (status 1) and Ctrl-C
  in one line (status 130); anything else is a bug and keeps its traceback. For the scripts too
  (``sys.exit(cli.guarded(main))``), so that every tool answers bad input the same way."""
  # A user's warning (a label XML that disagrees with -C, a never-positive label) is one line too: Python's
  # default adds the source line that issued it, which names our code, not the user's file.
  warnings.formatwarning = lambda message, category, *_: f'warning: {message}\n'
  try:
    with interrupts.handled():
      status = main(*args)
    return status if isinstance(status, int) else 0  # a main that returns its result (for tests) succeeded
  except USER_ERRORS as e:
    print(f'error: {one_line(e)}', file=sys.stderr, flush=True)
    return 1
  except KeyboardInterrupt as e:
    print(f'interrupted{": " + one_line(e) if str(e) else ""}', file=sys.stderr, flush=True)
    return 130  # the shell's status for a SIGINT


def run(main) -> None:
  """``app.run(main)`` under ``guarded``, with ``parse_flags``' one-line errors for the flags."""
  app.run(lambda argv: sys.exit(guarded(main, argv)), flags_parser=parse_flags)


def _method_of(argv) -> str | None:
  """The value of the last ``--config.method`` flag of ``argv`` (``=value`` or the next word), or None."""
  method = None
  for i, arg in enumerate(argv):
    if arg.startswith('--config.method='):
      method = arg.split('=', 1)[1]
    elif arg == '--config.method' and i + 1 < len(argv):
      method = argv[i + 1]
  return method
