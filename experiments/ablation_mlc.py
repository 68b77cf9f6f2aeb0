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
  proximal   the inner problem L_aux + mu/2 ||theta - theta_t||^2 (implicit.proximal; mu: the bibtex-proximal sweep),
             10 Nesterov steps at 1 / lambda_max, CG on H + mu I: theta_T is (nearly) the stationary point
  proximal-none  the same with the implicit term dropped
  mbce       the cross-entropy baseline on the same inference network (reference, not an ablation)

Runs are reproduce_mlc's (records in docs/mlc/runs/, reused when present); their diagnostics: docs/mlc_ablation.md.
"""

import sys

import numpy as np

from implicit_jax.engine import cli
import experiments
from experiments import mlc, records, reproduce_mlc, tables

ROWS = ('mbce', 'none', 'identity', 'normal_cg', 'minres', 'unrolled', 'best', 'best-none', 'proximal',
        'proximal-none')
# (row, reference) pairs whose paired differences are listed under the table
PAIRS = [(r, ref) for r in ('normal_cg', 'minres', 'unrolled', 'identity') for ref in ('none', 'mbce')] + \
    [('none', 'mbce'), ('best', 'best-none'), ('best', 'mbce'), ('best-none', 'mbce'),
     ('proximal', 'proximal-none'), ('proximal', 'mbce'), ('proximal-none', 'mbce')]
TWINS = {'best': 'best-none', 'proximal': 'proximal-none'}  # a row's no-term twin, where it is not `none`
# The table's datasets and widths, whatever --datasets and --widths trained.
DATASETS, WIDTHS = ('bibtex', 'delicious'), (150, 400)


def system(row: str, width: int) -> str:
  """The reproduce_mlc system of an ablation row."""
  name = {'mbce': 'mbce', 'normal_cg': 'implicit-cd', 'best': 'implicit-cd-T20',
          'best-none': 'implicit-cd-none-T20', 'proximal': 'implicit-cd-T10-prox',
          'proximal-none': 'implicit-cd-none-T10-prox'}.get(row, f'implicit-cd-{row}')
  return name + ('-h400' if width == 400 else '')


# a record's file name without its seed -> its row of the table, (dataset, width, row)
STEMS = {f'{d}-{system(row, w)}': (d, w, row) for d in DATASETS for w in WIDTHS for row in ROWS}


def row_of(path, record):
  """A record's row, where its file names a row's system and its config is that system (else None)."""
  key = STEMS.get(tables.stem(path, record))
  return key if key and mlc.system_of(record) == system(key[2], key[1]) else None


def verdict(diffs) -> str:
  """Words for paired differences: a sign shared by every seed, or none."""
  if len(diffs) < 2:
    return 'one seed'
  shared = {(1,): 'higher', (-1,): 'lower'}.get(tuple(set(np.sign(diffs))))
  return f'{shared} on every seed' if shared else 'mixed signs across seeds'


def table_row(dataset, width, row, runs) -> str:
  """``row``'s line of the table (``runs``: every row's records on ``dataset`` at ``width``)."""
  rs, name = runs[row], system(row, width)
  if not rs:
    return f'| {dataset} | {width} | {row} | 0 | not run | | | | | | | | | | | `{mlc.config_name(dataset, name)}` |'
  value = lambda r, metric: r.get('train_summary', {}).get(metric, {}).get('median')
  med = lambda metric: records.mean_std([v for v in (value(r, metric) for r in rs) if v is not None], 1, 3)
  ratio = [value(r, 'implicit_norm') / value(r, 'explicit_norm') for r in rs
           if value(r, 'implicit_norm') is not None and value(r, 'explicit_norm')]

  def diff(ref):
    seeds, d = mlc.paired(rs, runs[ref])
    return '–' if row == ref or not seeds else mlc.per_seed(d)
  return (f'| {dataset} | {width} | {row} | {len(rs)} | {mlc.cells(rs, "dev_f1", "test_f1", "test_f1_tuned")} | '
          f'{diff(TWINS.get(row, "none")) if row not in ("mbce", "best-none", "proximal-none") else "–"} | '
          f'{diff("mbce")} | {med("stationarity")} | {med("cosine")} | {records.mean_std(ratio, 1, 3)} | '
          f'{med("residual") if row != "mbce" else "–"} | {np.mean([r["train_seconds"] for r in rs]):.0f} | '
          f'{", ".join(sorted({records.device_of(r) for r in rs}))} | {mlc.recipe(dataset, name, "official", rs)} |')


def fields(groups) -> dict:
  """docs/mlc_ablation.md's fields: the table (every row, run or not) and the paired differences of ``PAIRS``."""
  lines, claims = [], []
  for dataset in DATASETS:
    for width in WIDTHS:
      runs = {row: groups.get((dataset, width, row), []) for row in ROWS}
      lines += [table_row(dataset, width, row, runs) for row in ROWS]
      for row, ref in PAIRS:
        (seeds, d), (_, dev) = (mlc.paired(runs[row], runs[ref], key) for key in ('test_f1', 'dev_f1'))
        if seeds:
          claims.append(f'- {dataset}, width {width}: {row} minus {ref}, seeds {seeds}: test @0.5 '
                        f'{mlc.per_seed(d, "per seed ", f"; {verdict(d)}")}; dev @0.5 {np.mean(dev):+.2f} '
                        f'({verdict(dev)})')
  return {'table': '\n'.join(lines), 'paired': '\n'.join(claims)}


def blocks(groups, fields) -> dict:  # pylint: disable=unused-argument
  """The paired differences, copied into docs/results.md's results:ablation block."""
  return {('docs/results.md', 'ablation'): '\n'.join([
      '', 'Paired test F1 differences x 100 (same seeds and splits; written by `experiments/ablation_mlc.py`, table '
      'in [mlc_ablation.md](mlc_ablation.md)):', '', fields['paired']])}


TABLES = [tables.Table('ablation', 'docs/mlc_ablation.md', ('docs/mlc/runs/*.json',), fields, key=row_of,
                       blocks=blocks, command='python -m experiments.ablation_mlc --table_only')]


def main():
  args = experiments.parse(__doc__, {'--datasets': mlc.FLAGS['--datasets'],
                                     '--widths': {'default': '150,400', 'type': experiments.names(('150', '400'))},
                                     '--rows': {'default': ','.join(ROWS), 'type': experiments.names(ROWS)}})
  if not args.table_only:  # reproduce_mlc's runs: the same rows, records and files
    args.protocol, args.epochs = 'official', 0
    experiments.run([reproduce_mlc.run_of(dataset, system(row, int(width)), seed, args) for dataset in args.datasets
                     for width in args.widths for row in args.rows for seed in args.seeds], args, seconds=True)
  print(tables.build(TABLES[0]))


if __name__ == '__main__':
  sys.exit(cli.guarded(main))
