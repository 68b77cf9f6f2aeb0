r"""Every method on the same data, split, protocol and seeds, side by side with the published numbers.

Usage (the runs behind docs/baselines.md are recorded in that file):
  python -m experiments.compare_methods --data_dir=../shared/data --datasets=bibtex,delicious --seeds=0,1,2
  python -m experiments.compare_methods --data_dir=../shared/data --datasets=genbase,cal500,spo_fun --seeds=0
  python -m experiments.compare_methods --systems=spen,dvn --datasets=bibtex --seeds=0   # a subset
  python -m experiments.compare_methods --table_only                                       # rebuild the table

A system is the row ``configs/<dataset>.py:<system>`` (experiments/mlc.py), nothing else: every
method shares the dataset's networks, energy, split, seeds, epochs and evaluation (best epoch on dev F1 @0.5, test
once, F1 at 0.5 and at the dev-tuned threshold). The MBCE and implicit rows are the runs of
``experiments/reproduce_mlc.py``, which this script calls (same ``run_of``, same rows, same files in docs/mlc/runs);
the other systems write docs/baselines/runs/<dataset>-<system>-seed<k>.json. A run whose file exists is not
repeated, so the script can be stopped and restarted. A committed run's recipe is its record, not its row (a row
names today's design): ``python -m implicit_jax.main --config=docs/baselines/runs/<run>.json --workdir=DIR`` reruns
it.
"""

import argparse
import os
import platform
import sys
from pathlib import Path

import numpy as np

from implicit_jax import runner
from implicit_jax.engine import cli
import experiments
from experiments import mlc, records, tables
from experiments.mlc import BASELINES
from implicit_jax.tasks.mlc.datasets import PROTOCOLS

ROOT = records.ROOT

# system -> its row configs/<dataset>.py:<system> (experiments/mlc.py: BASELINES, and the settings
# chosen on dev by experiments/sweep.py in DEV_CHOSEN). Systems of reproduce_mlc keep its files. A new run takes its
# row's config (today's design); a committed run's recipe is its own record (python -m implicit_jax.main
# --config=docs/baselines/runs/<run>.json), which an existing file keeps from being run again here.
SYSTEMS = {**mlc.SYSTEMS, **BASELINES}
ORDER = ['mbce', 'spen', 'dvn', 'nce-gbi', 'infnet', 'infnet+ separated', 'infnet+ shared', 'infnet+ stacked',
         'seal-static margin', 'seal-static regression', 'seal-static nce', 'seal-dynamic margin',
         'seal-dynamic regression', 'seal-dynamic regression-s', 'seal-dynamic nce', 'implicit-ssvm',
         'implicit-dvn', 'implicit-nce', 'implicit-cd']

# Published example F1 x 100 (experiments/published.toml): SEAL (Lee et al. 2022) Table 1, threshold 0.5 on the
# task net / GBI output ('infnet': SEAL's row "SEAL-dynamic margin (InfNet)"), and the +- beside each of its
# numbers, what the claims ledger (experiments/claims.py) allows a row beside its published number where it exceeds
# the ledger's 2 points; Shankar & Piratla Table 1 (mlc.PAPER, bibtex and delicious): its threshold is not stated,
# but its MBCE (42.47 / 30.12) sits with SEAL's CE at 0.5 (42.40 / 29.89) and far below any tuned-threshold
# delicious F1 here (above 36): F1 @0.5.
DATASETS = ('bibtex', 'delicious', 'genbase', 'cal500', 'spo_fun')
_TEXT = experiments.TEXT['mlc']
SEAL, SEAL_SPREAD = ({system: dict(zip(DATASETS, values)) for system, values in _TEXT[name].items()}
                     for name in ('seal', 'seal_spread'))
IMPLICIT_PAPER = {}
for _dataset, _rows in mlc.PAPER.items():
  for _system, _value in _rows.items():
    IMPLICIT_PAPER.setdefault(_system, {})[_dataset] = _value
TOLERANCE = 1.5  # F1 points: a baseline further than this from its published bibtex number is flagged
# The table the page leads with: every system at SEAL's network sizes (mlc.SEAL_SIZES; MBCE and the implicit rows at
# their dev-chosen 400-unit design, mlc.SYSTEMS); then ORDER at 150 units.
ORDER_H400 = [f'{s}-h400' for s in ORDER]
ORDER_H400.insert(ORDER_H400.index('spen-h400') + 1, 'spen-pretrain-h400')  # SPEN with its pretraining stage
# A row that is a published system run another way: the system whose published numbers it stands beside.
PUBLISHED_AS = {'spen-pretrain': 'spen', 'dvn-mirror': 'dvn', 'seal-static margin-w0.1': 'seal-static margin',
                'seal-static nce-w0.1': 'seal-static nce'}
# The 150-unit table: ORDER, and the delicious rows of issue 64 after the rows they stand for (DVN with mirror-descent
# GBI, SEAL-static margin and NCE with the energy weighed 0.1).
ORDER_150 = list(ORDER)
for _after, _row in (('dvn', 'dvn-mirror'), ('seal-static margin', 'seal-static margin-w0.1'),
                     ('seal-static nce', 'seal-static nce-w0.1')):
  ORDER_150.insert(ORDER_150.index(_after) + 1, _row)
# What is known of a 400-unit row's flag beyond the differences every row shares (the table's flag paragraph).
FLAG_NOTES = _TEXT['flag_notes']
H400 = '-h400'


def run_file(dataset, system, seed, protocol='official') -> Path:
  folder = 'mlc' if system in mlc.SYSTEMS else 'baselines'
  return ROOT / 'docs' / folder / 'runs' / f'{mlc.run_name(dataset, system, protocol)}-seed{seed}.json'


def run_of(dataset, system, seed, args) -> runner.Run:
  """The run of a row on a seed: an implicit row (or MBCE) is reproduce_mlc's run, its record there; a baseline's
  record goes to docs/baselines/runs."""
  if system in mlc.SYSTEMS:
    from experiments import reproduce_mlc  # pylint: disable=import-outside-toplevel
    return reproduce_mlc.run_of(dataset, system, seed, args)

  def config():
    # Every baseline updates its networks once per batch, as MBCE does, where the implicit method takes T_inner
    # steps: its row gets MBCE's budget, twice the implicit rows' epochs (the dataset config's
    # once_per_batch_epochs; at 40 epochs most baselines still improved in their last epochs).
    config = mlc.row_config(ROOT / 'configs', dataset, seed, args.protocol, args.data_dir, system)
    if args.epochs:
      config.num_epochs = args.epochs
    return config
  return runner.Run(f'{dataset} {system} seed {seed}', config, run_file(dataset, system, seed, args.protocol),
                    f'/tmp/compare_methods/{mlc.run_name(dataset, system, args.protocol)}-{seed}')


def published(system, dataset):
  """``[(value, source, protocol)]``: the published numbers for this row (a 400-unit row: its system's)."""
  system = system.removesuffix(H400)
  system = PUBLISHED_AS.get(system, system)
  rows = []
  if dataset in SEAL.get(system, {}):
    rows.append((SEAL[system][dataset], 'SEAL T1', 'test_f1'))
  if dataset in IMPLICIT_PAPER.get(system, {}):
    rows.append((IMPLICIT_PAPER[system][dataset], 'implicit T1', 'test_f1'))
  return rows


def over_mbce(groups, dataset, system) -> str:
  """``ours / SEAL``: @0.5 F1 over MBCE (ours: paired on the seeds both have), against SEAL's over its CE."""
  size = H400 if system.endswith(H400) else ''
  base = PUBLISHED_AS.get(system.removesuffix(size), system.removesuffix(size))
  if base == 'mbce':
    return ''
  seeds, gains = mlc.paired(groups.get((dataset, system), []), groups.get((dataset, 'mbce' + size), []), 'test_f1')
  if not seeds:
    return ''
  text = f'{100 * np.mean(gains):+.2f}'
  if dataset in SEAL.get(base, {}):
    text += f' / {SEAL[base][dataset] - SEAL["mbce"][dataset]:+.2f}'
  return text


# a record's folder and file name without its seed -> its row, (dataset, system)
STEMS = {(run_file(d, s, 0).parent, mlc.run_name(d, s, 'official')): (d, s) for d in DATASETS for s in SYSTEMS}


def row_of(path, record):
  """A record's row: the system its folder and file name say, official split only (None for every other record)."""
  key = STEMS.get((path.parent, tables.stem(path, record)))
  return key if key and record['task_info']['protocol'] == 'official' else None


def table_rows(groups, order, datasets):
  """The table of ``order``'s systems on ``datasets`` (those with records), and the flagged bibtex baselines:
  ``(lines, [(system, gaps)])``."""
  lines = ['| dataset | system | seeds | F1 @0.5 | F1 tuned | published | gap | flag | over MBCE, ours / SEAL | '
           'dev gain, last tenth | s/run | config |', '|---|---|---|---|---|---|---|---|---|---|---|---|']
  flagged = []
  for dataset in datasets:
    for system in order:
      rs = groups.get((dataset, system))
      if not rs:
        continue
      pubs = published(system, dataset)
      gaps = [100 * np.mean([r[field] for r in rs]) - value for value, _, field in pubs]
      flag = ''
      if dataset == 'bibtex' and not system.startswith('implicit') and pubs and min(map(abs, gaps)) > TOLERANCE:
        flag = 'gap > 1.5'
        flagged.append((system, gaps))
      lines.append(
          f'| {dataset} | {system} | {len(rs)} | {records.mean_std([r["test_f1"] for r in rs])} | '
          f'{records.mean_std([r["test_f1_tuned"] for r in rs])} | '
          f'{"; ".join(f"{v:.2f} ({src})" for v, src, _ in pubs) or "none on MLC"} | '
          f'{"; ".join(f"{g:+.2f}" for g in gaps) or "–"} | {flag} | {over_mbce(groups, dataset, system)} | '
          f'{np.mean([records.last_tenth_gain(r, "dev_f1") for r in rs]):+.2f} | '
          f'{np.mean([r["train_seconds"] for r in rs]):.0f} | '
          f'{mlc.recipe(dataset, system, "official", rs, run_file(dataset, system, 0).parent, ROOT)} |')
  return lines, flagged


def fields(groups) -> dict:
  """docs/baselines.md's fields: the machine, the two tables and the paragraphs on what was flagged or not run."""
  h400, flagged_h400 = table_rows(groups, ORDER_H400, ('bibtex', 'delicious'))
  missing = [s for s in ORDER_H400 if published(s, 'bibtex') and ('bibtex', s) not in groups]
  if missing:
    h400 += ['', 'Not run at these sizes yet (bibtex rows with a published number): ' + ', '.join(missing) + '.']
  if flagged_h400:
    h400 += ['', f'**Flagged at 400 units** ({len(flagged_h400)}: '
             + ', '.join(f'{s} {min(g, key=abs):+.2f}' for s, g in flagged_h400) + '). '
             + ' '.join(FLAG_NOTES[s] for s, _ in flagged_h400 if s in FLAG_NOTES) + ' ' + _TEXT['text']['why_h400']]
  body, flagged = table_rows(groups, ORDER_150, DATASETS)
  if flagged:
    body += ['', _TEXT['text']['why_bibtex']]
  missing = [(d, s) for d in ('bibtex', 'delicious') for s in ORDER if (d, s) not in groups]
  if missing:
    body += ['', 'Not run yet: ' + ', '.join(f'{d} {s}' for d, s in missing) + '.']
  return {'arch': platform.machine(), 'cores': os.cpu_count(), 'tolerance': TOLERANCE, 'h400': '\n'.join(h400),
          'body': '\n'.join(body)}


TABLES = [tables.Table('baselines', 'docs/baselines.md', ('docs/mlc/runs/*.json', 'docs/baselines/runs/*.json'),
                       fields, key=row_of, command='python -m experiments.compare_methods --table_only')]


def main():
  parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument('--data_dir', default=str(ROOT.parent / 'shared' / 'data'))
  parser.add_argument('--datasets', default='bibtex,delicious', type=experiments.names(DATASETS))
  parser.add_argument('--systems', default=','.join(ORDER), type=experiments.names(list(SYSTEMS)))
  parser.add_argument('--seeds', default='0,1,2', type=experiments.seeds)
  parser.add_argument('--protocol', default='official', choices=PROTOCOLS)
  parser.add_argument('--epochs', type=int, default=0, help='every new run\'s num_epochs (0: its row\'s)')
  parser.add_argument('--table_only', action='store_true')
  experiments.add_runner_flags(parser)
  args = parser.parse_args()
  if not args.table_only:
    # seed-major: every system gets seed 0 first; trained, never verified nor rerun (compare_methods has no such flags)
    runner.run_all([run_of(dataset, system, seed, args) for dataset in args.datasets for seed in args.seeds
                    for system in args.systems],
                   writer=records.save, seconds=True, ray=experiments.ray_options(args), provenance=records.made_here)
  print(tables.build(TABLES[0]))


if __name__ == '__main__':
  sys.exit(cli.guarded(main))
