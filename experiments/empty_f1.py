r"""How much the empty-set F1 convention moves delicious's example F1.

Usage: python -m experiments.empty_f1 --data_dir=../shared/data [--seeds=0] [--out docs/empty_f1.md | -]

An example whose gold label set is empty and whose prediction is empty too scores 1 under SPEN's and InfNet's
convention (``data.empty_f1=1.0``, this project's default) and 0 under scikit-learn's ``f1_score(average=
'samples')``, which DVN's and SEAL's code use. delicious has test rows with no label. The script trains MBCE
(``configs/delicious.py``, ``method=feedforward``) per seed under each convention (selection and threshold tuning
follow the setting) and scores each run's test predictions under both; it also lists every committed delicious run
record that carries both figures (``test_at_0.5.example_f1_empty{0,1}``).
"""

import argparse
import datetime
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
from implicit_jax.engine import cli  # pylint: disable=wrong-import-position
import experiments  # pylint: disable=wrong-import-position
from experiments import records  # pylint: disable=wrong-import-position
from implicit_jax import tasks  # pylint: disable=wrong-import-position
from implicit_jax.engine import config as config_lib  # pylint: disable=wrong-import-position
from implicit_jax.engine import train  # pylint: disable=wrong-import-position


def main():
  parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument('--data_dir', default=str(ROOT.parent / 'shared' / 'data'))
  parser.add_argument('--seeds', default='0', type=experiments.seeds)
  parser.add_argument('--out', default=str(ROOT / 'docs' / 'empty_f1.md'))
  args = parser.parse_args()
  rows = []
  gold_empty = None
  for seed in args.seeds:
    for empty in (1.0, 0.0):
      config = config_lib.from_file(str(ROOT / 'configs' / 'delicious.py'))
      config.method = 'feedforward'
      config.num_epochs *= 2  # as experiments/reproduce_mlc.py trains its mbce rows
      config.seed = config.data.split_seed = seed
      config.data.data_dir = args.data_dir
      config.data.empty_f1 = empty
      config.log_every = 10 ** 9
      if gold_empty is None:
        y = tasks.get_task(config).splits['test']['y']
        gold_empty = (int(np.sum(~(y > 0.5).any(axis=1))), len(y))
      with tempfile.TemporaryDirectory() as workdir:
        r = train.train_and_evaluate(config, workdir)
      a, t = r['test_at_0.5'], r['test_at_tuned']
      rows.append(f'| MBCE, seed {seed} | {empty:g} | {r["best_epoch"]} | {a["empty_rows"]} | '
                  f'{100 * a["example_f1_empty1"]:.2f} | {100 * a["example_f1_empty0"]:.2f} | '
                  f'{100 * (a["example_f1_empty1"] - a["example_f1_empty0"]):+.2f} | {r["threshold"]:.2f} | '
                  f'{100 * t["example_f1_empty1"]:.2f} | {100 * t["example_f1_empty0"]:.2f} |')
      print(rows[-1], flush=True)
  for path in sorted((ROOT / 'docs' / 'mlc' / 'runs').glob('delicious-*.json')):
    r = records.load(path)
    a, t = r['test_at_0.5'], r['test_at_tuned']
    if 'example_f1_empty0' not in a:
      continue
    rows.append(f'| record {path.stem} | {r["config"]["data"].get("empty_f1", 1.0):g} | {r["best_epoch"]} | '
                f'{a["empty_rows"]} | {100 * a["example_f1_empty1"]:.2f} | {100 * a["example_f1_empty0"]:.2f} | '
                f'{100 * (a["example_f1_empty1"] - a["example_f1_empty0"]):+.2f} | {r["threshold"]:.2f} | '
                f'{100 * t["example_f1_empty1"]:.2f} | {100 * t["example_f1_empty0"]:.2f} |')
  text = '\n'.join([
      '# The empty-set F1 convention on delicious',
      '',
      f'Made by `{records.portable("python " + " ".join(sys.argv))}` on {datetime.date.today()} (CPU). delicious '
      f'test: {gold_empty[0]} of {gold_empty[1]} rows have no gold label. "setting": `data.empty_f1` of the run (it '
      'decides epoch selection and the tuned threshold); "both empty": test rows where gold and the prediction at '
      '0.5 are both empty, which score 1 under the default convention (SPEN, InfNet) and 0 under scikit-learn\'s '
      '(DVN and SEAL code). Example F1 x 100 on test; the tuned columns rescore the same predictions at the '
      'threshold the run chose on dev.',
      '',
      '| run | setting | best epoch | both empty @0.5 | F1 @0.5, empty = 1 | F1 @0.5, empty = 0 | difference | '
      'threshold | F1 tuned, empty = 1 | F1 tuned, empty = 0 |',
      '|---|---|---|---|---|---|---|---|---|---|',
      *rows, ''])
  print(text)
  if args.out != '-':
    records.write_page(args.out, text)


if __name__ == '__main__':
  sys.exit(cli.guarded(main))
