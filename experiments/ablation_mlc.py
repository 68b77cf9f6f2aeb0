r"""What the implicit term adds: implicit CD with every setting equal but the route of the outer gradient.

Usage (the commands that made the runs are listed in docs/mlc_ablation.commands.txt):
  python -m experiments.ablation_mlc --data_dir=../shared/data --datasets=bibtex --widths=150 --seeds=0,1,2
  python -m experiments.ablation_mlc --table_only

Rows, on configs/<dataset>.py (official split, CD loss, T_inner = 5 Adam steps), at both widths (150: the
configs'; 400: SEAL's two 400-unit layers), same seeds, same splits:

  none       the implicit term dropped: dL_prim/dphi at theta_T only (``implicit.solver.name=none``)
  identity   H^-1 ~ alpha I (the zero-term Neumann series)
  normal_cg  the committed configs' solver (CG on H^2, 5 iterations, 11 HVPs)
  minres     MINRES on H + delta I (5 iterations)
  unrolled   backprop through the 5 inner steps: the truncated procedure's true derivative
  best       the best design found on dev (docs/sweeps/bibtex-stationarity.md): T_inner = 20, normal_cg
  best-none  the same with the implicit term dropped: what the term adds to the best design
  proximal   the proximal inner problem L_aux + mu/2 ||theta - theta_t||^2 (implicit.proximal; mu chosen on dev,
             docs/sweeps/bibtex-proximal.md) solved by 10 Nesterov steps at 1 / lambda_max, CG on H + mu I: the
             design in which theta_T is (nearly) the stationary point the implicit term differentiates
  proximal-none  the same with the implicit term dropped
  mbce       the cross-entropy baseline on the same inference network (reference, not an ablation)

Runs are experiments/reproduce_mlc.py's (one record per run in docs/mlc/runs/, reused when present; normal_cg, minres
and mbce at width 150 and normal_cg and mbce at 400 are the main table's runs). Each record made since the
diagnostics existed carries a ``train_summary`` (median over the logged steps of inner stationarity
||grad L_aux(theta_T)|| / ||grad L_aux(theta_0)||, the cosine between the implicit and explicit terms, their
norms and the undamped solver residual); older records show "–" there. Choices are made on dev: the table shows
the dev F1 of the selected epoch beside test.
"""

import argparse
import datetime
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
from implicit_jax.engine import cli  # pylint: disable=wrong-import-position
import experiments  # pylint: disable=wrong-import-position
from experiments import records  # pylint: disable=wrong-import-position
from experiments import mlc  # pylint: disable=wrong-import-position

ROWS = ('mbce', 'none', 'identity', 'normal_cg', 'minres', 'unrolled', 'best', 'best-none', 'proximal',
        'proximal-none')
# (row, reference) pairs whose paired differences are listed under the table
PAIRS = [(r, ref) for r in ('normal_cg', 'minres', 'unrolled', 'identity') for ref in ('none', 'mbce')] + \
    [('none', 'mbce'), ('best', 'best-none'), ('best', 'mbce'), ('best-none', 'mbce'),
     ('proximal', 'proximal-none'), ('proximal', 'mbce'), ('proximal-none', 'mbce')]
OUT = ROOT / 'docs' / 'mlc_ablation.md'
TWINS = {'best': 'best-none', 'proximal': 'proximal-none'}  # a row's no-term twin, where it is not `none`


def system(row: str, width: int) -> str:
  """The reproduce_mlc system of an ablation row."""
  name = {'mbce': 'mbce', 'normal_cg': 'implicit-cd', 'best': 'implicit-cd-T20',
          'best-none': 'implicit-cd-none-T20', 'proximal': 'implicit-cd-T10-prox',
          'proximal-none': 'implicit-cd-none-T10-prox'}.get(row, f'implicit-cd-{row}')
  return name + ('-h400' if width == 400 else '')


def runs_of(dataset: str, name: str) -> list[dict]:
  paths = sorted((ROOT / 'docs' / 'mlc' / 'runs').glob(f'{dataset}-{name}-seed*.json'))
  return [r for r in map(records.load, paths) if mlc.system_of(r) == name]


def fmt(values, scale=100.0, digits=2) -> str:
  return records.mean_std(values, scale, digits)


def summary_value(run, metric):
  return run.get('train_summary', {}).get(metric, {}).get('median')


def paired(a_runs, b_runs, field='test_f1'):
  seeds, diffs = mlc.paired(a_runs, b_runs, field)
  return seeds, 100 * np.asarray(diffs)


def verdict(diffs) -> str:
  """Words for paired differences: a sign shared by every seed, or none."""
  if len(diffs) < 2:
    return 'one seed'
  if np.all(diffs > 0):
    return 'higher on every seed'
  if np.all(diffs < 0):
    return 'lower on every seed'
  return 'mixed signs across seeds'


def table(datasets, widths) -> tuple[list[str], list[str]]:
  """The markdown lines of the ablation table and of the paired differences."""
  lines = ['| dataset | width | row | seeds | dev F1 @0.5 | test F1 @0.5 | test F1 tuned | minus its no-term twin @0.5 '
           '(per seed) '
           '| minus MBCE @0.5 (per seed) | stationarity | cosine | implicit / explicit norm | residual | s/run | '
           'device | config |', '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|']
  claims = []
  for dataset in datasets:
    for width in widths:
      runs = {row: runs_of(dataset, system(row, width)) for row in ROWS}
      for row in ROWS:
        rs = runs[row]
        if not rs:
          lines.append(f'| {dataset} | {width} | {row} | 0 | not run | | | | | | | | | | | '
                       f'`{mlc.config_name(dataset, system(row, width))}` |')
          continue

        def diff(ref):
          seeds, d = paired(rs, runs[ref])
          if row == ref or not seeds:
            return '–'
          return f'{d.mean():+.2f} ({", ".join(f"{x:+.2f}" for x in d)})'

        med = lambda m: [v for v in (summary_value(r, m) for r in rs) if v is not None]
        ratio = [summary_value(r, 'implicit_norm') / summary_value(r, 'explicit_norm') for r in rs
                 if summary_value(r, 'implicit_norm') is not None and summary_value(r, 'explicit_norm')]
        device = ', '.join(sorted({mlc.device_of(r) for r in rs}))
        lines.append(
            f'| {dataset} | {width} | {row} | {len(rs)} | {fmt([r["dev_f1"] for r in rs])} | '
            f'{fmt([r["test_f1"] for r in rs])} | {fmt([r["test_f1_tuned"] for r in rs])} | '
            f'{diff(TWINS.get(row, "none")) if row not in ("mbce", "best-none", "proximal-none") else "–"} | '
            f'{diff("mbce")} | '
            f'{fmt(med("stationarity"), 1, 3)} | {fmt(med("cosine"), 1, 3)} | {fmt(ratio, 1, 3)} | '
            f'{fmt(med("residual"), 1, 3) if row not in ("mbce",) else "–"} | '
            f'{np.mean([r["train_seconds"] for r in rs]):.0f} | {device} | '
            f'{mlc.recipe(dataset, system(row, width), "official", rs, ROOT / "docs" / "mlc" / "runs", ROOT)} |')
      for row, ref in PAIRS:
        seeds, d = paired(runs[row], runs[ref])
        if seeds:
          _, dev = paired(runs[row], runs[ref], 'dev_f1')
          claims.append(f'- {dataset}, width {width}: {row} minus {ref}, seeds {seeds}: test @0.5 {d.mean():+.2f} '
                        f'(per seed {", ".join(f"{x:+.2f}" for x in d)}; {verdict(d)}); dev @0.5 '
                        f'{dev.mean():+.2f} ({verdict(dev)})')
  return lines, claims


def update_readme(claims: list[str]) -> None:
  """Copies the paired differences into docs/results.md's results:ablation block."""
  records.write_block(ROOT / 'docs' / 'results.md', 'ablation', '\n'.join([
      '', 'Paired test F1 differences x 100 (same seeds and splits; written by `experiments/ablation_mlc.py`, table in '
      '[mlc_ablation.md](mlc_ablation.md)):', '', *claims]), required=False)


def main():
  parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument('--data_dir', default=str(ROOT.parent / 'shared' / 'data'))
  parser.add_argument('--datasets', default='bibtex,delicious', type=experiments.names(mlc.DATASETS))
  parser.add_argument('--widths', default='150,400', type=experiments.names(('150', '400')))
  parser.add_argument('--rows', default=','.join(ROWS), type=experiments.names(ROWS))
  parser.add_argument('--seeds', default='0,1,2', type=experiments.seeds)
  parser.add_argument('--table_only', action='store_true')
  args = parser.parse_args()
  datasets, widths = args.datasets, [int(w) for w in args.widths]
  if not args.table_only:
    # Training goes through reproduce_mlc's runs (same rows, records and files)
    from experiments import reproduce_mlc  # pylint: disable=import-outside-toplevel
    run_args = argparse.Namespace(protocol='official', verify=False, epochs=0, data_dir=args.data_dir)
    reproduce_mlc.run([reproduce_mlc.run_of(dataset, system(row, width), seed, run_args) for dataset in datasets
                       for width in widths for row in args.rows for seed in args.seeds], run_args)
  lines, claims = table(['bibtex', 'delicious'], [150, 400])
  all_runs = [r for d in ('bibtex', 'delicious') for w in (150, 400) for row in ROWS for r in runs_of(d, system(row, w))]
  commands = records.write_commands(OUT, (r['command'] for r in all_runs))
  text = '\n'.join([
      '# Multi-label: what the implicit term adds (ablation)',
      '',
      f'Table rebuilt by `python -m experiments.ablation_mlc --table_only` on {datetime.date.today()} from the runs made '
      f'by {commands}.',
      '',
      'Implicit CD on the official split, every setting of `configs/<dataset>.py` equal except the route of the '
      'outer gradient (rows: see the script\'s docstring); "width" is the inference network\'s hidden units. '
      f'Example F1 x 100, {records.spread()}, empty gold and empty prediction scoring 1 (`data.empty_f1`); '
      'dev F1 is that of the epoch selected on dev @0.5, test is evaluated once at that epoch. "minus its no-term '
      'twin" / "minus MBCE": paired over the seeds both rows have; the no-term twin of every row is `none`, except '
      'for `best` and `proximal`, whose twins are `best-none` and `proximal-none`. Diagnostics (medians over the '
      'logged steps of each run, mean over seeds): stationarity = ||grad L_aux(theta_T)|| / '
      '||grad L_aux(theta_0)|| after the inner steps (5; 20 for the `best` rows; 10 for the `proximal` rows, of '
      'the proximal objective) '
      '(0 = the stationary point the implicit function theorem assumes); cosine between the implicit and '
      'explicit terms of dL_prim/dphi; residual ||H u - v|| / ||v|| on the undamped H (1 for `none`, 0 for '
      '`unrolled`, which solves nothing); "–" where the record predates these diagnostics. Devices: `cpu` is the '
      '2-core x86_64 machine, `gpu` one H100; s/run compares within a device only. "config": the row, seed K of '
      'which `python -m implicit_jax.main --config=CONFIG --config.seed=K --config.data.split_seed=K '
      '--workdir=DIR` reproduces. ' + records.RECIPE_NOTE,
      '',
      *lines,
      '',
      '## Paired differences (test F1 @0.5 x 100)',
      '',
      *claims,
      ''])
  records.write_page(OUT, text)
  update_readme(claims)
  print(text)


if __name__ == '__main__':
  sys.exit(cli.guarded(main))
