r"""MBCE with the default settings against scikit-learn's binary-relevance logistic regression, same split.

Usage (the run that produced docs/sklearn_baseline.md is recorded at its top):
  python -m experiments.compare_sklearn --data_dir=../shared/data --datasets=cal500,spo_fun --seeds=0,1,2 \
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

Each (dataset, seed) writes its figures to docs/sklearn_baseline/runs/<dataset>-seed<k>.json (with the command, date
and machine); a record that exists is not run again, and the table is rebuilt from the records:

  python -m experiments.compare_sklearn --table_only     # docs/sklearn_baseline.md from the records, no training
"""

import argparse
import datetime
import json
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
RUNS = ROOT / 'docs' / 'sklearn_baseline' / 'runs'
from implicit_jax.engine import cli  # pylint: disable=wrong-import-position
import experiments  # pylint: disable=wrong-import-position
from experiments import mlc, records  # pylint: disable=wrong-import-position
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


def label_of(name: str) -> str:
  """A row's name: the dataset's, or a custom file's base name."""
  return Path(name).name if Path(name).suffix == '.arff' else name


def run_one(name: str, data_dir: str, seed: int) -> dict:
  """MBCE, MBCE with ``standardise='never'`` and BR-logistic on ``name``'s split of ``seed``: the record's figures."""
  config = make_config(name, data_dir, seed)
  task = tasks.get_task(config)
  info = task.info
  result = mbce(config)
  never = None
  if info['standardised']:
    try:
      never = {'test_f1': mbce(make_config(name, data_dir, seed, standardise='never'))['test_f1']}
    except ValueError as e:  # missing values need the imputation that comes with standardising
      print(f'{name}: standardise=never not possible: {e}', file=sys.stderr)
      never = {'error': str(e)}
  br, seconds = br_logistic(task)
  import jax  # pylint: disable=import-outside-toplevel
  return {'dataset': label_of(name), 'seed': seed,
          'info': {k: info[k] for k in ('sizes', 'preprocessing', 'standardised')},
          'mbce': {k: result[k] for k in ('test_f1', 'test_f1_tuned', 'dev_f1', 'train_seconds')},
          'never': never,
          'br': {'test_f1': br['test_f1'], 'test_f1_tuned': br['test_f1_tuned'], 'dev_f1': br['dev_f1'],
                 'seconds': seconds},
          'command': 'python ' + ' '.join(sys.argv), 'date': datetime.datetime.now().isoformat(timespec='seconds'),
          'device': f'{jax.default_backend()}: {jax.devices()[0].device_kind}', 'machine': records.machine()}


def load_runs() -> dict:
  """``{dataset: [record, ...]}`` (seeds in order), datasets first, then custom files by training-set size."""
  runs = {}
  for path in sorted(RUNS.glob('*.json')):
    record = json.loads(path.read_text())
    runs.setdefault(record['dataset'], []).append(record)
  order = lambda d: (d.endswith('.arff'), runs[d][0]['info']['sizes']['train'] if d.endswith('.arff') else 0, d)
  return {d: sorted(runs[d], key=lambda r: r['seed']) for d in sorted(runs, key=order)}


def row(label: str, rs: list) -> str:
  """One table row from a dataset's records."""
  info = rs[0]['info']
  cells = {k: [r[system][field] for r in rs] for k, (system, field) in {
      'mbce': ('mbce', 'test_f1'), 'mbce_tuned': ('mbce', 'test_f1_tuned'), 'mbce_dev': ('mbce', 'dev_f1'),
      'br': ('br', 'test_f1'), 'br_tuned': ('br', 'test_f1_tuned'), 'br_dev': ('br', 'dev_f1')}.items()}
  never = [r['never']['test_f1'] for r in rs if r['never'] and 'test_f1' in r['never']]
  diff = 100 * (np.array(cells['mbce']) - np.array(cells['br']))
  return (f'| {label} | {info["sizes"]["train"]}/{info["sizes"]["dev"]}/{info["sizes"]["test"]} | '
          f'{info["preprocessing"]} | {stat(cells["mbce"])} | {stat(cells["mbce_tuned"])} | '
          f'{stat(never) if never else "–"} | {stat(cells["br"])} | {stat(cells["br_tuned"])} | '
          f'{diff.mean():+.2f} ({", ".join(f"{d:+.2f}" for d in diff)}) | {stat(cells["mbce_dev"])} | '
          f'{stat(cells["br_dev"])} |')


def build_table(runs: dict, page: Path = ROOT / 'docs' / 'sklearn_baseline.md', write: bool = True) -> str:
  """The page's text; its command list goes beside ``page`` (not when ``write`` is False)."""
  every = [r for rs in runs.values() for r in rs]
  seeds = sorted({r['seed'] for r in every})
  commands = records.write_commands(page, (r['command'] for r in every), write=write)
  dates = sorted(r['date'][:10] for r in every)
  devices = ', '.join(sorted({r['device'] for r in every}))
  return '\n'.join([
      '# MBCE (default settings) against scikit-learn binary-relevance logistic regression',
      '',
      f'Made by {commands} (runs dated {dates[0]} to {dates[-1]}; devices: {devices}); table rebuilt by '
      '`python -m experiments.compare_sklearn --table_only` from the records in docs/sklearn_baseline/runs.',
      '',
      f'Seeds {seeds}: seed k sets the model seed and the split seed (datasets without an official split are split '
      '60/20/20 by it), so both systems see '
      f'the same rows. Example F1 x 100 on test, {records.spread()}, empty gold and empty prediction scoring 1 '
      '(`data.empty_f1`). "MBCE": `configs/<dataset>.py` (custom files: `configs/custom.py`) with '
      '`method=feedforward`, every data setting at its default (`data.standardise=auto`). '
      '"MBCE never": the same with `data.standardise=never`, the features as read, as before `auto` existed. '
      '"BR-logistic": one scikit-learn `LogisticRegression` (C = 1) per label after `StandardScaler` on the same '
      'train split (`experiments/compare_sklearn.py`). "MBCE - BR": at 0.5, per seed. Dev columns: example F1 @0.5 on '
      'dev, MBCE\'s at the epoch it selected there (so biased upwards by that selection; BR-logistic selects '
      'nothing on dev). scaled*.arff are draws of one generator (tests/fixtures/mlc/make_scaled.py: 5 features on '
      'scales 1e-2 to 1e2, 3 labels, each the noise-free sign of a linear function of the standardised features) at '
      '150, 1500 and, with `make_scaled:15000:2`, 15000 rows: BR-logistic is the well-specified model there, and '
      'the three sizes show how MBCE\'s gap to it moves with the training set.',
      '',
      '| dataset | train/dev/test | preprocessing (auto) | MBCE @0.5 | MBCE tuned | MBCE never @0.5 | BR-logistic @0.5 '
      '| BR-logistic tuned | MBCE - BR @0.5 (per seed) | MBCE dev @0.5 | BR-logistic dev @0.5 |',
      '|---|---|---|---|---|---|---|---|---|---|---|',
      *[row(label, rs) for label, rs in runs.items()], ''])


def main():
  parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument('--data_dir', default='../shared/data')
  parser.add_argument('--datasets', default='cal500,spo_fun', type=experiments.names(mlc.DATASETS, empty=True))
  parser.add_argument('--custom', default='', help='comma-separated MULAN files (MEKA -C header or XML beside)')
  parser.add_argument('--seeds', default='0,1,2', type=experiments.seeds)
  parser.add_argument('--out', default=str(ROOT / 'docs' / 'sklearn_baseline.md'), help="'-' prints only")
  parser.add_argument('--table_only', action='store_true', help='rebuild the table from the records, no training')
  args = parser.parse_args()
  if not args.table_only:
    seeds = args.seeds
    drawn = tempfile.TemporaryDirectory()  # pylint: disable=consider-using-with
    names = (args.datasets
             + [custom_file(c, drawn.name) for c in args.custom.split(',') if c])
    RUNS.mkdir(parents=True, exist_ok=True)
    for name in names:
      for seed in seeds:
        out = RUNS / f'{label_of(name)}-seed{seed}.json'
        if out.exists():
          continue
        r = run_one(name, args.data_dir, seed)
        tmp = out.with_suffix('.json.tmp')
        tmp.write_text(json.dumps(r, indent=2) + '\n')
        tmp.replace(out)
        print(f'{name} seed {seed}: MBCE {r["mbce"]["test_f1"]:.4f} @0.5 ({r["mbce"]["test_f1_tuned"]:.4f} tuned); '
              f'never {(r["never"] or {}).get("test_f1", float("nan")):.4f}; BR-logistic {r["br"]["test_f1"]:.4f} '
              f'@0.5 ({r["br"]["test_f1_tuned"]:.4f} tuned, {r["br"]["seconds"]:.0f}s)', flush=True)
  runs = load_runs()
  if not runs:
    raise SystemExit(f'no records under {RUNS}: run the script without --table_only first')
  out = None if args.out == '-' else Path(args.out)
  text = build_table(runs, out or ROOT / 'docs' / 'sklearn_baseline.md', write=out is not None)
  print(text)
  if out:
    records.write_page(out, text)


if __name__ == '__main__':
  sys.exit(cli.guarded(main))
