r"""Reproduce the multi-label table: implicit method (CD, SSVM, DVN, NCE) and the MBCE baseline, several seeds.

Usage (the commands that made the runs of docs/mlc_results.md are listed in docs/mlc_results.commands.txt):
  python -m experiments.reproduce_mlc --data_dir=../shared/data --datasets=bibtex,delicious --seeds=0,1,2
  python -m experiments.reproduce_mlc --data_dir=../shared/data --datasets=genbase,cal500,spo_fun --seeds=0

  python -m experiments.reproduce_mlc --datasets=bibtex --systems=implicit-cd,mbce --seeds=0,1,2 --verify

Each run writes docs/mlc/runs/<dataset>-<system>-seed<k>.json, not run again once there (the script can be stopped
and restarted); the table is rebuilt from all records at the end (--table_only: without training). --verify (the
regression test of the science after a change to the code) and --supersede (so that old records can be rescored)
rerun committed runs from their own records. A new run takes its row's config, configs/<dataset>.py:<system>.
"""

import functools
import sys

import numpy as np

from implicit_jax import runner
from implicit_jax.engine import cli
import experiments
from experiments import main_job, mlc, records, summary, tables
from experiments.mlc import ABLATION_ONLY, PAPER, SYSTEMS, system_of

ROOT = mlc.ROOT
RUNS = ROOT / 'docs' / 'mlc' / 'runs'
# Records replaced by a rerun from themselves (--supersede), kept to show how far a rerun moves a committed figure.
SUPERSEDED = ROOT / 'docs' / 'mlc' / 'runs_superseded'
TEXT = experiments.TEXT['mlc']
VERIFIED = ('test_f1', 'test_f1_tuned', 'dev_f1', 'best_epoch', 'threshold')  # what --verify compares


def run_of(dataset, system, seed, args) -> runner.Run:
  """The run of ``dataset``'s row ``system`` on ``seed`` (``args``: --protocol, --data_dir, --epochs): its record in
  RUNS, a baseline's (compare_methods') in docs/baselines/runs; --verify and baselines use workdirs of their own."""
  name = mlc.run_name(dataset, system, args.protocol)
  folder = RUNS if system in SYSTEMS else mlc.runs_folder(system)
  scratch = ('reproduce_mlc' if system in SYSTEMS else 'compare_methods') + (
      '_verify' if getattr(args, 'verify', False) else '')
  config = functools.partial(mlc.row_config, dataset, system, seed, args.protocol, args.data_dir,
                             {'num_epochs': args.epochs} if args.epochs else None)
  return runner.Run(f'{dataset} {system} seed {seed}', config, folder / f'{name}-seed{seed}.json',
                    f'/tmp/{scratch}/{name}-{seed}')


def run(runs, args):
  """``runs``, timed; --supersede reruns only those with a record (to SUPERSEDED), --verify compares ``VERIFIED``."""
  if args.supersede:
    runs = [r for r in runs if r.record.exists() or (SUPERSEDED / r.record.name).exists()]
  return experiments.run(runs, args, recipe=records.recipe_here(args.data_dir), seconds=True,
                         supersede=SUPERSEDED if args.supersede else None, verify=VERIFIED if args.verify else ())


def superseded_lines() -> list[str]:
  """How far the reruns of replaced records (SUPERSEDED) moved: same config and seed."""
  pairs = [(path.stem.rsplit('-seed', 1)[0], records.load(path), records.load(RUNS / path.name))
           for path in sorted(SUPERSEDED.glob('*.json')) if (RUNS / path.name).exists()]
  if not pairs:
    return []
  one = len(pairs) == 1
  return [f'- Reruns: {len(pairs)} {"record that" if one else "records that"} kept no predictions '
          f'{"was" if one else "were"} rerun from {"its own record" if one else "their own records"} (same config '
          'and seed) so that they keep them (`--supersede`; the replaced ones are in docs/mlc/runs_superseded/).'
          + records.rerun_moves(pairs, 'test_f1', 'test F1 @0.5', why=TEXT['text']['rerun_why'])]


def fields(groups) -> dict:
  """docs/mlc_results.md's fields: the table (400-unit rows, SEAL's width, first), notes, paired differences."""
  rows = []
  for (task, protocol, system), rs in sorted(groups.items(), key=lambda kv: (
      kv[0][0], kv[0][1], not kv[0][2].endswith('-h400'), list(SYSTEMS).index(kv[0][2]))):
    paper = PAPER.get(task, {}).get(system.removesuffix('-h400'))
    gap = f'{np.mean([r["test_f1"] for r in rs]) * 100 - paper:+.2f}' if paper else '–'
    solvers = sorted({r['config']['implicit']['solver']['name'] for r in rs if r['config']['method'] == 'implicit'})
    rows.append(f'| {task} | {protocol} | {system} | {", ".join(solvers) or "–"} | {len(rs)} | '
                f'{mlc.cells(rs, "test_f1", "test_f1_tuned")} | '
                f'{mlc.cells([r["test_at_0.5"] for r in rs], "micro_f1", "macro_f1")} | {paper or "–"} | {gap} | '
                f'{", ".join(sorted({records.device_of(r) for r in rs}))} | '
                f'{np.mean([r["train_seconds"] for r in rs]):.0f} | {mlc.recipe(task, system, protocol, rs)} |')
  notes = [f'- `{system}`: {note}.' for system, note in TEXT['notes'].items() if system in {k[2] for k in groups}]
  paired = []
  for task, protocol in sorted({k[:2] for k in groups}):
    for size in ('', '-h400'):
      cd, mbce = (groups.get((task, protocol, system + size), []) for system in ('implicit-cd', 'mbce'))
      (seeds, d05), (_, dtu) = (mlc.paired(cd, mbce, key) for key in ('test_f1', 'test_f1_tuned'))
      if seeds:
        paired.append(f'- {task} ({protocol}{", 400-unit nets" if size else ""}, seeds {seeds}): @0.5 '
                      f'{mlc.per_seed(d05, "per seed ")}; tuned {mlc.per_seed(dtu, "per seed ")}')
  return {'table': '\n'.join(rows), 'notes': ''.join(f'{line}\n' for line in notes + superseded_lines()),
          'paired': '\n'.join(paired)}


def blocks(groups, fields) -> dict:
  """The main table in docs/results.md between its results markers, README.md's main-job line."""
  made_by, caption, table = fields['page'].split('\n\n')[1:4]
  header = made_by[:made_by.index(' from the runs')] + '; the commands that made the runs, the protocols and the ' \
      'implicit-vs-MBCE paired differences are in [mlc_results.md](mlc_results.md).'
  notes = [line for line in fields['notes'].splitlines() if line.startswith('- `')]  # the rows', not the reruns'
  out = {('docs/results.md', 'mlc'): '\n'.join([
      '', header, '', caption, '', table, '', *notes, '',
      'Implicit CD minus MBCE, same split and seeds (paired, F1 x 100):', '', fields['paired']])}
  committed = groups.get(('bibtex', 'official', mlc.MAIN_ROW), [])
  if committed:  # with each kind of CPU's figures (docs/main_job/runs): another kind rounds them differently
    out[('README.md', 'main')] = main_job.main_job_line(committed)
  return out


def summary_rows(groups) -> list[str]:
  """README rows, per dataset (official split): the best implicit row on dev against the best of MBCE and baselines."""
  rows = []
  for dataset in mlc.DATASETS:
    official = {s: rs for (d, p, s), rs in groups.items() if (d, p) == (dataset, 'official')}
    for system in mlc.BASELINES:
      paths = sorted(mlc.runs_folder(system).glob(f'{mlc.run_name(dataset, system, "official")}-seed*.json'))
      if paths:
        official[system] = [records.load(p) for p in paths]
    a, b = summary.sides(official, 'dev_f1')
    if a and b:
      paper = PAPER.get(dataset, {}).get(a.removesuffix('-h400'))  # the paper's number for the chosen row
      cell = lambda s: (mlc.recipe(dataset, s, 'official', official[s]), official[s])
      rows.append(summary.row('mlc', f'{dataset}, example F1 @0.5', cell(a), cell(b), 'test_f1',
                              f'{paper:.2f}' if paper else '–'))
  return rows


# A record's row: (dataset, protocol, system), none for the rows only docs/mlc_ablation.md shows.
row_of = lambda path, record: (None if (system := system_of(record)) in ABLATION_ONLY
                               else (record['task'], record['task_info']['protocol'], system))
TABLES = [tables.Table('mlc', 'docs/mlc_results.md', ('docs/mlc/runs/*.json',), fields, key=row_of, blocks=blocks,
                        command='python -m experiments.reproduce_mlc --table_only', summary=('mlc', summary_rows))]


def main():
  args = experiments.parse(__doc__, {
      **mlc.FLAGS,
      '--verify': {'action': 'store_true', 'help': 'rerun runs with a committed record and compare (writes nothing; '
                   'each comparison is printed)'},
      '--supersede': {'action': 'store_true', 'help': 'rerun, from its own record, each committed run that keeps no '
                      'predictions; the new record takes its place and the old one goes to docs/mlc/runs_superseded/'}})
  if not args.table_only:  # system-major: the MBCE and CD comparison completes first
    run([run_of(dataset, system, seed, args) for dataset in args.datasets for system in args.systems
         for seed in args.seeds], args)
  if not args.verify:  # --verify writes nothing: the runner has printed each comparison
    print(tables.build(TABLES[0]))


if __name__ == '__main__':
  sys.exit(cli.guarded(main))
