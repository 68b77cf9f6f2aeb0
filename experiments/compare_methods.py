r"""Every method on the same data, split, protocol and seeds, side by side with the published numbers.

Usage (the runs behind docs/baselines.md are recorded in that file):
  python -m experiments.compare_methods --data_dir=../shared/data --datasets=bibtex,delicious --seeds=0,1,2
  python -m experiments.compare_methods --data_dir=../shared/data --datasets=genbase,cal500,spo_fun --seeds=0
  python -m experiments.compare_methods --systems=spen,dvn --datasets=bibtex --seeds=0   # a subset
  python -m experiments.compare_methods --table_only                                       # rebuild the table

A system is the row ``configs/<dataset>.py:<system>`` (docs/baselines.md says what they share). The MBCE and implicit
rows are reproduce_mlc's runs (docs/mlc/runs); the others write docs/baselines/runs/<dataset>-<system>-seed<k>.json,
not run again once there, and rerun by ``python -m implicit_jax.main --config=THAT_RECORD --workdir=DIR``.
"""

import os
import platform
import sys
from pathlib import Path

import numpy as np

from implicit_jax.engine import cli
import experiments
from experiments import mlc, records, reproduce_mlc, tables

# system -> its row configs/<dataset>.py:<system>; reproduce_mlc's systems keep its records (mlc.runs_folder).
SYSTEMS = {**mlc.SYSTEMS, **mlc.BASELINES}
run_of = reproduce_mlc.run_of  # a row's run: reproduce_mlc's, a baseline's record in docs/baselines/runs
ORDER = ['mbce', 'spen', 'dvn', 'nce-gbi', 'infnet', 'infnet+ separated', 'infnet+ shared', 'infnet+ stacked',
         'seal-static margin', 'seal-static regression', 'seal-static nce', 'seal-dynamic margin',
         'seal-dynamic regression', 'seal-dynamic regression-s', 'seal-dynamic nce', 'implicit-ssvm',
         'implicit-dvn', 'implicit-nce', 'implicit-cd']

# Published example F1 x 100 (experiments/published.toml): SEAL (Lee et al. 2022) Table 1, threshold 0.5 on the task
# net / GBI output ('infnet': its "SEAL-dynamic margin (InfNet)"), with the +- the claims ledger allows a row;
# Shankar & Piratla Table 1 (mlc.PAPER), whose MBCE sits with SEAL's CE at 0.5 (docs/baselines.md says why).
DATASETS = mlc.DATASETS
SEAL, SEAL_SPREAD = ({system: dict(zip(DATASETS, values)) for system, values in experiments.TEXT['mlc'][name].items()}
                     for name in ('seal', 'seal_spread'))
IMPLICIT_PAPER = {s: {d: rows[s] for d, rows in mlc.PAPER.items() if s in rows} for rows in mlc.PAPER.values()
                  for s in rows}  # system -> dataset -> F1
TOLERANCE = 1.5  # F1 points: a baseline further than this from its published bibtex number is flagged
# A row that is a published system run another way: the system whose published numbers it stands beside.
PUBLISHED_AS = {'spen-pretrain': 'spen', 'dvn-mirror': 'dvn', 'seal-static margin-w0.1': 'seal-static margin',
                'seal-static nce-w0.1': 'seal-static nce', 'seal-dynamic nce-e80': 'seal-dynamic nce',
                'seal-dynamic nce-e160': 'seal-dynamic nce'}
H400 = '-h400'
# The page's two tables: every system at SEAL's network sizes (mlc.SEAL_SIZES), then at 150 units; a row of
# PUBLISHED_AS follows its system (SPEN with its pretraining stage; the delicious rows of issue 64).
ORDER_H400, ORDER_150 = [], []
for _s in ORDER:
  for order, size in ((ORDER_H400, H400), (ORDER_150, '')):
    order += [_s + size] + [r + size for r, base in PUBLISHED_AS.items() if base == _s and r + size in SYSTEMS]


def run_file(dataset, system, seed, protocol='official') -> Path:
  return mlc.runs_folder(system) / f'{mlc.run_name(dataset, system, protocol)}-seed{seed}.json'


def base_of(system) -> str:
  """The system whose published numbers a row stands beside (a 400-unit row: its system's)."""
  return PUBLISHED_AS.get(system.removesuffix(H400), system.removesuffix(H400))


def published(system, dataset):
  """``[(value, source)]``: the published numbers for this row."""
  base = base_of(system)
  return [(table[base][dataset], source) for table, source in ((SEAL, 'SEAL T1'), (IMPLICIT_PAPER, 'implicit T1'))
          if dataset in table.get(base, {})]


STEMS = {(mlc.runs_folder(s), mlc.run_name(d, s, 'official')): (d, s) for d in DATASETS for s in SYSTEMS}


def row_of(path, record):
  """A record's row: the system its folder and file name say, official split only (None for every other record)."""
  key = STEMS.get((path.parent, tables.stem(path, record)))
  return key if key and record['task_info']['protocol'] == 'official' else None


def table_rows(groups, order, datasets):
  """``(lines, [(system, gaps)])``: the rows of ``order``'s systems on ``datasets``, the flagged bibtex baselines."""
  lines, flagged = [], []
  for dataset in datasets:
    for system in order:
      rs = groups.get((dataset, system))
      if not rs:
        continue
      pubs = published(system, dataset)
      gaps = [100 * np.mean([r['test_f1'] for r in rs]) - value for value, _ in pubs]
      flag = dataset == 'bibtex' and not system.startswith('implicit') and pubs and min(map(abs, gaps)) > TOLERANCE
      if flag:
        flagged.append((system, gaps))
      # over MBCE, ours / SEAL: @0.5 F1 over MBCE (ours: paired on the seeds both have), against SEAL's over its CE
      base, size = base_of(system), H400 if system.endswith(H400) else ''
      seeds, gains = mlc.paired(rs, groups.get((dataset, 'mbce' + size), []))
      seal = f' / {SEAL[base][dataset] - SEAL["mbce"][dataset]:+.2f}' if dataset in SEAL.get(base, {}) else ''
      over = f'{np.mean(gains):+.2f}{seal}' if base != 'mbce' and seeds else ''
      lines.append(f'| {dataset} | {system} | {len(rs)} | {mlc.cells(rs, "test_f1", "test_f1_tuned")} | '
                   f'{"; ".join(f"{v:.2f} ({src})" for v, src in pubs) or "none on MLC"} | '
                   f'{"; ".join(f"{g:+.2f}" for g in gaps) or "–"} | {"gap > 1.5" if flag else ""} | {over} | '
                   f'{np.mean([records.last_tenth_gain(r, "dev_f1") for r in rs]):+.2f} | '
                   f'{np.mean([r["train_seconds"] for r in rs]):.0f} | {mlc.recipe(dataset, system, "official", rs)} |')
  return lines, flagged


def fields(groups) -> dict:
  """docs/baselines.md's fields: the machine, the two tables and the paragraphs on what was flagged or not run."""
  text = experiments.TEXT['mlc']
  h400, flagged_h400 = table_rows(groups, ORDER_H400, ('bibtex', 'delicious'))
  missing = [s for s in ORDER_H400 if published(s, 'bibtex') and ('bibtex', s) not in groups]
  if missing:
    h400 += ['', 'Not run at these sizes yet (bibtex rows with a published number): ' + ', '.join(missing) + '.']
  if flagged_h400:
    h400 += ['', f'**Flagged at 400 units** ({len(flagged_h400)}: '
             + ', '.join(f'{s} {min(g, key=abs):+.2f}' for s, g in flagged_h400) + '). '
             + ' '.join(text['flag_notes'][s] for s, _ in flagged_h400 if s in text['flag_notes']) + ' '
             + text['text']['why_h400']]
  body, flagged = table_rows(groups, ORDER_150, DATASETS)
  if flagged:
    body += ['', text['text']['why_bibtex']]
  missing = [(d, s) for d in ('bibtex', 'delicious') for s in ORDER if (d, s) not in groups]
  if missing:
    body += ['', 'Not run yet: ' + ', '.join(f'{d} {s}' for d, s in missing) + '.']
  return {'arch': platform.machine(), 'cores': os.cpu_count(), 'tolerance': TOLERANCE, 'h400': '\n'.join(h400),
          'body': '\n'.join(body)}


TABLES = [tables.Table('baselines', 'docs/baselines.md', ('docs/mlc/runs/*.json', 'docs/baselines/runs/*.json'),
                       fields, key=row_of, command='python -m experiments.compare_methods --table_only')]


def main():
  args = experiments.parse(__doc__, {
      **mlc.FLAGS, '--systems': {'default': ','.join(ORDER), 'type': experiments.names(list(SYSTEMS))}})
  if not args.table_only:  # seed-major: every system gets seed 0 first; trained, never verified nor rerun
    experiments.run([run_of(dataset, system, seed, args) for dataset in args.datasets for seed in args.seeds
                     for system in args.systems], args, seconds=True)
  print(tables.build(TABLES[0]))


if __name__ == '__main__':
  sys.exit(cli.guarded(main))
