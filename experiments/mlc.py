"""The multi-label tables' bookkeeping: rows ``configs/<dataset>.py:<system>`` for bibtex, delicious, genbase, cal500
and spo_fun, their records, names and published numbers, and the command line their scripts share.

``SYSTEMS`` are the rows of docs/mlc_results.md and docs/mlc_ablation.md, ``BASELINES`` the other methods of
docs/baselines.md, as configs/bibtex.py writes them: today's design, the dataset config with the row's overrides,
the settings chosen on that dataset's dev (``DEV_CHOSEN``) and its epoch budget. A committed run is reproduced from
its own record, not from its row: ``python -m implicit_jax.main --config=docs/mlc/runs/<run>.json``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

import experiments
from experiments import records
from implicit_jax import runner
from implicit_jax.engine import config as config_lib
from implicit_jax.tasks.mlc.datasets import PROTOCOLS

ROOT = records.ROOT
DATASETS = ('bibtex', 'delicious', 'genbase', 'cal500', 'spo_fun')
# The rows, as configs/bibtex.py writes them (the other multi-label configs take them from there).
_CONFIG = experiments.config_rows('bibtex')
SYSTEMS, BASELINES, ROWS, DEV_CHOSEN = _CONFIG.SYSTEMS, _CONFIG.BASELINES, _CONFIG.ROWS, _CONFIG.DEV_CHOSEN
NORMAL_CG, PROXIMAL, SEAL_SIZES = _CONFIG.NORMAL_CG, _CONFIG.PROXIMAL, _CONFIG.SEAL_SIZES
# configs/bibtex.py as it is (the README's main job): the fastest design not worse on bibtex dev
# (tests/test_configs.py checks that the file as it is equals this row).
MAIN_ROW = 'implicit-cd-gcr-T1-r3h'
# Rows shown in docs/mlc_ablation.md only.
ABLATION_ONLY = {s for s in SYSTEMS if s.startswith(('implicit-cd-none', 'implicit-cd-identity', 'implicit-cd-unrolled',
                                                     'implicit-cd-T', 'implicit-cd-minres-h400'))}
# Shankar & Piratla, Table 1 (example F1 x 100; their split: stratified 60/20/20 re-split): experiments/published.toml.
PAPER = experiments.TEXT['mlc']['implicit_paper']
VERIFIED = ('test_f1', 'test_f1_tuned', 'dev_f1', 'best_epoch', 'threshold')  # what --verify compares
device_of = records.device_of  # the scripts' name for it here
# The flags of the scripts that train rows (``parse``'s ``flags``).
FLAGS = {'--datasets': {'default': 'bibtex,delicious', 'type': experiments.names(DATASETS)},
         '--systems': {'default': ','.join(SYSTEMS), 'type': experiments.names(list(SYSTEMS))},
         '--protocol': {'default': 'official', 'choices': PROTOCOLS},
         '--epochs': {'type': int, 'default': 0, 'help': 'every new run\'s num_epochs (0: its row\'s)'}}


def config_name(dataset: str, system: str, protocol: str = 'official') -> str:
  """The row's config as the tables name it: ``configs/<dataset>.py:<system>[,<protocol>]``."""
  return f'configs/{dataset}.py:{experiments.arg_name(system)}' + (f',{protocol}' if protocol != 'official' else '')


def row_config(configs, dataset: str, seed: int, protocol: str, data_dir: str, system: str | None = None):
  """configs/<dataset>.py (``configs``: the folder) or its row ``system``, at the run's seed (which also seeds the
  dev split), split protocol and data directory."""
  if system is None:
    config = config_lib.from_file(Path(configs) / f'{dataset}.py')
  else:
    path, arg = config_name(dataset, system, protocol).split(':', 1)
    config = config_lib.from_file(Path(configs) / Path(path).name, arg=arg)
    config.config_file = f'{path}:{arg}'
  config.seed = config.data.split_seed = seed
  config.data.protocol = protocol
  if dataset != 'bibtex' or protocol != 'official':  # bibtex's official split ships inside the package
    config.data.data_dir = data_dir
  return config


def recipe(dataset: str, system: str, protocol: str, rs, folder: Path, root: Path) -> str:
  """A table row's "config" cell (records.recipe): the row where each of its records ``rs`` is that row at its
  seed, else the records (files of ``folder``, in the checkout ``root``), each its own recipe."""
  differs = [key for r in rs for key in records.row_differences(
      r, row_config(Path(root) / 'configs', dataset, r['seed'], protocol, '', system))]
  pattern = f'{Path(folder).relative_to(root)}/{run_name(dataset, system, protocol)}-seed*.json'
  return records.recipe(config_name(dataset, system, protocol), pattern, differs)


def run_name(dataset, system, protocol) -> str:
  """A run's file and workdir stem; official-split runs keep the names they had before other protocols."""
  name = f'{dataset}-{system.replace(" ", "_")}'
  return name if protocol == 'official' else f'{dataset}-{protocol}-{system.replace(" ", "_")}'


def paired(runs_a, runs_b, field):
  """``(seeds, [a - b])``: ``field`` of two systems' runs differenced seed by seed, on the seeds both have."""
  a, b = ({r['seed']: r[field] for r in runs} for runs in (runs_a, runs_b))
  seeds = sorted(set(a) & set(b))
  return seeds, [a[k] - b[k] for k in seeds]


def per_seed(diffs, label: str = '') -> str:
  """Paired differences as the pages write them: their mean, then each (``+0.50 (<label>+0.25, +0.75)``)."""
  return f'{np.mean(diffs):+.2f} ({label}{", ".join(f"{d:+.2f}" for d in diffs)})'


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


def parse(doc: str, flags: dict, runner_flags: bool = True) -> argparse.Namespace:
  """A script's command line, parsed: --data_dir, --seeds, --table_only and ``flags`` ({flag: add_argument's
  keywords}, which may replace, or with None drop, the first three), then the runner's flags."""
  parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
  every = {'--data_dir': {'default': str(ROOT.parent / 'shared' / 'data')},
           '--seeds': {'default': '0,1,2', 'type': experiments.seeds}, '--table_only': {'action': 'store_true'},
           **flags}
  for flag, keywords in every.items():
    if keywords is not None:
      parser.add_argument(flag, **keywords)
  if runner_flags:
    experiments.add_runner_flags(parser)
  return parser.parse_args()  # the runner refuses --verify with --supersede before any run


def run_of(dataset, system, seed, args, folder: Path, scratch: str) -> runner.Run:
  """The run of ``dataset``'s row ``system`` on ``seed`` (``args``: --protocol, --data_dir, --epochs): its record
  in ``folder``, its workdir under ``scratch``."""
  name = run_name(dataset, system, args.protocol)

  def config():
    config = row_config(ROOT / 'configs', dataset, seed, args.protocol, args.data_dir, system)
    config.num_epochs = args.epochs or config.num_epochs
    return config
  return runner.Run(f'{dataset} {system} seed {seed}', config, Path(folder) / f'{name}-seed{seed}.json',
                    f'{scratch}/{name}-{seed}')


def run(runs, args, writer=records.save, superseded: Path | None = None) -> list[runner.Outcome]:
  """``runs`` through implicit_jax.runner, each run's seconds after it; --supersede reruns only those with a record
  (the old one moved to ``superseded``), --verify compares each on ``VERIFIED``, --workers or the runner's flags
  make them at once on Ray."""
  supersede = superseded if getattr(args, 'supersede', False) else None
  if supersede:
    runs = [r for r in runs if r.record.exists() or (supersede / r.record.name).exists()]
  return runner.run_all(runs, writer=writer, recipe=records.recipe_here(args.data_dir), seconds=True,
                        supersede=supersede, verify=VERIFIED if getattr(args, 'verify', False) else (),
                        provenance=records.made_here, ray=experiments.ray_options(args, getattr(args, 'workers', 1)))
