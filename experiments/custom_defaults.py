r"""The defaults of configs/custom.py (a user's own multi-label file), chosen on the dev splits of every multi-label
dataset the project ships and of the two scaled fixtures, by one grid run through that config.

Usage:
  python -m experiments.custom_defaults --data_dir=../shared/data [--datasets=cal500,genbase] [--workers=N]
  python -m experiments.custom_defaults --table_only

Each run is configs/custom.py pointed at a dataset with one variant's overrides, for 80 epochs (delicious's implicit
runs, two variants as a check, 40); its record, docs/sweeps/custom-defaults/<dataset>-<variant>-seed<k>.json, holds
implicit_jax.main's command that reruns it; an existing record is not run again. The learning rate is constant, so
the budgets 20 and 40 are read from the 80-epoch run's dev history; the rule of the choice: docs/custom_defaults.md.
"""

import functools
import os
import sys

import numpy as np

from implicit_jax import runner
from implicit_jax.engine import cli
import experiments
from experiments import mlc, records, tables

ROOT = records.ROOT
OUT = ROOT / 'docs' / 'sweeps' / 'custom-defaults'
# dataset -> (overrides that point configs/custom.py at it, seeds), small files first: the grid runs in this order.
# The fixtures as a user's file (split by data.split_seed), the shipped datasets by name (the seed draws dev).
DATASETS = {**{name: ({'data.train_file': f'tests/fixtures/mlc/{name}.arff'}, (0, 1, 2))
               for name in ('scaled', 'scaled_1500')},
            **{name: ({'data.name': name}, (0, 1, 2)) for name in ('genbase', 'cal500', 'spo_fun')},
            **{name: ({'data.name': name}, (0,)) for name in ('bibtex', 'delicious')}}
EPOCHS = 80
BUDGETS = (20, 40, 80)
TOLERANCE = 0.25  # F1 points of mean regret a shorter budget may add to be chosen over a longer one
# variant -> overrides: dropout and the learning rate for MBCE; dropout and the implicit term's solver (bibtex's one
# fused GCR pass, or normal_cg's 11 HVPs) for implicit CD, whose inner rate stays bibtex's 3e-4.
_GCR1 = {'implicit.solver.name': 'gcr', 'implicit.solver.iterations': 1}
VARIANTS = {**{f'mbce-d{d}-lr{lr:g}': {'method': 'feedforward', 'model.dropout': d, 'optimizer.learning_rate': lr}
               for d in (0.0, 0.2, 0.5) for lr in (1e-3, 3e-3)},
            **{f'cd-d{d}-{name}': {'method': 'implicit', 'model.dropout': d, **solver}
               for d in (0.0, 0.2, 0.5) for name, solver in (('gcr1', _GCR1), ('ncg5', mlc.NORMAL_CG))}}
# method -> (variant, epochs): configs/custom.py's defaults, the grid's choice (tests/test_custom_defaults.py)
CUSTOM = {'implicit': ('cd-d0.2-gcr1', 80), 'feedforward': ('mbce-d0.0-lr0.003', 40)}
# delicious's implicit runs are the grid's longest (tens of CPU minutes each): two, at 40 epochs, a check on the choice.
DELICIOUS_CD = ('cd-d0.2-gcr1', 'cd-d0.5-gcr1')


def methods() -> dict[str, list[str]]:
  """{method: its variants} (a variant's name starts with its method's)."""
  return {m: [v for v in VARIANTS if v.split('-')[0] == m] for m in sorted({v.split('-')[0] for v in VARIANTS})}


def runs_of(dataset: str):
  """(variant, seed, epochs) of every run the grid holds for ``dataset``."""
  for variant in VARIANTS:
    cd_on_delicious = dataset == 'delicious' and variant.startswith('cd-')
    if not cd_on_delicious or variant in DELICIOUS_CD:
      for seed in DATASETS[dataset][1]:
        yield variant, seed, 40 if cd_on_delicious else EPOCHS


def run_of(dataset, variant, seed, epochs, data_dir) -> runner.Run:
  """configs/custom.py with the run's flags, as implicit_jax.main builds it."""
  flags = {**DATASETS[dataset][0], **VARIANTS[variant], 'num_epochs': epochs, 'seed': seed, 'data.split_seed': seed}
  if flags.get('data.name', 'bibtex') != 'bibtex':
    flags['data.data_dir'] = data_dir
  values = {k: os.path.normpath(ROOT / v) if k in ('data.train_file', 'data.data_dir') else v for k, v in flags.items()}
  config = functools.partial(experiments.row_config, 'configs/custom.py',
                             {**values, 'config_file': 'configs/custom.py', 'overrides': cli.overrides(flags)})
  out = OUT / f'{dataset}-{variant}-seed{seed}.json'
  return runner.Run(f'{dataset} {variant} seed {seed}', config, out, f'/tmp/custom-defaults/{out.stem}')


def command_of(config: dict) -> str:
  """A run's documented command line: implicit_jax.main with its config file and flags (its record's config)."""
  return ' '.join(['python -m implicit_jax.main', f'--config={config["config_file"]}', *config['overrides'],
                   '--workdir=WORKDIR'])


def save(path, result) -> None:
  """records.save, the command the run's own (``command_of``), not this script's."""
  records.stamp(result)['command'] = command_of(result['config'])
  records.write(path, result)


def at_budget(record, budget) -> tuple[float, float]:
  """(dev F1 @0.5, dev F1 tuned) of the epoch a run of ``budget`` epochs would select."""
  rows = [h for h in record['history'] if h['epoch'] <= budget]
  if not rows or rows[-1]['epoch'] < budget:
    return np.nan, np.nan
  best = max(rows, key=lambda h: h['dev_f1'])  # max keeps the first of equal scores, as the engine does
  return 100 * best['dev_f1'], 100 * best['dev_f1_tuned']


def row_of(path, record):
  """A record's (dataset, variant), as its file names them; None outside the grid."""
  dataset, _, variant = tables.stem(path, record).partition('-')
  return (dataset, variant) if dataset in DATASETS and variant in VARIANTS else None


def scores(groups):
  """{(dataset, variant, budget): (mean dev @0.5, mean dev tuned, seeds)} over the records ``groups``."""
  table = {}
  for (dataset, variant), rs in groups.items():
    for budget in BUDGETS:
      pairs = [p for p in (at_budget(r, budget) for r in rs) if not np.isnan(p[0])]
      if pairs:
        table[dataset, variant, budget] = (np.mean([p[0] for p in pairs]), np.mean([p[1] for p in pairs]), len(pairs))
  return table


def common_datasets(table, method: str) -> list[str]:
  """The datasets on which every variant of ``method`` has a full-budget score (no variant ranked on another's)."""
  return [d for d in DATASETS if all((d, v, EPOCHS) in table for v in methods()[method])]


def regrets(table):
  """{(variant, budget): (mean regret, datasets)} over ``common_datasets``: the method's best dev @0.5 minus this."""
  out = {}
  for method, variants in methods().items():
    for d in common_datasets(table, method):
      runs = [(v, b) for v in variants for b in BUDGETS if (d, v, b) in table]
      best = max(table[d, v, b][0] for v, b in runs)
      for v, b in runs:
        out.setdefault((v, b), []).append(best - table[d, v, b][0])
  return {key: (float(np.mean(gaps)), len(gaps)) for key, gaps in out.items()}


def choose(table):
  """{method: (variant, budget)}, as the module doc says."""
  reg, chosen = regrets(table), {}
  for method, variants in methods().items():
    full = {v: reg[v, EPOCHS][0] for v in variants if (v, EPOCHS) in reg}
    if full:
      variant = min(full, key=full.get)
      chosen[method] = variant, min(b for b in BUDGETS if (variant, b) in reg
                                    and reg[variant, b][0] <= full[variant] + TOLERANCE)
  return chosen


def fields(groups) -> dict:
  """docs/custom_defaults.md's fields: each dataset's dev scores by budget, the regrets and the choice."""
  table = scores(groups)
  reg, chosen, sections = regrets(table), choose(table), []
  # a markdown table: head's columns after "variant", a line for each of rows ({variant: its cells})
  score_table = lambda head, rows: [f'| variant | {head} |', '|---|' + '---|' * (head.count('|') + 1),
                                    *(f'| {variant} | {cells} |' for variant, cells in rows.items())]
  for dataset, (where, seeds) in DATASETS.items():
    cells = {v: [table.get((dataset, v, b)) for b in BUDGETS] for v in VARIANTS}
    rows = {v: ' | '.join(f'{x[0]:.2f} | {x[1]:.2f}' if x else '- | -' for x in c) for v, c in cells.items() if any(c)}
    sections.append('\n'.join([
        f'## {dataset} ({", ".join(f"{k}={v}" for k, v in where.items())}; seeds {", ".join(map(str, seeds))})', '',
        *score_table(' | '.join(f'dev @0.5, {b} ep | tuned, {b} ep' for b in BUDGETS), rows)]))
  cells = {v: [reg.get((v, b)) for b in BUDGETS] for v in VARIANTS}
  rows = {v: ' | '.join(f'{x[0]:.2f}' if x else '-' for x in c) + f' | {max(x[1] for x in c if x)}'
          for v, c in cells.items() if any(c)}
  delicious_cd = any(d == 'delicious' and v.startswith('cd-') for d, v, _ in table)
  return {'datasets': '\n\n'.join(sections), 'epochs': EPOCHS, 'tolerance': TOLERANCE,
          'common': '; '.join(f'{m}: {", ".join(common_datasets(table, m))}' for m in methods()),
          'delicious': ('at 40 epochs for two variants, are a check shown above, not in the mean.' if delicious_cd
                        else 'the longest of the grid, were not made: implicit CD\'s choice rests on the others.'),
          'regrets': '\n'.join(score_table(' | '.join(f'{b} ep' for b in BUDGETS) + ' | datasets', rows)),
          'chosen': '; '.join(f'{m}: {v} for {b} epochs' for m, (v, b) in chosen.items())}


TABLES = [tables.Table('custom_defaults', 'docs/custom_defaults.md', ('docs/sweeps/custom-defaults/*.json',), fields,
                       key=row_of, command='python -m experiments.custom_defaults --table_only')]


def main():
  args = experiments.parse(__doc__, {
      '--data_dir': {'default': os.environ.get('IMPLICIT_JAX_DATA_DIR', '../shared/data')}, '--seeds': None,
      '--datasets': {'default': ','.join(DATASETS), 'type': experiments.names(list(DATASETS))},
      '--workers': {'type': experiments.runs_at_once, 'default': 1, 'help': 'runs at once on this machine: 1, one '
                    'after the other; more, as Ray tasks (the same as --ray --cpus_per_run=CORES/N)'}})
  if not args.table_only:
    # relative to the checkout, as the documented commands give it: the records then name no path of this machine
    data_dir = os.path.relpath(os.path.abspath(args.data_dir), ROOT)
    runs = [run_of(d, *run, data_dir) for d in args.datasets for run in runs_of(d)]
    print(f'{len(runs)} runs, {sum(not r.record.exists() for r in runs)} to make', flush=True)
    experiments.run(runs, args, writer=save, seconds=True)
  print(tables.build(TABLES[0]))


if __name__ == '__main__':
  sys.exit(cli.guarded(main))
