"""Named rows of a config file: ``--config=FILE.py:ROW[,VARIANT...]``.

A config file's ``get_config(arg=None)`` builds the config it runs as it is; given an argument, it applies one of the
rows it holds (big_vision's convention for a file holding several experiments): a row is a dict of flat overrides
(``{'implicit.solver.name': 'gcr', ...}``), a variant another dict applied with it. This module parses the argument
and applies the dicts; the rows themselves, and what they mean, are the config file's.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path


def parse(arg: str, rows, variants=(), where: str = 'config') -> tuple[str, list[str]]:
  """``'ROW[,VARIANT...]'`` -> ``(ROW, [VARIANT, ...])``, each checked against ``rows`` and ``variants`` (an unknown
  name raises ValueError naming ``where`` and the choices). A space in a row's name may be written ``_``."""
  row, *chosen = [part.strip() for part in arg.split(',')]
  names = {arg_name(name): name for name in rows}
  if row not in rows and row not in names:
    raise ValueError(f'{where}: unknown row {row!r}; choose from {", ".join(sorted(names))}')
  unknown = [v for v in chosen if v not in variants]
  if unknown:
    raise ValueError(f'{where}: unknown variant {unknown[0]!r} of row {row!r}; choose from '
                     f'{", ".join(sorted(variants)) or "none"}')
  return (row if row in rows else names[row]), chosen


def arg_name(row: str) -> str:
  """A row's name as a config argument (no spaces, so that ``--config=path:arg`` needs no quotes)."""
  return row.replace(' ', '_')


def load_module(path, relative_to: str | None = None):
  """The module of a config file (its rows, its ``get_config``), loaded by path as ``--config=`` loads it: a
  config file is not part of a package, so a config building on a sibling's rows reads them so (``relative_to``:
  its ``__file__``; a relative ``path`` is taken from that file's folder)."""
  p = Path(path)
  if relative_to is not None and not p.is_absolute():
    p = Path(relative_to).resolve().parent / p
  if not p.is_file():
    raise FileNotFoundError(f'config file {p} not found')
  spec = importlib.util.spec_from_file_location(f'implicit_jax_config_{p.stem}', p)
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  return module
