r"""MBCE with the default settings against scikit-learn's binary-relevance logistic regression, same split.

Usage (the run that produced docs/sklearn_baseline.md is recorded at its top):
  python scripts/compare_sklearn.py --data_dir=../shared/data --datasets=cal500,spo_fun --seeds=0,1,2 \
      --custom=tests/fixtures/mlc/scaled.arff

For each dense-feature dataset (and each ``--custom`` MULAN file, read with ``configs/custom.py``, a user's
starting point; ``make_scaled:ROWS:SEED`` stands for the file ``tests/fixtures/mlc/make_scaled.py`` draws with
those arguments, written to a temporary directory, so that a larger draw needs no committed file):

* MBCE: ``configs/<name>.py`` with ``method=feedforward`` and every data setting at its default (so
  ``data.standardise='auto'``), trained by ``train_and_evaluate``; one run per seed.
* MBCE with ``data.standardise='never'``: the features as read, what the project did before ``auto`` (not for
  files with missing values, which need imputing).
* BR-logistic: one ``sklearn.linear_model.LogisticRegression`` (lbfgs, C = 1) per label on the task's own train
  split, with ``StandardScaler`` fitted on it first (a no-op on features ``auto`` has standardised). A label
  constant on train predicts that constant. Deterministic: one run.

All are scored by the project's evaluator on the same test split (example F1 at 0.5 and at the threshold tuned on
dev; the empty-set convention of ``data.empty_f1``, 1 by default). Needs ``pip install -e '.[compare]'``.
"""

import argparse
import datetime
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
from implicit_jax.experiments import records  # pylint: disable=wrong-import-position
from implicit_jax import tasks  # pylint: disable=wrong-import-position
from implicit_jax.engine import config as config_lib  # pylint: disable=wrong-import-position
from implicit_jax.engine import train  # pylint: disable=wrong-import-position


def custom_file(spec: str, tmpdir: str) -> str:
  """A ``--custom`` entry as a path: ``make_scaled:ROWS:SEED`` is drawn into ``tmpdir`` as scaled_ROWS.arff."""
  if not spec.startswith('make_scaled:'):
    return spec
  try:
    _, rows, seed = spec.split(':')
    rows, seed = int(rows), int(seed)
  except ValueError:
    raise SystemExit(f'--custom entry {spec!r}: expected make_scaled:ROWS:SEED, for example make_scaled:15000:2')
  # The fixtures' generator (tests/fixtures/mlc/make_scaled.py), loaded by path as a config file is.
  import importlib.util  # pylint: disable=import-outside-toplevel
  spec = importlib.util.spec_from_file_location('make_scaled', ROOT / 'tests' / 'fixtures' / 'mlc' / 'make_scaled.py')
  make_scaled = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(make_scaled)
  return str(make_scaled.write(rows, seed, Path(tmpdir) / f'scaled_{rows}.arff'))


def make_config(name: str, data_dir: str, seed: int, **data):
  if Path(name).suffix == '.arff':
    config = config_lib.from_file(str(ROOT / 'configs' / 'custom.py'))
    config.data.train_file = str(Path(name).resolve())
  else:
    config = config_lib.from_file(str(ROOT / 'configs' / f'{name}.py'))
    config.data.name = name
    config.data.data_dir = data_dir
  config.method = 'feedforward'
  config.seed = config.data.split_seed = seed
  config.log_every = 10 ** 9
  config.data.update(data)
  return config


def br_logistic(task) -> tuple[dict, float]:
  """Test scores of binary-relevance logistic regression on the task's splits, and its seconds."""
  from sklearn.linear_model import LogisticRegression  # pylint: disable=import-outside-toplevel
  from sklearn.preprocessing import StandardScaler  # pylint: disable=import-outside-toplevel
  start = time.perf_counter()
  split = task.splits
  scaler = StandardScaler().fit(split['train']['x'])
  x = {s: scaler.transform(split[s]['x']) for s in ('train', 'dev', 'test')}
  y = split['train']['y'] > 0.5
  probs = {s: np.zeros((len(x[s]), y.shape[1])) for s in ('dev', 'test')}
  for j in range(y.shape[1]):
    if y[:, j].all() or not y[:, j].any():
      for s in probs:
        probs[s][:, j] = float(y[0, j])
      continue
    with warnings.catch_warnings():
      warnings.simplefilter('ignore')  # lbfgs convergence warnings on separable labels
      model = LogisticRegression(C=1.0, max_iter=2000).fit(x['train'], y[:, j])
    for s in probs:
      probs[s][:, j] = model.predict_proba(x[s])[:, 1]
  result = task.evaluator.final(probs['dev'], split['dev'], probs['test'], split['test'])
  result['dev_f1'] = task.evaluator.metrics(probs['dev'], split['dev'])['f1']
  return result, time.perf_counter() - start


def mbce(config) -> dict:
  with tempfile.TemporaryDirectory() as workdir:
    return train.train_and_evaluate(config, workdir)


def stat(values) -> str:
  return records.mean_std(values)


def main():
  parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument('--data_dir', default='../shared/data')
  parser.add_argument('--datasets', default='cal500,spo_fun')
  parser.add_argument('--custom', default='', help='comma-separated MULAN files (MEKA -C header or XML beside)')
  parser.add_argument('--seeds', default='0,1,2')
  parser.add_argument('--out', default=str(ROOT / 'docs' / 'sklearn_baseline.md'), help="'-' prints only")
  args = parser.parse_args()
  seeds = [int(s) for s in args.seeds.split(',')]
  drawn = tempfile.TemporaryDirectory()  # pylint: disable=consider-using-with
  names = [n for n in args.datasets.split(',') if n] + [custom_file(c, drawn.name) for c in args.custom.split(',') if c]
  rows = []
  for name in names:
    cells = {'mbce': [], 'mbce_tuned': [], 'mbce_dev': [], 'never': [], 'br': [], 'br_tuned': [], 'br_dev': []}
    info = None
    for seed in seeds:
      config = make_config(name, args.data_dir, seed)
      task = tasks.get_task(config)
      info = task.info
      result = mbce(config)
      cells['mbce'].append(result['test_f1'])
      cells['mbce_tuned'].append(result['test_f1_tuned'])
      cells['mbce_dev'].append(result['dev_f1'])
      if info['standardised']:
        try:
          cells['never'].append(mbce(make_config(name, args.data_dir, seed, standardise='never'))['test_f1'])
        except ValueError as e:  # missing values need the imputation that comes with standardising
          print(f'{name}: standardise=never not possible: {e}', file=sys.stderr)
      br, seconds = br_logistic(task)
      cells['br'].append(br['test_f1'])
      cells['br_tuned'].append(br['test_f1_tuned'])
      cells['br_dev'].append(br['dev_f1'])
      print(f'{name} seed {seed}: MBCE {result["test_f1"]:.4f} @0.5 ({result["test_f1_tuned"]:.4f} tuned); '
            f'never {cells["never"][-1] if cells["never"] else float("nan"):.4f}; BR-logistic {br["test_f1"]:.4f} '
            f'@0.5 ({br["test_f1_tuned"]:.4f} tuned, {seconds:.0f}s)', flush=True)
    diff = 100 * (np.array(cells['mbce']) - np.array(cells['br']))
    label = Path(name).name if Path(name).suffix == '.arff' else name
    rows.append(f'| {label} | {info["sizes"]["train"]}/{info["sizes"]["dev"]}/{info["sizes"]["test"]} | '
                f'{info["preprocessing"]} | {stat(cells["mbce"])} | {stat(cells["mbce_tuned"])} | '
                f'{stat(cells["never"]) if cells["never"] else "–"} | {stat(cells["br"])} | {stat(cells["br_tuned"])} | '
                f'{diff.mean():+.2f} ({", ".join(f"{d:+.2f}" for d in diff)}) | {stat(cells["mbce_dev"])} | '
                f'{stat(cells["br_dev"])} |')
  command = 'python ' + ' '.join(sys.argv)
  text = '\n'.join([
      '# MBCE (default settings) against scikit-learn binary-relevance logistic regression',
      '',
      f'Made by `{command}` on {datetime.date.today().isoformat()} (CPU). Seeds {seeds}: seed k sets the model '
      'seed and the split seed (datasets without an official split are split 60/20/20 by it), so both systems see '
      f'the same rows. Example F1 x 100 on test, {records.spread()}, empty gold and empty prediction scoring 1 '
      '(`data.empty_f1`). "MBCE": `configs/<dataset>.py` (custom files: `configs/custom.py`) with `method=feedforward`, every data setting at its default (`data.standardise=auto`). '
      '"MBCE never": the same with `data.standardise=never`, the features as read, as before `auto` existed. '
      '"BR-logistic": one scikit-learn `LogisticRegression` (C = 1) per label after `StandardScaler` on the same '
      'train split (`scripts/compare_sklearn.py`). "MBCE - BR": at 0.5, per seed. Dev columns: example F1 @0.5 on '
      'dev, MBCE\'s at the epoch it selected there (so biased upwards by that selection; BR-logistic selects '
      'nothing on dev). scaled*.arff are draws of one generator (tests/fixtures/mlc/make_scaled.py: 5 features on '
      'scales 1e-2 to 1e2, 3 labels, each the noise-free sign of a linear function of the standardised features) at '
      '150, 1500 and, with `make_scaled:15000:2`, 15000 rows: BR-logistic is the well-specified model there, and '
      'the three sizes show how MBCE\'s gap to it moves with the training set.',
      '',
      '| dataset | train/dev/test | preprocessing (auto) | MBCE @0.5 | MBCE tuned | MBCE never @0.5 | BR-logistic @0.5 '
      '| BR-logistic tuned | MBCE - BR @0.5 (per seed) | MBCE dev @0.5 | BR-logistic dev @0.5 |',
      '|---|---|---|---|---|---|---|---|---|---|---|',
      *rows, ''])
  print(text)
  if args.out != '-':
    Path(args.out).write_text(text)


if __name__ == '__main__':
  main()
