r"""The defaults of configs/custom.py (a user's own multi-label file), chosen on the dev splits of every multi-label
dataset the project ships and of the two scaled fixtures, by one grid run through that config.

Usage:
  python -m experiments.custom_defaults --data_dir=../shared/data [--datasets=cal500,genbase] [--workers=2]
  python -m experiments.custom_defaults --table_only

Each run is configs/custom.py pointed at a dataset, with one variant's overrides, for 80 epochs (delicious's
implicit runs, two variants as a check, 40: the longest runs of the grid, last); its record goes to
docs/sweeps/custom-defaults/<dataset>-<variant>-seed<k>.json and an existing record is not run again. The
learning rate is constant, so a run of E < 80 epochs is the first E epochs of the 80-epoch run: the budgets 20 and
40 are read from the dev history (the score of the epoch that dev F1 @0.5 selects among the first E), not trained
again.

docs/custom_defaults.md is rebuilt from the records: per dataset, each variant's dev F1 @0.5 (the selection metric
of every multi-label run) at each budget, mean over seeds; then each variant's regret (the dataset's best dev
score minus its own, averaged over the datasets) and the choice: per method, the variant of least regret at the
full budget, then the fewest epochs within TOLERANCE of it. Test figures are never read.
"""

import argparse
import concurrent.futures
import datetime
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
from implicit_jax.engine import cli  # pylint: disable=wrong-import-position
import experiments  # pylint: disable=wrong-import-position
from experiments import mlc, records  # pylint: disable=wrong-import-position

OUT = ROOT / 'docs' / 'sweeps' / 'custom-defaults'
TABLE = ROOT / 'docs' / 'custom_defaults.md'
# dataset -> (overrides that point configs/custom.py at it, seeds). The shipped datasets by name (their own split
# files; the seed draws the dev split from train), the fixtures as a user's file (60/20/20 by data.split_seed).
FIXTURES = 'tests/fixtures/mlc'
DATASETS = {  # small files first: the grid runs in this order
    'scaled': ({'data.train_file': f'{FIXTURES}/scaled.arff'}, (0, 1, 2)),
    'scaled_1500': ({'data.train_file': f'{FIXTURES}/scaled_1500.arff'}, (0, 1, 2)),
    'genbase': ({'data.name': 'genbase'}, (0, 1, 2)),
    'cal500': ({'data.name': 'cal500'}, (0, 1, 2)),
    'spo_fun': ({'data.name': 'spo_fun'}, (0, 1, 2)),
    'bibtex': ({'data.name': 'bibtex'}, (0,)),
    'delicious': ({'data.name': 'delicious'}, (0,)),
}
EPOCHS = 80
BUDGETS = (20, 40, 80)
TOLERANCE = 0.25  # F1 points of mean regret a shorter budget may add to be chosen over a longer one
# variant -> overrides: dropout and the learning rate for MBCE; dropout and the implicit term's solver (bibtex's one
# fused GCR pass, or normal_cg's 11 HVPs) for implicit CD, whose inner rate stays bibtex's 3e-4.
# configs/custom.py, a user's own file: the grid of this script (run through that config on every shipped
# dataset and the two scaled fixtures), the variant chosen per method on dev across them (least mean regret,
# docs/custom_defaults.md; tests/test_custom_defaults.py checks that it is the table's choice),.
_GCR1 = {'implicit.solver.name': 'gcr', 'implicit.solver.iterations': 1}
CUSTOM_GRID = {
    **{f'mbce-d{d}-lr{lr:g}': {'method': 'feedforward', 'model.dropout': d, 'optimizer.learning_rate': lr}
       for d in (0.0, 0.2, 0.5) for lr in (1e-3, 3e-3)},
    **{f'cd-d{d}-{name}': {'method': 'implicit', 'model.dropout': d, **solver}
       for d in (0.0, 0.2, 0.5) for name, solver in (('gcr1', _GCR1), ('ncg5', mlc.NORMAL_CG))},
}
# method -> (variant, epochs)
CUSTOM = {'implicit': ('cd-d0.2-gcr1', 80), 'feedforward': ('mbce-d0.0-lr0.003', 40)}
VARIANTS = CUSTOM_GRID
# delicious's implicit runs are the grid's longest (tens of CPU minutes each): two, at 40 epochs, a check on the choice
# made where every variant ran (regrets: common_datasets), not part of it.
DELICIOUS_CD = ('cd-d0.2-gcr1', 'cd-d0.5-gcr1')


def method_of(variant: str) -> str:
  return variant.split('-')[0]


def runs_of(dataset: str):
  """(variant, seed, epochs) of every run the grid holds for ``dataset``."""
  for variant in VARIANTS:
    if dataset == 'delicious' and method_of(variant) == 'cd' and variant not in DELICIOUS_CD:
      continue
    epochs = 40 if dataset == 'delicious' and method_of(variant) == 'cd' else EPOCHS
    for seed in DATASETS[dataset][1]:
      yield variant, seed, epochs


def path_of(dataset, variant, seed) -> Path:
  return OUT / f'{dataset}-{variant}-seed{seed}.json'


def command_of(dataset, variant, seed, epochs, data_dir) -> list[str]:
  """The run as the documented command line: configs/custom.py and --config flags only."""
  flags = {**DATASETS[dataset][0], **VARIANTS[variant], 'num_epochs': epochs, 'seed': seed,
           'data.split_seed': seed}
  if 'data.name' in flags and flags['data.name'] != 'bibtex':
    flags['data.data_dir'] = data_dir
  return ['-m', 'implicit_jax.main', '--config=configs/custom.py',
          *(f'--config.{k}={v}' for k, v in flags.items())]


def run_one(dataset, variant, seed, epochs, data_dir) -> str:
  out = path_of(dataset, variant, seed)
  if out.exists():
    return f'{out.name}: kept'
  workdir = Path('/tmp/custom-defaults') / out.stem
  argv = command_of(dataset, variant, seed, epochs, data_dir)
  log = workdir.parent / f'{workdir.name}.log'  # not with_suffix: the name holds dots (d0.2)
  log.parent.mkdir(parents=True, exist_ok=True)
  with open(log, 'w') as f:
    done = subprocess.run([sys.executable, *argv, f'--workdir={workdir}'], cwd=ROOT, stdout=f,
                          stderr=subprocess.STDOUT, check=False)
  if done.returncode:
    return f'{out.name}: FAILED (exit {done.returncode}; {log})'
  result = records.stamp(records.load(workdir / 'metrics.json'))
  result['command'] = 'python ' + ' '.join(argv) + ' --workdir=WORKDIR'
  records.write(out, result)
  return f'{out.name}: dev @0.5 {100 * result["dev_f1"]:.2f} in {result["train_seconds"]:.0f} s'


def at_budget(record, budget) -> tuple[float, float]:
  """(dev F1 @0.5, dev F1 tuned) of the epoch a run of ``budget`` epochs would select: the first best dev F1 @0.5
  among its first ``budget`` epochs."""
  rows = [h for h in record['history'] if h['epoch'] <= budget]
  if not rows or rows[-1]['epoch'] < budget:
    return np.nan, np.nan
  best = max(rows, key=lambda h: h['dev_f1'])  # max keeps the first of equal scores, as the engine does
  return 100 * best['dev_f1'], 100 * best['dev_f1_tuned']


def scores(out=OUT):
  """{(dataset, variant, budget): (mean dev @0.5, mean dev tuned, seeds)} over the committed records."""
  table = {}
  for dataset in DATASETS:
    for variant in VARIANTS:
      found = [records.load(p) for p in sorted(out.glob(f'{dataset}-{variant}-seed*.json'))]
      for budget in BUDGETS:
        pairs = [at_budget(r, budget) for r in found]
        pairs = [p for p in pairs if not np.isnan(p[0])]
        if pairs:
          table[dataset, variant, budget] = (np.mean([p[0] for p in pairs]), np.mean([p[1] for p in pairs]),
                                             len(pairs))
  return table


def common_datasets(table, method: str) -> list[str]:
  """The datasets on which every variant of ``method`` has a full-budget score: regrets compare variants there,
  so that a variant is not ranked on datasets another never ran on."""
  variants = [v for v in VARIANTS if method_of(v) == method]
  return [d for d in DATASETS if all((d, v, EPOCHS) in table for v in variants)]


def regrets(table):
  """{(variant, budget): (mean regret, datasets)}: over the datasets every variant of its method ran on
  (``common_datasets``), each dataset's best dev @0.5 over the method's variants and budgets minus this one's."""
  out = {}
  for method in {method_of(v) for v in VARIANTS}:
    variants = [v for v in VARIANTS if method_of(v) == method]
    for d in common_datasets(table, method):
      best = max(table[d, v, b][0] for v in variants for b in BUDGETS if (d, v, b) in table)
      for v in variants:
        for b in BUDGETS:
          if (d, v, b) in table:
            out.setdefault((v, b), []).append(best - table[d, v, b][0])
  return {key: (float(np.mean(gaps)), len(gaps)) for key, gaps in out.items()}


def choose(table):
  """{method: (variant, budget)}: least mean regret at the full budget, then the fewest epochs whose regret is
  within TOLERANCE of it."""
  reg = regrets(table)
  chosen = {}
  for method in sorted({method_of(v) for v in VARIANTS}):
    full = {v: reg[v, EPOCHS][0] for v in VARIANTS if method_of(v) == method and (v, EPOCHS) in reg}
    if not full:
      continue
    variant = min(full, key=full.get)
    budget = min(b for b in BUDGETS if (variant, b) in reg and reg[variant, b][0] <= full[variant] + TOLERANCE)
    chosen[method] = variant, budget
  return chosen


def build_table(out=OUT) -> str:
  table = scores(out)
  reg = regrets(table)
  chosen = choose(table)
  made = records.write_commands(TABLE, [records.load(p)['command'] for p in sorted(out.glob('*.json'))])
  lines = ['# Defaults for a user\'s multi-label file (configs/custom.py)', '',
           f'Rebuilt by `python -m experiments.custom_defaults --table_only` on {datetime.date.today()} from the run '
           'records in `docs/sweeps/custom-defaults/`, made by `python -m experiments.custom_defaults '
           f'--data_dir=../shared/data` ({made}). Every run is configs/custom.py pointed at the dataset, with the '
           'variant\'s overrides. Dev F1 @0.5 (x 100; the metric that selects the epoch) of the epoch a run of 20, '
           '40 or 80 epochs selects, mean over the seeds shown; the tuned-threshold dev F1 is beside it. Test '
           'figures are not read.', '']
  for dataset, (where, seeds) in DATASETS.items():
    shown = ', '.join(f'{k}={v}' for k, v in where.items())
    lines += [f'## {dataset} ({shown}; seeds {", ".join(map(str, seeds))})', '',
              '| variant | ' + ' | '.join(f'dev @0.5, {b} ep | tuned, {b} ep' for b in BUDGETS) + ' |',
              '|---|' + '---|---|' * len(BUDGETS)]
    for variant in VARIANTS:
      cells = [table.get((dataset, variant, b)) for b in BUDGETS]
      if any(cells):
        lines.append(f'| {variant} | ' + ' | '.join(f'{c[0]:.2f} | {c[1]:.2f}' if c else '- | -' for c in cells)
                     + ' |')
    lines.append('')
  common = {m: common_datasets(table, m) for m in sorted({method_of(v) for v in VARIANTS})}
  lines += ['## Regret across datasets', '',
            'Per dataset, the best dev F1 @0.5 of any variant and budget of the same method, minus the variant\'s; '
            'mean over the datasets on which every variant of the method ran: '
            + '; '.join(f'{m}: {", ".join(ds)}' for m, ds in common.items()) + '. Delicious\'s implicit runs, '
            + ('at 40 epochs for two variants, are a check shown above, not in the mean.'
               if any(d == 'delicious' and method_of(v) == 'cd' for d, v, _ in table)
               else 'the longest of the grid, were not made: implicit CD\'s choice rests on the others.'), '',
            '| variant | ' + ' | '.join(f'{b} ep' for b in BUDGETS) + ' | datasets |',
            '|---|' + '---|' * len(BUDGETS) + '---|']
  for variant in VARIANTS:
    cells = [reg.get((variant, b)) for b in BUDGETS]
    if any(cells):
      lines.append(f'| {variant} | ' + ' | '.join(f'{c[0]:.2f}' if c else '-' for c in cells)
                   + f' | {max(c[1] for c in cells if c)} |')
  lines += ['', f'Chosen (least mean regret at {EPOCHS} epochs, then the fewest epochs within {TOLERANCE} of it): '
            + '; '.join(f'{m}: {v} for {b} epochs' for m, (v, b) in chosen.items()) + '.', '']
  records.write_page(TABLE, '\n'.join(lines))
  return '\n'.join(lines)


def main():
  parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument('--data_dir', default=os.environ.get('IMPLICIT_JAX_DATA_DIR', '../shared/data'))
  parser.add_argument('--datasets', default=','.join(DATASETS), type=experiments.names(list(DATASETS)))
  parser.add_argument('--workers', type=int, default=1, help='runs at once (each a process)')
  parser.add_argument('--table_only', action='store_true')
  args = parser.parse_args()
  datasets = args.datasets
  if not args.table_only:
    todo = [(d, *run) for d in datasets for run in runs_of(d)]
    print(f'{len(todo)} runs, {sum(not path_of(d, v, s).exists() for d, v, s, _ in todo)} to make', flush=True)
    with concurrent.futures.ThreadPoolExecutor(args.workers) as pool:
      # relative to the checkout, where the runs start: the records then name no path of this machine
      data_dir = os.path.relpath(os.path.abspath(args.data_dir), ROOT)
      for i, line in enumerate(pool.map(lambda r: run_one(*r, data_dir), todo)):
        print(f'[{i + 1}/{len(todo)}] {line}', flush=True)
  print(build_table())


if __name__ == '__main__':
  sys.exit(cli.guarded(main))
