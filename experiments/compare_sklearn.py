r"""MBCE with the default settings against scikit-learn's binary-relevance logistic regression, same split
(docs/sklearn_baseline.md: what each column is). Needs ``pip install -e '.[compare]'``.

Usage (the run that produced docs/sklearn_baseline.md is recorded at its top):
  python -m experiments.compare_sklearn --data_dir=../shared/data --datasets=cal500,spo_fun --seeds=0,1,2 \
      --custom=tests/fixtures/mlc/scaled.arff
  python -m experiments.compare_sklearn --table_only     # docs/sklearn_baseline.md from the records, no training

A ``--custom`` MULAN file is read with ``configs/custom.py``; ``make_scaled:ROWS:SEED`` stands for the file
``tests/fixtures/mlc/make_scaled.py`` draws with those arguments (no committed file for a larger draw). Each (dataset,
seed) writes docs/sklearn_baseline/runs/<dataset>-seed<k>.json; a record that exists is not run again.
"""

import dataclasses
import datetime
import itertools
import json
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

from implicit_jax import tasks
from implicit_jax.engine import cli, rows, train
import experiments
from experiments import mlc, records, tables

ROOT = records.ROOT
RUNS = ROOT / 'docs' / 'sklearn_baseline' / 'runs'


def custom_file(spec: str, tmpdir: str) -> str:
  """A ``--custom`` entry as a path: ``make_scaled:ROWS:SEED`` drawn into ``tmpdir``."""
  if not spec.startswith('make_scaled:'):
    return spec
  try:
    size, seed = map(int, spec.split(':')[1:])
  except ValueError:
    raise SystemExit(f'--custom entry {spec!r}: expected make_scaled:ROWS:SEED, for example make_scaled:15000:2')
  make_scaled = rows.load_module(ROOT / 'tests' / 'fixtures' / 'mlc' / 'make_scaled.py')
  return str(make_scaled.write(size, seed, Path(tmpdir) / f'scaled_{size}.arff'))


def make_config(name: str, data_dir: str, seed: int, **data):
  """MBCE on ``name`` (a dataset, or a MULAN file read with configs/custom.py) at ``seed``'s split."""
  custom = Path(name).suffix == '.arff'
  where = {'data.train_file': str(Path(name).resolve())} if custom else {'data.name': name, 'data.data_dir': data_dir}
  return experiments.row_config('configs/custom.py' if custom else f'configs/{name}.py', {
      **where, 'method': 'feedforward', 'seed': seed, 'data.split_seed': seed, 'log_every': 10 ** 9,
      **{f'data.{key}': value for key, value in data.items()}})


def br_logistic(task) -> tuple[dict, float]:
  """Binary-relevance logistic regression's scores (``Evaluator.final``) and its seconds."""
  from sklearn.linear_model import LogisticRegression  # pylint: disable=import-outside-toplevel
  from sklearn.preprocessing import StandardScaler  # pylint: disable=import-outside-toplevel
  start = time.perf_counter()
  split = task.splits
  scaler = StandardScaler().fit(split['train']['x'])
  x = {s: scaler.transform(split[s]['x']) for s in ('train', 'dev', 'test')}
  y = split['train']['y'] > 0.5
  probs = {s: np.zeros((len(x[s]), y.shape[1])) for s in ('dev', 'test')}
  for j in range(y.shape[1]):
    constant = y[:, j].all() or not y[:, j].any()  # on train: predicts that constant
    with warnings.catch_warnings():
      warnings.simplefilter('ignore')  # lbfgs convergence warnings on separable labels
      model = None if constant else LogisticRegression(C=1.0, max_iter=2000).fit(x['train'], y[:, j])
    for s in probs:
      probs[s][:, j] = float(y[0, j]) if constant else model.predict_proba(x[s])[:, 1]
  result = task.evaluator.final(probs['dev'], split['dev'], probs['test'], split['test'])
  result['dev_f1'] = task.evaluator.metrics(probs['dev'], split['dev'])['f1']
  return result, time.perf_counter() - start


def mbce(config) -> dict:
  with tempfile.TemporaryDirectory() as workdir:
    return train.train_and_evaluate(config, workdir)


def label_of(name: str) -> str:
  return Path(name).name if Path(name).suffix == '.arff' else name


def run_one(name: str, data_dir: str, seed: int) -> dict:
  """MBCE, MBCE with ``standardise='never'`` and BR-logistic on ``name``'s split of ``seed``: the record's figures."""
  config = make_config(name, data_dir, seed)
  task, result, never = tasks.get_task(config), mbce(config), None
  info = task.info
  if info['standardised']:
    try:
      never = {'test_f1': mbce(make_config(name, data_dir, seed, standardise='never'))['test_f1']}
    except ValueError as e:  # missing values need the imputation that comes with standardising
      print(f'{name}: standardise=never not possible: {e}', file=sys.stderr)
      never = {'error': str(e)}
  br, seconds = br_logistic(task)
  return {'dataset': label_of(name), 'seed': seed,
          'info': {k: info[k] for k in ('sizes', 'preprocessing', 'standardised')},
          'mbce': {k: result[k] for k in ('test_f1', 'test_f1_tuned', 'dev_f1', 'train_seconds')},
          'never': never, 'br': {**{k: br[k] for k in ('test_f1', 'test_f1_tuned', 'dev_f1')}, 'seconds': seconds},
          'command': 'python ' + ' '.join(sys.argv), 'date': datetime.datetime.now().isoformat(timespec='seconds'),
          **records.made_here()}


def row(label: str, rs: list) -> str:
  info, (mbce_runs, br_runs) = rs[0]['info'], ([r[system] for r in rs] for system in ('mbce', 'br'))
  never = [r['never']['test_f1'] for r in rs if r['never'] and 'test_f1' in r['never']]
  diff = 100 * np.array([r['mbce']['test_f1'] - r['br']['test_f1'] for r in rs])
  return (f'| {label} | {info["sizes"]["train"]}/{info["sizes"]["dev"]}/{info["sizes"]["test"]} | '
          f'{info["preprocessing"]} | {mlc.cells(mbce_runs, "test_f1", "test_f1_tuned")} | '
          f'{records.mean_std(never) if never else "–"} | {mlc.cells(br_runs, "test_f1", "test_f1_tuned")} | '
          f'{mlc.per_seed(diff)} | {mlc.cells(mbce_runs, "dev_f1")} | {mlc.cells(br_runs, "dev_f1")} |')


def fields(groups) -> dict:
  """The page's fields: the table (datasets, then custom files by training-set size) and the records' dates, seeds."""
  every = [r for rs in groups.values() for r in rs]
  dates = sorted(r['date'][:10] for r in every)
  order = lambda d: (d.endswith('.arff'), groups[d][0]['info']['sizes']['train'] if d.endswith('.arff') else 0, d)
  return {'first': dates[0], 'last': dates[-1], 'devices': ', '.join(sorted({r['device'] for r in every})),
          'seeds': sorted({r['seed'] for r in every}),
          'table': '\n'.join(row(d, sorted(groups[d], key=lambda r: r['seed'])) for d in sorted(groups, key=order))}


TABLES = [tables.Table('sklearn_baseline', 'docs/sklearn_baseline.md', ('docs/sklearn_baseline/runs/*.json',), fields,
                       key=lambda path, record: record['dataset'], template='sklearn_baseline.md',
                       command='python -m experiments.compare_sklearn --table_only')]


def main():
  args = experiments.parse(__doc__, {
      '--datasets': {'default': 'cal500,spo_fun', 'type': experiments.names(mlc.DATASETS, empty=True)},
      '--custom': {'default': '', 'help': 'comma-separated MULAN files (MEKA -C header or XML beside)'},
      '--out': {'default': str(ROOT / 'docs' / 'sklearn_baseline.md'), 'help': "'-' prints only"}}, runner_flags=False)
  if not args.table_only:
    with tempfile.TemporaryDirectory() as drawn:
      names = args.datasets + [custom_file(c, drawn) for c in args.custom.split(',') if c]
      for name, seed in itertools.product(names, args.seeds):
        out = RUNS / f'{label_of(name)}-seed{seed}.json'
        if out.exists():
          continue
        r = run_one(name, args.data_dir, seed)
        records.write_file(out, json.dumps(r, indent=2) + '\n')
        print(f'{name} seed {seed}: MBCE {r["mbce"]["test_f1"]:.4f} @0.5 ({r["mbce"]["test_f1_tuned"]:.4f} tuned); '
              f'never {(r["never"] or {}).get("test_f1", float("nan")):.4f}; BR-logistic {r["br"]["test_f1"]:.4f} '
              f'@0.5 ({r["br"]["test_f1_tuned"]:.4f} tuned, {r["br"]["seconds"]:.0f}s)', flush=True)
  out = None if args.out == '-' else Path(args.out)  # '-': the page printed, nothing written
  print(tables.build(dataclasses.replace(TABLES[0], page=str(out or ROOT / TABLES[0].page)), write=out is not None))


if __name__ == '__main__':
  sys.exit(cli.guarded(main))
