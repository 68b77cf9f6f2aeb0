"""The multi-label tables' bookkeeping: rows ``configs/<dataset>.py:<system>`` for bibtex, delicious, genbase, cal500
and spo_fun (``SYSTEMS``: docs/mlc_results.md and docs/mlc_ablation.md; ``BASELINES``: docs/baselines.md), their
records, names and published numbers, and the flags their scripts share. A committed run is reproduced from its own
record, not from its row: ``python -m implicit_jax.main --config=docs/mlc/runs/<run>.json``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

import experiments
from experiments import records
from implicit_jax.engine import config as config_lib
from implicit_jax.tasks.mlc.datasets import PROTOCOLS

ROOT = records.ROOT
DATASETS = ('bibtex', 'delicious', 'genbase', 'cal500', 'spo_fun')
# The rows, as configs/bibtex.py writes them (the other multi-label configs take them from there).
_CONFIG = experiments.config_rows('bibtex')
SYSTEMS, BASELINES, ROWS = _CONFIG.SYSTEMS, _CONFIG.BASELINES, _CONFIG.ROWS
NORMAL_CG, SEAL_SIZES = _CONFIG.NORMAL_CG, _CONFIG.SEAL_SIZES
# configs/bibtex.py as it is (the README's main job): the fastest design not worse on bibtex dev
# (tests/test_configs.py checks that the file as it is equals this row).
MAIN_ROW = 'implicit-cd-gcr-T1-r3h'
# Rows shown in docs/mlc_ablation.md only.
ABLATION_ONLY = {s for s in SYSTEMS if s.startswith(('implicit-cd-none', 'implicit-cd-identity', 'implicit-cd-unrolled',
                                                     'implicit-cd-T', 'implicit-cd-minres-h400'))}
# Shankar & Piratla, Table 1 (example F1 x 100; their split: stratified 60/20/20 re-split): experiments/published.toml.
PAPER = experiments.TEXT['mlc']['implicit_paper']
# The flags of the scripts that train rows (experiments.parse's ``flags``).
FLAGS = {'--datasets': {'default': 'bibtex,delicious', 'type': experiments.names(DATASETS)},
         '--systems': {'default': ','.join(SYSTEMS), 'type': experiments.names(list(SYSTEMS))},
         '--protocol': {'default': 'official', 'choices': PROTOCOLS},
         '--epochs': {'type': int, 'default': 0, 'help': 'every new run\'s num_epochs (0: its row\'s)'}}


def config_name(dataset: str, system: str, protocol: str = 'official') -> str:
  """The row's config as the tables name it: ``configs/<dataset>.py:<system>[,<protocol>]``."""
  return f'configs/{dataset}.py:{experiments.arg_name(system)}' + (f',{protocol}' if protocol != 'official' else '')


def row_config(dataset: str, system: str | None, seed: int, protocol: str = 'official', data_dir: str = '',
               overrides: dict | None = None):
  """configs/<dataset>.py's row ``system`` (None: the file as it is) at the run's seed (which also seeds the dev
  split), split protocol and data directory, then ``overrides`` (flattened keys) set."""
  values = {'seed': seed, 'data.split_seed': seed, 'data.protocol': protocol}
  if dataset != 'bibtex' or protocol != 'official':  # bibtex's official split ships inside the package
    values['data.data_dir'] = data_dir
  return experiments.row_config(config_name(dataset, system, protocol) if system else f'configs/{dataset}.py',
                                {**values, **(overrides or {})})


def run_name(dataset, system, protocol) -> str:
  """A run's file and workdir stem; official-split runs keep the names they had before other protocols."""
  name = f'{dataset}-{system.replace(" ", "_")}'
  return name if protocol == 'official' else f'{dataset}-{protocol}-{system.replace(" ", "_")}'


def runs_folder(system: str) -> Path:
  """Where a row's records are: docs/mlc/runs for ``SYSTEMS`` (reproduce_mlc's), docs/baselines/runs for the rest."""
  return ROOT / 'docs' / ('mlc' if system in SYSTEMS else 'baselines') / 'runs'


def recipe(dataset: str, system: str, protocol: str, rs) -> str:
  """A table row's "config" cell (records.recipe) for its records ``rs``."""
  differs = [key for r in rs for key in records.row_differences(r, row_config(dataset, system, r['seed'], protocol))]
  pattern = f'{runs_folder(system).relative_to(ROOT)}/{run_name(dataset, system, protocol)}-seed*.json'
  return records.recipe(config_name(dataset, system, protocol), pattern, differs)


def cells(rs, *keys) -> str:
  """Table cells: each of ``keys`` over the records ``rs``, as ``records.mean_std`` writes it."""
  return ' | '.join(records.mean_std([r[key] for r in rs]) for key in keys)


def paired(runs_a, runs_b, field: str = 'test_f1') -> tuple[list, list]:
  """``(seeds, [100 * (a - b)])``: ``field`` of two systems' runs differenced seed by seed, on the seeds both have."""
  return records.paired_diffs(*({r['seed']: r[field] for r in runs} for runs in (runs_a, runs_b)))


def per_seed(diffs, label: str = '', note: str = '') -> str:
  """Paired differences as the pages write them: their mean, then each (``+0.50 (<label>+0.25, +0.75<note>)``)."""
  return f'{np.mean(diffs):+.2f} ({label}{", ".join(f"{d:+.2f}" for d in diffs)}{note})'


def system_of(result):
  """The row of ``SYSTEMS`` a run record is, from its config (old records do not name it)."""
  c = config_lib.upgrade(result['config'])  # the reuse policy under today's name, what the rows' names say
  size = '-h400' if list(c['model']['inference_hidden']) == [400, 400] else ''
  if c['method'] == 'feedforward':
    return 'mbce' + size
  solver = c['implicit']['solver']['name']
  steps = c['implicit'].get('inner_steps', 5)
  prox = '-prox' if c['implicit'].get('proximal', 0.0) else ''
  reuse = c['implicit']['solver'].get('reuse', 'none')  # absent: a record older than any reuse
  return (f'implicit-{c["implicit"]["primary_loss"]}'
          + (f'-{solver}' if solver in ('neumann', 'gcr') + _CONFIG.ABLATION_ROUTES else '')
          + (f'-T{steps}' if steps != 5 else '') + (f'-{reuse}' if reuse != 'none' else '') + prox + size)
