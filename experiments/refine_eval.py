r"""Remark 3 of the paper: refine ``A_theta(x)`` by gradient descent on the learned energy, scored on a trained run.

Usage: python -m experiments.refine_eval --workdir=DIR [--data_dir=PATH] [--out=docs/refine/NAME.md]

At the run's best-on-dev parameters, scores prediction with every ``implicit.refine`` setting of ``GRID`` beside
``refine.steps = 0`` (the paper's prediction), on dev and test; on a task without a calibration (tagging), by mirror
descent on the per-token simplex. A choice may use the dev columns only. Nothing is trained.
"""

import datetime
import itertools
import sys
from pathlib import Path

from implicit_jax import methods
from implicit_jax.engine import cli, config as config_lib, data, train
from implicit_jax.tasks import Evaluator
from experiments import ROOT, records
from experiments.energy_analysis import config_row, made_by, parse_run

GRID = {'rule': ('projected', 'mirror'), 'steps': (5, 20), 'step_size': (0.01, 0.03, 0.1, 0.3, 1.0)}
GRID_UNCALIBRATED = {'rule': ('mirror',), 'steps': (5, 20), 'step_size': (0.1, 0.3, 1.0, 3.0)}


def row(run, rule, steps: int, eta, calibrated: bool) -> tuple:
  """``(rule, steps, step size, *scores)``, A_theta(x) refined by ``steps`` of ``rule`` at ``eta``, predicting as
  training does: dev @0.5, dev tuned, threshold, test @0.5, test tuned; uncalibrated, dev and test of the metric."""
  config = config_lib.load(config_lib.recorded(run.config))
  config.implicit.refine.steps = steps
  if steps:
    config.implicit.refine.rule, config.implicit.refine.step_size = rule, eta
  _, replicated, sharded = train.data_parallel(config)
  predict = train.make_predict(methods.build(run.task, config), replicated, sharded)
  dev, test, evaluator = run.task.splits['dev'], run.task.splits['test'], run.task.evaluator
  p_dev, p_test = (data.predict(run.task, lambda b: predict(run.params, b), split, config.eval_batch_size, sharded)
                   for split in (dev, test))
  if calibrated:
    final = evaluator.final(p_dev, dev, p_test, test)
    values = (evaluator.metrics(p_dev, dev)['f1'], final['dev_f1_tuned'], final['threshold'], final['test_f1'],
              final['test_f1_tuned'])
  else:
    values = evaluator.metrics(p_dev, dev)[evaluator.select], evaluator.metrics(p_test, test)[evaluator.select]
  out = (rule or '– (A_theta(x))', steps, eta if eta is not None else '–', *values)
  print(*out, flush=True)
  return out


def table(rows: list[tuple], columns: list[str], bold=(3,), threshold=None) -> list[str]:
  """``rows`` as a table, scores x 100 (``threshold`` as it is), the first best row of each ``bold`` column in bold."""
  best = {j: max(range(len(rows)), key=lambda i: rows[i][j]) for j in bold}
  lines = ['| rule | steps | step size | ' + ' | '.join(columns) + ' |', '|---' * (3 + len(columns)) + '|']
  for i, (rule, steps, eta, *values) in enumerate(rows):
    cells = [f'{v:.2f}' if j == threshold else f'{100 * v:.2f}' for j, v in enumerate(values, 3)]
    cells = [f'**{c}**' if best.get(j) == i else c for j, c in enumerate(cells, 3)]
    lines.append(f'| {rule} | {steps} | {eta} | ' + ' | '.join(cells) + ' |')
  return lines


def main():
  args, run = parse_run(__doc__, 'a finished run of method=implicit', {
      '--out': {'help': 'markdown file (default docs/refine/<dataset>.md; - prints only)'}})
  config = run.config
  calibrated = type(run.task.evaluator).calibrate is not Evaluator.calibrate  # else one metric per split
  grid = GRID if calibrated else GRID_UNCALIBRATED
  rows = [row(run, *setting, calibrated) for setting in [(None, 0, None), *itertools.product(*grid.values())]]
  about = (f'{config_row(config, after=", ")}method implicit, loss {config.implicit.primary_loss}, solver '
           f'{config.implicit.solver.name}, seed {config.seed}')
  if calibrated:
    about += ('). Example F1 x 100; "tuned": the threshold chosen on dev for that row. **Bold**: the best dev @0.5 '
              'and the best dev tuned row.')
    lines = table(rows, ['dev @0.5', 'dev tuned', 'threshold', 'test @0.5', 'test tuned'], (3, 4), threshold=5)
  else:
    key = run.task.evaluator.select
    about += (f', model.energy_dropout {config.model.get("energy_dropout", 0.0)}). {key} x 100 of the argmax per '
              'token. **Bold**: the best dev row; a choice reads dev only.')
    lines = table(rows, [f'dev {key}', f'test {key}'])
  text = '\n'.join([f'# Refining A_theta(x) by GBI on the learned energy: {run.task.name}', '',
                    f'Made by `{made_by()}` on {datetime.date.today()} from the run in WORKDIR, a finished run\'s '
                    f'workdir ({about}', '', *lines]) + '\n'
  print(text)
  out = Path(args.out or ROOT / 'docs' / 'refine' / f'{run.task.name}.md')
  if args.out != '-':
    out.parent.mkdir(parents=True, exist_ok=True)
    records.write_page(out, text)


if __name__ == '__main__':
  sys.exit(cli.guarded(main))
