r"""Reproduce the multi-label table: implicit method (CD, SSVM, DVN, NCE) and the MBCE baseline, several seeds.

Usage (the commands that made the runs of docs/mlc_results.md are listed in docs/mlc_results.commands.txt):
  python -m experiments.reproduce_mlc --data_dir=../shared/data --datasets=bibtex,delicious --seeds=0,1,2
  python -m experiments.reproduce_mlc --data_dir=../shared/data --datasets=genbase,cal500,spo_fun --seeds=0

  python -m experiments.reproduce_mlc --datasets=bibtex --systems=implicit-cd,mbce --seeds=0,1,2 --verify

Each run writes docs/mlc/runs/<dataset>-<system>-seed<k>.json (its record: train_and_evaluate's result without the
per-step log, experiments/records.py); an existing file is not run again, so the script can be stopped
and restarted.
The table is rebuilt from all run files at the end (--table_only rebuilds it without training). --verify reruns
runs that have a committed record, from that record's own config (python -m implicit_jax.main
--config=<record>.json does the same), in a scratch workdir, and compares each with it instead of writing anything:
the regression test of the science after a change to the code. --supersede reruns, from its own record, each
committed run that keeps no predictions (made before records kept them), so that it can be rescored; the old record
moves to docs/mlc/runs_superseded/ and the page says how far the reruns moved. A new run takes its row's config,
configs/<dataset>.py:<system> (today's design); a committed run's recipe is its record.
"""

import argparse
import sys
from pathlib import Path

import numpy as np

from implicit_jax import runner
from implicit_jax.engine import cli
import experiments
from experiments import main_job, mlc, records, summary, tables
# The rows: configs/<dataset>.py:<system> applies experiments/mlc.py's overrides (SYSTEMS); the
# helpers the MLC scripts share live there too.
from experiments.mlc import ABLATION_ONLY, PAPER, SYSTEMS, device_of, run_name, system_of
from implicit_jax.tasks.mlc.datasets import PROTOCOLS

ROOT = Path(__file__).resolve().parents[1]
RUNS = ROOT / 'docs' / 'mlc' / 'runs'
# Records replaced by a rerun from themselves (--supersede: those made before records kept their predictions), kept
# to show how far a rerun moves a committed figure.
SUPERSEDED = ROOT / 'docs' / 'mlc' / 'runs_superseded'

# Shown under the table: what a row that is not the committed config is for (experiments/published.toml).
NOTES = experiments.TEXT['mlc']['notes']


def base_config(dataset, seed, protocol, data_dir, system=None):
  """configs/<dataset>.py, or its row ``system`` (configs/<dataset>.py:<system>[,<protocol>]), with the run's seed
  (which also seeds the dev split) and split protocol."""
  return mlc.row_config(ROOT / 'configs', dataset, seed, protocol, data_dir, system)


VERIFIED = ('test_f1', 'test_f1_tuned', 'dev_f1', 'best_epoch', 'threshold')


def run_of(dataset, system, seed, args) -> runner.Run:
  """The run of ``dataset``'s row ``system`` on ``seed``: its record under RUNS, its scratch workdir under /tmp
  (another for --verify, which reruns from scratch)."""
  name = run_name(dataset, system, args.protocol)

  def config():
    config = base_config(dataset, seed, args.protocol, args.data_dir, system)
    if args.epochs:
      config.num_epochs = args.epochs
    return config
  scratch = '/tmp/reproduce_mlc_verify' if getattr(args, 'verify', False) else '/tmp/reproduce_mlc'
  return runner.Run(f'{dataset} {system} seed {seed}', config, RUNS / f'{name}-seed{seed}.json',
                    f'{scratch}/{name}-{seed}')


def run(runs, args, seconds: bool = True) -> list[runner.Outcome]:
  """``runs`` through implicit_jax.runner with this script's records (--supersede: only those that exist, moved to
  SUPERSEDED; --verify: compared on VERIFIED); each run's seconds after it."""
  if getattr(args, 'supersede', False):
    runs = [r for r in runs if r.record.exists() or (SUPERSEDED / r.record.name).exists()]
  return runner.run_all(runs, writer=records.save, recipe=records.recipe_here(args.data_dir), seconds=seconds,
                        supersede=SUPERSEDED if getattr(args, 'supersede', False) else None,
                        verify=VERIFIED if getattr(args, 'verify', False) else (), provenance=records.made_here,
                        ray=experiments.ray_options(args))


def superseded_lines() -> list[str]:
  """How far the reruns of replaced records (SUPERSEDED) moved: same config and seed."""
  if not SUPERSEDED.exists():
    return []
  pairs = [(path.stem.rsplit('-seed', 1)[0], records.load(path), records.load(RUNS / path.name))
           for path in sorted(SUPERSEDED.glob('*.json')) if (RUNS / path.name).exists()]
  if not pairs:
    return []
  one = len(pairs) == 1
  return [f'- Reruns: {len(pairs)} {"record that" if one else "records that"} kept no predictions '
          f'{"was" if one else "were"} rerun from {"its own record" if one else "their own records"} (same config '
          'and seed) so that they keep them (`--supersede`; the replaced ones are in docs/mlc/runs_superseded/).'
          + records.rerun_moves(pairs, 'test_f1', 'test F1 @0.5', why=(
              'the replaced records name neither the machine nor the package versions they ran with (records name '
              'the machine since 2026-11-25, the packages since 2026-11-27), and either moves float results from '
              'the first step'))]


def row_of(path, record):
  """A record's row of the table (None for the rows docs/mlc_ablation.md shows: experiments/ablation_mlc.py)."""
  system = system_of(record)
  return None if system in ABLATION_ONLY else (record['task'], record['task_info']['protocol'], system)


def fields(groups) -> dict:
  """docs/mlc_results.md's fields: the table, the notes under it and the implicit-vs-MBCE paired differences."""
  fmt = records.mean_std
  rows, order = [], list(SYSTEMS)
  # Each dataset and split leads with its 400-unit rows (SEAL's task-net width, where the rivals of
  # docs/baselines.md are compared), then the configs' 150-unit rows.
  for (task, protocol, system), rs in sorted(groups.items(), key=lambda kv: (
      kv[0][0], kv[0][1], not kv[0][2].endswith('-h400'), order.index(kv[0][2]))):
    paper = PAPER.get(task, {}).get(system.removesuffix('-h400'))
    at05 = np.mean([r['test_f1'] for r in rs]) * 100
    device = ', '.join(sorted({device_of(r) for r in rs}))
    rows.append(
        f'| {task} | {protocol} | {system} | {solver_of(rs)} | {len(rs)} | {fmt([r["test_f1"] for r in rs])} | '
        f'{fmt([r["test_f1_tuned"] for r in rs])} | {fmt([r["test_at_0.5"]["micro_f1"] for r in rs])} | '
        f'{fmt([r["test_at_0.5"]["macro_f1"] for r in rs])} | {paper if paper else "–"} | '
        f'{f"{at05 - paper:+.2f}" if paper else "–"} | {device} | {np.mean([r["train_seconds"] for r in rs]):.0f} | '
        f'{mlc.recipe(task, system, protocol, rs, RUNS, ROOT)} |')
  shown = {k[2] for k in groups}
  notes = [f'- `{system}`: {note}.' for system, note in NOTES.items() if system in shown] + superseded_lines()
  paired = []
  for task in sorted({k[0] for k in groups}):
    for protocol in sorted({k[1] for k in groups if k[0] == task}):
      for size in ('', '-h400'):
        cd, mbce = (groups.get((task, protocol, system + size), []) for system in ('implicit-cd', 'mbce'))
        seeds, d05 = mlc.paired(cd, mbce, 'test_f1')
        if not seeds:
          continue
        d05, dtu = 100 * np.array(d05), 100 * np.array(mlc.paired(cd, mbce, 'test_f1_tuned')[1])
        paired.append(f'- {task} ({protocol}{", 400-unit nets" if size else ""}, seeds {seeds}): @0.5 '
                      f'{np.mean(d05):+.2f} (per seed {", ".join(f"{d:+.2f}" for d in d05)}); tuned '
                      f'{np.mean(dtu):+.2f} (per seed {", ".join(f"{d:+.2f}" for d in dtu)})')
  return {'table': '\n'.join(TABLE_HEAD + rows), 'notes': ''.join(f'{line}\n' for line in notes),
          'paired': '\n'.join(paired)}


TABLE_HEAD = ['| dataset | split | system | solver | seeds | F1 @0.5 | F1 tuned | micro-F1 @0.5 | macro-F1 @0.5 | paper '
              '| gap (@0.5 - paper) | device | s/run | config |', '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|']


def blocks(groups, fields) -> dict:
  """The main table in docs/results.md between its results markers, README.md's main-job line."""
  made_by, caption = fields['page'].split('\n\n')[1:3]
  header = made_by[:made_by.index(' from the runs')] + '; the commands that made the runs, the protocols and the ' \
      'implicit-vs-MBCE paired differences are in [mlc_results.md](mlc_results.md).'
  notes = [line for line in fields['notes'].splitlines() if line.startswith('- `')]  # the rows', not the reruns'
  out = {('docs/results.md', 'mlc'): '\n'.join([
      '', header, '', caption, '', fields['table'], '', *notes, '',
      'Implicit CD minus MBCE, same split and seeds (paired, F1 x 100):', '', fields['paired']])}
  committed = groups.get(('bibtex', 'official', mlc.MAIN_ROW), [])
  if committed:  # with each kind of CPU's figures (docs/main_job/runs): another kind rounds them differently
    out[('README.md', 'main')] = main_job.main_job_line(committed)
  return out


def summary_cell(dataset, system, rs) -> str:
  """A README summary cell: the row's config, or its records where they differ from it (mlc.recipe)."""
  folder = ROOT / 'docs' / ('baselines' if system in mlc.BASELINES else 'mlc') / 'runs'
  return mlc.recipe(dataset, system, 'official', rs, folder, ROOT)


def summary_rows(groups) -> list[str]:
  """README summary rows, one per dataset with rows on enough seeds: the implicit rows of the main table against
  MBCE and every baseline of experiments/compare_methods.py (docs/baselines/runs), official split."""
  rows = []
  for dataset in mlc.DATASETS:
    implicit = {s: rs for (d, p, s), rs in groups.items() if (d, p) == (dataset, 'official') and
                s.startswith('implicit')}
    rivals = {s: rs for (d, p, s), rs in groups.items() if (d, p) == (dataset, 'official') and
              not s.startswith('implicit')}
    baselines = ROOT / 'docs' / 'baselines' / 'runs'
    for system in mlc.BASELINES:
      stem = mlc.run_name(dataset, system, 'official')
      paths = sorted(baselines.glob(f'{stem}-seed*.json'))
      if paths:
        rivals[system] = [records.load(p) for p in paths]
    a, b = summary.best(implicit, 'dev_f1'), summary.best(rivals, 'dev_f1')
    if a and b:
      paper = PAPER.get(dataset, {}).get(a.removesuffix('-h400'))  # the paper's number for the chosen row
      rows.append(summary.row('mlc', f'{dataset}, example F1 @0.5', (summary_cell(dataset, a, implicit[a]), implicit[a]),
                              (summary_cell(dataset, b, rivals[b]), rivals[b]), 'test_f1',
                              f'{paper:.2f}' if paper else '–'))
  return rows


def solver_of(runs):
  names = sorted({r['config']['implicit']['solver']['name'] for r in runs if r['config']['method'] == 'implicit'})
  return ', '.join(names) if names else '–'


TABLES = [tables.Table('mlc', 'docs/mlc_results.md', ('docs/mlc/runs/*.json',), fields, key=row_of, blocks=blocks,
                        command='python -m experiments.reproduce_mlc --table_only', summary=('mlc', summary_rows))]


def main():
  parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument('--data_dir', default=str(ROOT.parent / 'shared' / 'data'))
  parser.add_argument('--datasets', default='bibtex,delicious', type=experiments.names(mlc.DATASETS))
  parser.add_argument('--systems', default=','.join(SYSTEMS), type=experiments.names(list(SYSTEMS)))
  parser.add_argument('--seeds', default='0,1,2', type=experiments.seeds)
  parser.add_argument('--protocol', default='official', choices=PROTOCOLS)
  parser.add_argument('--epochs', type=int, default=0, help='every new run\'s num_epochs (0: its row\'s)')
  parser.add_argument('--table_only', action='store_true')
  parser.add_argument('--verify', action='store_true', help='rerun runs with a committed record and compare '
                      '(writes nothing; the summary is printed)')
  parser.add_argument('--supersede', action='store_true',
                      help='rerun, from its own record, each committed run that keeps no predictions; the new record '
                           'takes its place and the old one goes to docs/mlc/runs_superseded/')
  experiments.add_runner_flags(parser)
  args = parser.parse_args()
  if args.verify and args.supersede:
    parser.error('--verify writes nothing and --supersede replaces records: choose one')
  verified = []
  if not args.table_only:
    # system-major: the MBCE and CD comparison completes first
    verified = run([run_of(dataset, system, seed, args) for dataset in args.datasets for system in args.systems
                    for seed in args.seeds], args)
  if args.verify:
    verified = [{'name': o.run.record.stem.rsplit('-seed', 1)[0], 'seed': int(o.run.record.stem.rsplit('-seed', 1)[1]),
                 'device_then': device_of(o.record), 'values': o.values, 'identical': o.identical}
                for o in verified if o.status == 'verified']
    for name in sorted({v['name'] for v in verified}):
      rows = [v for v in verified if v['name'] == name]
      means = {k: (np.mean([r['values'][k][0] for r in rows]), np.mean([r['values'][k][1] for r in rows]))
               for k in ('test_f1', 'test_f1_tuned')}
      print(f'{name}: seeds {[r["seed"] for r in rows]}, identical: {[r["identical"] for r in rows]}; mean test F1 '
            f'@0.5 {100 * means["test_f1"][0]:.2f} -> {100 * means["test_f1"][1]:.2f}, tuned '
            f'{100 * means["test_f1_tuned"][0]:.2f} -> {100 * means["test_f1_tuned"][1]:.2f}')
    return
  print(tables.build(TABLES[0]))


if __name__ == '__main__':
  sys.exit(cli.guarded(main))
