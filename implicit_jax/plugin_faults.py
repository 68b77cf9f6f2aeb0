"""A plug-in's own mistake, named at its line: what ``tasks.get_task`` and ``solvers.call`` raise instead of the
traceback through the engine and its libraries (tens of lines, the plug-in's line one of them).

* ``unknown_field``: ``make_task`` read a config field the task's ``default_config()`` does not declare (the config
  is locked, so ml_collections refuses it deep inside its own code);
* ``traced_value``: a solver used a traced value as a Python one (``if``, ``int()``, ``np.asarray``) while the
  step was traced, which JAX refuses with ``TracerBoolConversionError`` and its kin.

Each returns a one-line ``ValueError`` naming the config field, the plug-in's path, its file and line, the cause and
the fix; or None when the error is not that mistake (the caller re-raises it as it is).
"""

from __future__ import annotations

import os
import re
import sys
import traceback
from typing import Any, Iterable

import jax

# The errors of a traced value used as a Python value, with what to write instead.
_TRACED = (
    (jax.errors.TracerBoolConversionError, 'branches in Python on a traced value',
     'use jnp.where or jax.lax.cond (jax.lax.while_loop for a loop) instead of if/while/and/or on it'),
    (jax.errors.TracerIntegerConversionError, 'converts a traced value to a Python int',
     'keep it an array: index with jax.lax.dynamic_slice, loop with jax.lax.fori_loop'),
    (jax.errors.TracerArrayConversionError, 'converts a traced value to a NumPy array',
     'use jax.numpy (jnp) on it, not numpy'),
    (jax.errors.ConcretizationTypeError, 'needs the value of a traced array while the step is traced',
     'use jnp.where, jax.lax.cond or jax.lax.while_loop on it instead of a Python value'),
)


def files(*objects: Any) -> set[str]:
  """The plug-in's source files: each object's module's file, and for a function the file its code is in."""
  out = set()
  for obj in objects:
    module = obj if hasattr(obj, '__file__') else sys.modules.get(getattr(obj, '__module__', None) or '')
    code = getattr(obj, '__code__', None)
    out.update(f for f in (getattr(module, '__file__', None), getattr(code, 'co_filename', None)) if f)
  return {os.path.abspath(f) for f in out}


def line_of(error: BaseException, sources: Iterable[str]) -> traceback.FrameSummary | None:
  """The innermost frame of ``error``'s traceback in one of the files ``sources``: the plug-in's line at fault."""
  sources = set(sources)
  frames = [f for f in traceback.extract_tb(error.__traceback__) if os.path.abspath(f.filename) in sources]
  return frames[-1] if frames else None


def _raised_in(error: BaseException, package: str) -> bool:
  tb = error.__traceback__
  while tb is not None and tb.tb_next is not None:
    tb = tb.tb_next
  return tb is not None and str(tb.tb_frame.f_globals.get('__name__', '')).startswith(package)


def unknown_field(field: str, path: str, sources: Iterable[str], error: BaseException) -> ValueError | None:
  """``make_task`` (of the plug-in at ``path``, from the files ``sources``) reading a field its config lacks."""
  refusal = error.args[0] if isinstance(error, AttributeError) and error.args else error
  if not (isinstance(refusal, KeyError) and refusal.args and _raised_in(error, 'ml_collections')):
    return None
  frame = line_of(error, sources)
  if frame is None:
    return None
  key, *hint = str(refusal.args[0]).splitlines()
  key = key.strip('\'"')
  read = re.search(rf'([A-Za-z_][\w.]*)(?:\.{re.escape(key)}\b|\[[\'"]{re.escape(key)}[\'"]\])', frame.line or '')
  name = f'{read.group(1)}.{key}' if read else repr(key)
  hint = f' ({" ".join(hint).strip()})' if ''.join(hint).strip() else ''
  return ValueError(f'{field}: make_task of {path!r} reads {name} at {frame.filename}:{frame.lineno}, a field the '
                    f'config does not have: declare it in the task\'s default_config() or correct the name{hint}')


def traced_value(field: str, path: str, sources: Iterable[str], error: BaseException) -> ValueError | None:
  """A plug-in solver (at ``path``, from the files ``sources``) using a traced value as a Python one."""
  cause = next(((what, fix) for kind, what, fix in _TRACED if isinstance(error, kind)), None)
  frame = line_of(error, sources) if cause else None
  if frame is None:
    return None
  code = f' ({frame.line.strip()})' if frame.line else ''
  return ValueError(f'{field}: {path!r} {cause[0]} at {frame.filename}:{frame.lineno}{code}; it runs inside '
                    f'jax.jit: {cause[1]} (see implicit_jax/plugins.py)')
