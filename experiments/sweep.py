r"""Named hyperparameter sweeps: variants of a dataset config, chosen on dev, every run kept as evidence.

Usage:
  python -m experiments.sweep --sweep=delicious-cd --data_dir=../shared/data [--only=lam0.1,lr3e-4] [--seeds=0]
  python -m experiments.sweep --sweep=delicious-cd --table_only

The sweeps and their variants (overrides of today's dataset config) are experiments/sweeps.toml [mlc.*]. Each run
writes docs/sweeps/<sweep>/<variant>-seed<k>.json (not run again once there; rerun by python -m implicit_jax.main
--config=THAT_RECORD --workdir=DIR), and docs/sweeps/<sweep>.md is rebuilt from them (a choice reads dev only).
"""

import functools
import sys

import numpy as np

from implicit_jax import runner
from implicit_jax.engine import cli
import experiments
from experiments import mlc, records, tables

ROOT = records.ROOT
# sweep name -> (dataset config, {variant: overrides}); sweeps.toml says why each sweep was made and what it found.
SWEEPS = {name: (sweep['dataset'], sweep['variants']) for name, sweep in experiments.sweeps('mlc').items()}
# The row a dataset's sweeps start from, where it is not the dataset config as it is: bibtex's sweeps were all made
# on its five-step design, configs/bibtex.py as it was until issue 45 moved its main job to mlc.MAIN_ROW.
BASE_ROW = {'bibtex': 'implicit-cd-gcr'}


def run_of(sweep, variant, seed, args) -> runner.Run:
  """The run of ``sweep``'s ``variant`` on ``seed``: its base row with the variant's overrides."""
  dataset, overrides = SWEEPS[sweep][0], SWEEPS[sweep][1][variant]
  config = functools.partial(mlc.row_config, dataset, BASE_ROW.get(dataset), seed,
                             overrides.get('data.protocol', 'official'), args.data_dir, overrides)
  return runner.Run(f'{sweep} {variant} seed {seed}', config, ROOT / 'docs' / 'sweeps' / sweep /
                    f'{variant}-seed{seed}.json', f'/tmp/sweep/{sweep}-{variant}-{seed}')


def fields(sweep, groups) -> dict:
  """A sweep page's fields: its base row, its runs variant by variant, the means of those run on several seeds."""
  dataset, variants = SWEEPS[sweep]
  lines, means = [], []
  for variant, overrides in variants.items():
    rs = groups.get(variant, [])
    shown = records.portable(', '.join(f'{k}={v}' for k, v in overrides.items())) or '(config as committed)'
    for r in rs:
      tuned_max = max((h.get('dev_f1_tuned', np.nan) for h in r['history']), default=np.nan)
      lines.append(f'| {variant} | {shown} | {r["seed"]} | {r["best_epoch"]} | {100 * r["dev_f1"]:.2f} | '
                   f'{100 * r["dev_f1_tuned"]:.2f} | {100 * tuned_max:.2f} | {100 * r["test_f1"]:.2f} | '
                   f'{100 * r["test_f1_tuned"]:.2f} | {records.device_of(r)} | {r["train_seconds"]:.0f} |')
    if len(rs) > 1:
      means.append(f'| {variant} | {len(rs)} | ' + ' | '.join(f'{100 * np.mean([r[k] for r in rs]):.2f}' for k in (
          'dev_f1', 'dev_f1_tuned', 'test_f1', 'test_f1_tuned')) + ' |')
  if means:
    lines += ['', 'Variants run with several seeds, mean over seeds:', '',
              '| variant | seeds | dev @0.5 | dev tuned (sel.) | test @0.5 | test tuned |', '|---|---|---|---|---|---|',
              *means]
  base = f'configs/{dataset}.py' + (f':{BASE_ROW[dataset]}' if dataset in BASE_ROW else '')
  return {'sweep': sweep, 'base': base, 'table': '\n'.join(lines)}


TABLES = [tables.Table(name, f'docs/sweeps/{name}.md', (f'docs/sweeps/{name}/*.json',), functools.partial(fields, name),
                       key=tables.variant_key(SWEEPS[name][1]), template='sweep.md', required=False,
                       command=f'python -m experiments.sweep --sweep={name} --table_only') for name in SWEEPS]


def main():
  args = experiments.parse(__doc__, {'--sweep': {'required': True, 'choices': sorted(SWEEPS)},
                                     '--only': {'default': '', 'help': 'comma-separated variants (default: all)'},
                                     '--seeds': {'default': '0', 'type': experiments.seeds}})
  chosen = experiments.chosen_variants(args, args.only, SWEEPS[args.sweep][1])
  if not args.table_only:
    experiments.run([run_of(args.sweep, variant, seed, args) for seed in args.seeds for variant in chosen], args)
  print(tables.build(next(t for t in TABLES if t.name == args.sweep)))


if __name__ == '__main__':
  sys.exit(cli.guarded(main))
