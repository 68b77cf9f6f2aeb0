r"""Supplement section 3.1: the learned energy's label-interaction Hessian against the labels' co-occurrence.

Usage:
  python -m experiments.energy_analysis --workdir=/tmp/implicit_jax/bibtex
      [--out=docs/energy_analysis/bibtex_hessian_vs_cooccurrence.png] [--split=train] [--at=gold|predicted]
      [--data_dir=DIR] [--batch_size=128] [--save_matrices]

Loads the run's best-on-dev parameters (``checkpoints.load_trained``) and averages, over the split's examples, the
Hessian of the energy wrt y taken at each example's gold labels and at its relaxed predictions A_theta(x). It
compares the *score* Hessian -d^2E/dy^2 (lower energy = better, so co-occurring labels should show positive score
interactions; see ``implicit_jax/tasks/mlc/analysis.py``) with the labels' phi-coefficient co-occurrence, diagonals
removed.

Writes, next to --out (the figure, for the Hessian at --at; default the task's name under docs/energy_analysis/):
<stem>.json and <stem>.md with the correlations for both Hessians and three co-occurrence normalisations, the
command and the date; <stem>_training_curves.png when the run finished (has metrics.json); <stem>.npz with the
matrices under --save_matrices. Prints the correlations.
"""

import argparse
import datetime
import os
import shlex
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]

from implicit_jax.engine import cli  # pylint: disable=wrong-import-position
from implicit_jax.engine import config as config_lib, plots  # pylint: disable=wrong-import-position
from experiments import records  # pylint: disable=wrong-import-position
from implicit_jax.tasks.mlc import analysis  # pylint: disable=wrong-import-position

COOCCURRENCE = ('correlation', 'npmi', 'frequency')   # the first is the figure's and the headline number's


def fail(message: str):
  """A one-line error instead of a traceback: these are user errors (wrong workdir, wrong kind of run)."""
  sys.exit(f'energy_analysis: {message}')


def load_run(workdir: str, data_dir: str | None):
  try:
    from implicit_jax.engine import checkpoints  # pylint: disable=import-outside-toplevel
    return checkpoints.load_trained(workdir, {'data.data_dir': data_dir} if data_dir else None)
  except (FileNotFoundError, ValueError, KeyError, ImportError, AttributeError) as e:
    fail(f'cannot load a trained run from {workdir}: {type(e).__name__}: {e}')


def correlations_table(results: dict) -> list[str]:
  lines = ['| Hessian of -E taken at | co-occurrence | Pearson r | Spearman rho | pairs |', '|---|---|---|---|---|']
  for at, by_norm in results.items():
    for norm, c in by_norm.items():
      lines.append(f'| {at} | {norm} | {c["pearson"]:+.3f} (p={c["pearson_p"]:.1e}) | '
                   f'{c["spearman"]:+.3f} (p={c["spearman_p"]:.1e}) | {c["n"]} |')
  return lines


SPLITS = ('train', 'dev', 'test')  # every task's (implicit_jax.engine.data.SPLITS)


def main():
  parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument('--workdir', required=True, help='training workdir of a run with an energy (method implicit)')
  parser.add_argument('--out', default=None, help='figure path (png); default '
                      'docs/energy_analysis/<task>_hessian_vs_cooccurrence.png')
  parser.add_argument('--split', default='train', choices=SPLITS, help='split whose examples and labels are used')
  parser.add_argument('--at', default='gold', choices=('gold', 'predicted'),
                      help='Hessian drawn in the figure: at the gold labels or at the relaxed predictions')
  parser.add_argument('--data_dir', default=None, help='override the run config\'s data.data_dir')
  parser.add_argument('--batch_size', type=int, default=128, help='examples per Hessian batch (memory ~ B L^2)')
  parser.add_argument('--save_matrices', action='store_true', help='also write <stem>.npz with the matrices')
  args = parser.parse_args()

  if not os.path.isdir(args.workdir):
    fail(f'workdir {args.workdir} does not exist')
  run = load_run(args.workdir, args.data_dir)
  method = run.config.get('method', '?')
  if 'energy' not in (run.modules or {}) or 'phi' not in run.params:
    fail(f'the run in {args.workdir} (method {method!r}) has no energy network to analyse; '
         f'use a run trained with method \'implicit\'')
  if args.split not in run.task.splits:
    fail(f'--split={args.split!r}: the task has splits {sorted(run.task.splits)}')
  x, y = (np.asarray(run.task.splits[args.split][k]) for k in ('x', 'y'))
  out = Path(args.out or ROOT / 'docs' / 'energy_analysis' / f'{run.task.name}_hessian_vs_cooccurrence.png')
  stem = out.with_suffix('')

  energy_apply, phi = run.modules['energy'].apply, run.params['phi']
  points = {'gold': y, 'predicted': np.asarray(run.predict(x), np.float32)}
  scores = {at: -analysis.energy_hessian_y(energy_apply, phi, x, y_at, args.batch_size)   # score = -E
            for at, y_at in points.items()}
  coocs = {norm: analysis.label_cooccurrence(y, norm) for norm in COOCCURRENCE}
  results = {at: {norm: analysis.offdiagonal_correlation(scores[at], c) for norm, c in coocs.items()}
             for at in scores}

  loss = run.config.get('implicit', {}).get('primary_loss', '') if method == 'implicit' else ''
  system = f'{method}{"-" + loss if loss else ""}'
  command = 'python ' + ' '.join(shlex.quote(a) for a in sys.argv)
  record = {
      'command': command, 'date': datetime.datetime.now().isoformat(timespec='seconds'),
      'workdir': os.path.abspath(args.workdir), 'task': run.task.name, 'system': system,
      'split': args.split, 'num_examples': int(x.shape[0]), 'num_labels': int(y.shape[1]),
      'figure': str(out), 'figure_hessian_at': args.at,
      'sign': 'score Hessian -d2E/dy_i dy_j (lower energy = better); positive = labels reinforce each other',
      'cooccurrence': 'correlation = phi coefficient of the 0/1 label columns (figure); npmi; frequency = P(i, j)',
      'diagonal': 'excluded from the correlations (each symmetric pair counted once) and blanked in the figure',
      'correlations': results,
      'run_config': config_lib.recorded(run.config),
      'run_test': {k: run.metrics[k] for k in ('test_f1', 'test_f1_tuned', 'best_epoch')} if run.metrics else None,
      'run_test_f1': (run.metrics or {}).get('test_f1'), 'run_test_f1_tuned': (run.metrics or {}).get('test_f1_tuned'),
  }
  out.parent.mkdir(parents=True, exist_ok=True)
  analysis_json = stem.with_suffix('.json')
  from implicit_jax.engine import checkpoints  # pylint: disable=import-outside-toplevel
  checkpoints.write_json(str(analysis_json), record)
  lines = [f'# Learned energy vs label co-occurrence: {run.task.name}, {system}', '',
           f'Produced by `{records.portable(command, workdir="WORKDIR")}` on {record["date"]} from the run in '
           f'WORKDIR, a trained run\'s workdir ({args.split} split, '
           f'{x.shape[0]} examples, {y.shape[1]} labels). Off-diagonal correlation between the mean score Hessian '
           '-d^2E/dy_i dy_j (lower energy = better, so positive = the labels reinforce each other) and the label '
           'co-occurrence; diagonals removed, each label pair counted once.', '',
           *(['The run: ' + (f'test example-F1 {run.metrics["test_f1"]:.4f} at 0.5, {run.metrics["test_f1_tuned"]:.4f} '
                             f'at the dev-tuned threshold, best dev epoch {run.metrics["best_epoch"]}; its config is '
                             f'`run_config` in the JSON beside this file.' if run.metrics else 'unfinished (no metrics.json).'),
              '']),
           *correlations_table(results), '', f'Figure (Hessian at {args.at}, phi-coefficient co-occurrence, labels by '
           f'decreasing frequency): `{out.name}`.']
  records.write_page(stem.with_suffix('.md'), '\n'.join(lines) + '\n')
  if args.save_matrices:
    np.savez_compressed(stem.with_suffix('.npz'), **{f'score_hessian_{at}': s for at, s in scores.items()},
                        **{f'cooccurrence_{n}': c for n, c in coocs.items()}, label_frequency=y.mean(0))
  print('\n'.join(correlations_table(results)))

  order = np.argsort(-y.mean(0), kind='stable')
  try:
    analysis.plot_hessian_vs_cooccurrence(
        scores[args.at], coocs['correlation'], str(out), order=order,
        title=f'{run.task.name}, {system}: learned energy vs label co-occurrence ({args.split} split)',
        hessian_label=f'mean score Hessian -d2E/dy_i dy_j at {args.at} y', cooc_label='label correlation (phi)')
    print(f'wrote {out}, {analysis_json}, {stem.with_suffix(".md")}')
    if run.metrics and (run.metrics.get('history') or run.metrics.get('train_log')):
      curves = f'{stem}_training_curves.png'
      plots.plot_training_curves(run.metrics, curves, title=f'{run.task.name}, {system}', skip=('dev_threshold',))
      print(f'wrote {curves}')
    else:
      print('no metrics.json (the run did not finish): training curves skipped')
  except ImportError as e:
    fail(f'{e} (the correlations are in {analysis_json})')


if __name__ == '__main__':
  sys.exit(cli.guarded(main))
