"""The paper's experiments, beside the library: run records, results tables, sweeps, the claims ledger, rescoring.

Run from the repository root as modules, e.g. ``python -m experiments.reproduce_mlc --table_only``. The rows each
table runs are config files and an argument (``--config=configs/bibtex.py:implicit-cd``): the rows themselves are
written in the config files (``configs/bibtex.py`` holds the multi-label rows, ``configs/pos.py`` the sequence-labeling
ones, ``configs/cora.py`` and ``configs/horses.py`` their own); the modules here read them from there and keep the
bookkeeping the library does not know: where each family's records live, how a record names its row, the published
numbers, and how the tables and README blocks are written.

  mlc       configs/{bibtex,delicious,genbase,cal500,spo_fun}.py  reproduce_mlc.py, compare_methods.py, ablation_mlc.py
  tagging   configs/{pos,ner,ner_fixed,ner_plus}.py               reproduce_tagging.py
  cora      configs/cora.py                                       reproduce_cora.py
  horses    configs/horses.py                                     reproduce_horses.py
"""

from __future__ import annotations

import argparse
from pathlib import Path

from implicit_jax.engine import rows
from implicit_jax.engine.rows import arg_name, parse  # noqa: F401  (the scripts' names for them)

# The repository: configs/ and docs/ beside this folder.
ROOT = Path(__file__).resolve().parents[1]


def config_rows(name: str):
  """The module of ``configs/<name>.py``, whose rows (``SYSTEMS``, ...) a family's tables are made of."""
  return rows.load_module(ROOT / 'configs' / f'{name}.py')


def names(choices, empty: bool = False):
  """An argparse ``type``: a comma-separated list of names, each one of ``choices``; an unknown one (a typo that
  would otherwise run nothing and exit 0) is refused with the flag named, before any work. ``empty``: an empty
  list is allowed (a flag whose other flags may give the work, e.g. compare_sklearn's ``--datasets=`` with
  ``--custom``)."""
  def parse_names(text: str) -> list[str]:
    values = [v.strip() for v in text.split(',') if v.strip()]
    unknown = [v for v in values if v not in choices]
    if unknown or not (values or empty):
      what = f'unknown {unknown[0]!r}' if unknown else 'empty'
      raise argparse.ArgumentTypeError(f'{what}; choose from {", ".join(choices)}')
    return values
  return parse_names


def integers(text: str) -> list[int]:
  """An argparse ``type``: a comma-separated list of integers (seeds, sizes, step counts)."""
  try:
    return [int(s) for s in text.split(',')]
  except ValueError:
    raise argparse.ArgumentTypeError(f'a comma-separated list of integers, got {text!r}') from None


seeds = integers  # --seeds' type
