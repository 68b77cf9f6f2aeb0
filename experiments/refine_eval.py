r"""Remark 3 of the paper: refine ``A_theta(x)`` by gradient descent on the learned energy, scored on a trained run.

Usage: python -m experiments.refine_eval --workdir=DIR [--data_dir=PATH] [--out=docs/refine/NAME.md]

Loads the run's best-on-dev parameters (``checkpoints.load_trained``) and scores prediction with
``implicit.refine.steps`` in {5, 20} and every ``implicit.refine.rule`` and ``.step_size`` of the grid, beside
``refine.steps = 0`` (the paper's prediction): dev F1 @0.5, dev F1 at the threshold tuned on dev, and the same on
test; on a task without a calibration (tagging) the dev and test selection metric, for mirror descent on the
per-token simplex (``GRID_UNCALIBRATED``). A choice may use the dev columns only; test is listed so the record is
complete. Nothing is trained.
"""

import argparse
import datetime
import itertools
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

from implicit_jax.engine import cli  # pylint: disable=wrong-import-position
from implicit_jax import methods  # pylint: disable=wrong-import-position
from implicit_jax.engine import checkpoints, config as config_lib  # pylint: disable=wrong-import-position
from implicit_jax.engine import data, train  # pylint: disable=wrong-import-position
from experiments import records  # pylint: disable=wrong-import-position
from implicit_jax.tasks import Evaluator  # pylint: disable=wrong-import-position

GRID = {'rule': ('projected', 'mirror'), 'steps': (5, 20), 'step_size': (0.01, 0.03, 0.1, 0.3, 1.0)}
# Tasks without a calibration (tagging: argmax per token) score one metric; mirror descent is GBI on the simplex.
GRID_UNCALIBRATED = {'rule': ('mirror',), 'steps': (5, 20), 'step_size': (0.1, 0.3, 1.0, 3.0)}


def predictions(run, config):
  """Dev and test predictions of the method ``config`` builds, with the run's parameters, as the training loop
  makes them (padded batches on the data mesh)."""
  method = methods.build(run.task, config)
  _, replicated, sharded = train.data_parallel(config)
  predict = train.make_predict(method, replicated, sharded)
  return tuple(data.predict(run.task, lambda b: predict(run.params, b), run.task.splits[s], config.eval_batch_size,
                            sharded) for s in ('dev', 'test'))


def scores(run, config):
  """``(dev @0.5, dev tuned, threshold, test @0.5, test tuned)`` of the method ``config`` builds."""
  (p_dev, p_test), dev, test = predictions(run, config), run.task.splits['dev'], run.task.splits['test']
  final = run.task.evaluator.final(p_dev, dev, p_test, test)
  return (run.task.evaluator.metrics(p_dev, dev)['f1'], final['dev_f1_tuned'], final['threshold'],
          final['test_f1'], final['test_f1_tuned'])


def uncalibrated_scores(run, config):
  """``(dev, test)`` of the task's selection metric (tagging: token accuracy or chunk F1)."""
  key = run.task.evaluator.select
  return tuple(run.task.evaluator.metrics(p, run.task.splits[s])[key]
               for p, s in zip(predictions(run, config), ('dev', 'test')))


def grid_rows(run, grid: dict, score) -> list[tuple]:
  """``(rule, steps, step size, *score(run, config))`` for A_theta(x) itself and every refinement of ``grid``."""
  rows = []
  for rule, steps, eta in [(None, 0, None)] + list(itertools.product(*grid.values())):
    config = config_lib.load(config_lib.recorded(run.config))
    config.implicit.refine.steps = steps
    if steps:
      config.implicit.refine.rule, config.implicit.refine.step_size = rule, eta
    rows.append((rule or '– (A_theta(x))', steps, eta if eta is not None else '–', *score(run, config)))
    print(*rows[-1], flush=True)
  return rows


def uncalibrated_table(run, args) -> str:
  key = run.task.evaluator.select
  rows = grid_rows(run, GRID_UNCALIBRATED, uncalibrated_scores)
  best = max(range(len(rows)), key=lambda i: rows[i][3])
  lines = [f'# Refining A_theta(x) by GBI on the learned energy: {run.task.name}', '',
           f'Made by `{made_by()}` on {datetime.date.today()} from the run in WORKDIR, a finished run\'s workdir '
           f'({of_config(run.config)}method implicit, loss {run.config.implicit.primary_loss}, solver '
           f'{run.config.implicit.solver.name}, seed {run.config.seed}, model.energy_dropout {run.config.model.get("energy_dropout", 0.0)}). '
           f'{key} x 100 of the argmax per token. **Bold**: the best dev row; a choice reads dev only.', '',
           f'| rule | steps | step size | dev {key} | test {key} |', '|---|---|---|---|---|']
  for i, (rule, steps, eta, dev, test) in enumerate(rows):
    shown = f'**{100 * dev:.2f}**' if i == best else f'{100 * dev:.2f}'
    lines.append(f'| {rule} | {steps} | {eta} | {shown} | {100 * test:.2f} |')
  return '\n'.join(lines) + '\n'


def main():
  parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument('--workdir', required=True, help='a finished run of method=implicit')
  parser.add_argument('--data_dir', default=None, help="override the run's data.data_dir")
  parser.add_argument('--out', default=None, help='markdown file (default docs/refine/<dataset>.md; - prints only)')
  args = parser.parse_args()
  try:
    run = checkpoints.load_trained(args.workdir, {'data.data_dir': args.data_dir} if args.data_dir else None)
  except (ValueError, FileNotFoundError) as e:
    parser.error(f'--workdir: {e}')
  if run.config.method != 'implicit':
    parser.error(f'--workdir: {args.workdir} holds a {run.config.method!r} run; refinement is for method=implicit')
  if type(run.task.evaluator).calibrate is Evaluator.calibrate:  # no threshold: one metric per split
    text = uncalibrated_table(run, args)
    print(text)
    write(text, args.out or str(ROOT / 'docs' / 'refine' / f'{run.task.name}.md'))
    return
  rows = grid_rows(run, GRID, scores)
  best_half = max(range(len(rows)), key=lambda i: rows[i][3])
  best_tuned = max(range(len(rows)), key=lambda i: rows[i][4])
  lines = [f'# Refining A_theta(x) by GBI on the learned energy: {run.task.name}', '',
           f'Made by `{made_by()}` on {datetime.date.today()} from the run in WORKDIR, a finished run\'s workdir '
           f'({of_config(run.config)}method implicit, loss {run.config.implicit.primary_loss}, solver '
           f'{run.config.implicit.solver.name}, seed {run.config.seed}). Example F1 x 100; "tuned": the threshold '
           'chosen on dev for that row. '
           '**Bold**: the best dev @0.5 and the best dev tuned row.', '',
           '| rule | steps | step size | dev @0.5 | dev tuned | threshold | test @0.5 | test tuned |',
           '|---|---|---|---|---|---|---|---|']
  for i, (rule, steps, eta, d5, dt, t, t5, tt) in enumerate(rows):
    mark = lambda v, on: f'**{100 * v:.2f}**' if on else f'{100 * v:.2f}'
    lines.append(f'| {rule} | {steps} | {eta} | {mark(d5, i == best_half)} | {mark(dt, i == best_tuned)} | '
                 f'{t:.2f} | {100 * t5:.2f} | {100 * tt:.2f} |')
  text = '\n'.join(lines) + '\n'
  print(text)
  write(text, args.out or str(ROOT / 'docs' / 'refine' / f'{run.task.name}.md'))


def made_by() -> str:
  """This command as the page shows it: its --workdir (the run it scores) as WORKDIR, no path of this machine."""
  return records.portable('python ' + ' '.join(sys.argv), workdir='WORKDIR')


def of_config(config) -> str:
  """'row `configs/...`, ' when the run names the config (and row) it was made from, else ''."""
  return f'row `{config.config_file}`, ' if config.get('config_file') else ''


def write(text: str, out: str) -> None:
  if out != '-':
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    records.write_page(out, text)


if __name__ == '__main__':
  sys.exit(cli.guarded(main))
