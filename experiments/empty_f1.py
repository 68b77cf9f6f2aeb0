r"""How much the empty-set F1 convention moves delicious's example F1.

Usage: python -m experiments.empty_f1 --data_dir=../shared/data [--seeds=0] [--out docs/empty_f1.md | -]

Trains MBCE per seed under each ``data.empty_f1`` convention (it also steers selection and threshold tuning), scores
it under both, beside every committed delicious record that carries both (the conventions: pages/empty_f1.md).
"""

import datetime
import sys

import numpy as np

from implicit_jax import tasks
from implicit_jax.engine import cli
import experiments
from experiments import ROOT, compare_sklearn, records, tables


def row(run: str, setting: float, result: dict) -> str:
  a, t = result['test_at_0.5'], result['test_at_tuned']
  return (f'| {run} | {setting:g} | {result["best_epoch"]} | {a["empty_rows"]} | '
          f'{100 * a["example_f1_empty1"]:.2f} | {100 * a["example_f1_empty0"]:.2f} | '
          f'{100 * (a["example_f1_empty1"] - a["example_f1_empty0"]):+.2f} | {result["threshold"]:.2f} | '
          f'{100 * t["example_f1_empty1"]:.2f} | {100 * t["example_f1_empty0"]:.2f} |')


def main():
  args = experiments.parse(__doc__, {'--seeds': {'default': '0', 'type': experiments.seeds}, '--table_only': None,
                                     '--out': {'default': str(ROOT / 'docs' / 'empty_f1.md')}}, runner_flags=False)
  rows = []
  for seed in args.seeds:
    for empty in (1.0, 0.0):
      config = compare_sklearn.make_config('delicious', args.data_dir, seed, empty_f1=empty)
      config.num_epochs *= 2  # as experiments/reproduce_mlc.py trains its mbce rows
      if not rows:
        gold = tasks.get_task(config).splits['test']['y'] > 0.5
      rows.append(row(f'MBCE, seed {seed}', empty, compare_sklearn.mbce(config)))
      print(rows[-1], flush=True)
  for path in sorted((ROOT / 'docs' / 'mlc' / 'runs').glob('delicious-*.json')):
    record = records.load(path)
    if 'example_f1_empty0' in record['test_at_0.5']:
      rows.append(row(f'record {path.stem}', record['config']['data'].get('empty_f1', 1.0), record))
  print(tables.page('empty_f1.md', {
      'command': records.portable('python ' + ' '.join(sys.argv)), 'date': datetime.date.today(),
      'empty': int(np.sum(~gold.any(axis=1))), 'rows': len(gold), 'table': '\n'.join(rows)},
      None if args.out == '-' else args.out))


if __name__ == '__main__':
  sys.exit(cli.guarded(main))
