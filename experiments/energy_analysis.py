r"""Supplement section 3.1: the learned energy's label-interaction Hessian against the labels' co-occurrence.

Usage:
  python -m experiments.energy_analysis --workdir=/tmp/implicit_jax/bibtex
      [--out=docs/energy_analysis/bibtex_hessian_vs_cooccurrence.png] [--split=train] [--at=gold|predicted]
      [--data_dir=DIR] [--batch_size=128] [--save_matrices]

The method: experiments/pages/energy_analysis.md. Writes beside --out (the figure, of the Hessian at --at) <stem>.json
and <stem>.md with the correlations under three co-occurrence normalisations; <stem>_training_curves.png when the run
finished; <stem>.npz, the matrices, under --save_matrices. Here too: the helpers of the other analyses of a run.
"""

import argparse
import datetime
import os
import shlex
import sys
from pathlib import Path

import numpy as np

from implicit_jax.engine import checkpoints, cli, config as config_lib, data, plots
from implicit_jax.tasks.mlc import analysis
from experiments import ROOT, records, tables


def parse_run(doc: str, workdir_help: str, flags: dict, needs: str = 'implicit', argv=None):
  """The flags (--workdir, --data_dir, ``flags``: {flag: add_argument's keywords}) and --workdir's run at its
  best-on-dev parameters, on --data_dir's data, refused where it lacks what the analysis ``needs``."""
  parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument('--workdir', required=True, help=workdir_help)
  parser.add_argument('--data_dir', default=None, help='override the run config\'s data.data_dir')
  for flag, keywords in flags.items():
    parser.add_argument(flag, **keywords)
  args = parser.parse_args(argv)
  args.error = parser.error
  run = checkpoints.load_trained(args.workdir, {'data.data_dir': args.data_dir} if args.data_dir else None)
  ok, wanted = ((run.config.method == 'implicit', 'method=implicit') if needs == 'implicit' else
                ('energy' in (run.modules or {}) and 'phi' in run.params, 'an energy (method implicit, crf, spen ...)'))
  if not ok:
    args.error(f'--workdir: {args.workdir} holds a {run.config.method!r} run of task {run.config.task!r}; this '
               f'analysis needs {wanted}')
  return args, run


def made_by(argv=None) -> str:
  """This command as a page shows it: its --workdir (the run it reads) as WORKDIR, no path of this machine."""
  command = shlex.join(['python', sys.argv[0], *(sys.argv[1:] if argv is None else argv)])
  return records.portable(command, workdir='WORKDIR')


def config_row(config, before: str = '', after: str = '') -> str:
  """'row `configs/...`' between ``before`` and ``after`` where the run names the config (and row) it was made from,
  else ''."""
  return f'{before}row `{config.config_file}`{after}' if config.get('config_file') else ''


def system(config) -> str:
  """The run's method, with its primary loss for an implicit run: 'implicit-cd'."""
  return config.method + (f'-{config.implicit.primary_loss}' if config.method == 'implicit' else '')


def main():
  args, run = parse_run(__doc__, 'training workdir of a run with an energy (method implicit)', {
      '--out': {'help': 'figure path (png); default docs/energy_analysis/<task>_hessian_vs_cooccurrence.png'},
      '--split': {'default': 'train', 'choices': data.SPLITS, 'help': 'split whose examples and labels are used'},
      '--at': {'default': 'gold', 'choices': ('gold', 'predicted'),
               'help': 'Hessian drawn in the figure: at the gold labels or at the relaxed predictions'},
      '--batch_size': {'type': int, 'default': 128, 'help': 'examples per Hessian batch (memory ~ B L^2)'},
      '--save_matrices': {'action': 'store_true', 'help': 'also write <stem>.npz with the matrices'}}, needs='energy')
  metrics, name = run.metrics, system(run.config)
  x, y = (np.asarray(run.task.splits[args.split][k]) for k in ('x', 'y'))
  out = Path(args.out or ROOT / 'docs' / 'energy_analysis' / f'{run.task.name}_hessian_vs_cooccurrence.png')
  stem = out.with_suffix('')

  scores = {at: -analysis.energy_hessian_y(run.modules['energy'].apply, run.params['phi'], x, y_at, args.batch_size)
            for at, y_at in (('gold', y), ('predicted', np.asarray(run.predict(x), np.float32)))}  # score = -E
  # The first normalisation is the figure's and the headline number's.
  coocs = {norm: analysis.label_cooccurrence(y, norm) for norm in ('correlation', 'npmi', 'frequency')}
  results = {at: {norm: analysis.offdiagonal_correlation(scores[at], c) for norm, c in coocs.items()}
             for at in scores}
  table = '\n'.join(['| Hessian of -E taken at | co-occurrence | Pearson r | Spearman rho | pairs |',
                     '|---|---|---|---|---|', *(f'| {at} | {norm} | {c["pearson"]:+.3f} (p={c["pearson_p"]:.1e}) | '
                                                f'{c["spearman"]:+.3f} (p={c["spearman_p"]:.1e}) | {c["n"]} |'
                                                for at in results for norm, c in results[at].items())])
  record = {
      'command': 'python ' + shlex.join(sys.argv), 'date': datetime.datetime.now().isoformat(timespec='seconds'),
      'workdir': os.path.abspath(args.workdir), 'task': run.task.name, 'system': name, 'split': args.split,
      'num_examples': int(x.shape[0]), 'num_labels': int(y.shape[1]), 'figure': str(out), 'figure_hessian_at': args.at,
      'sign': 'score Hessian -d2E/dy_i dy_j (lower energy = better); positive = labels reinforce each other',
      'cooccurrence': 'correlation = phi coefficient of the 0/1 label columns (figure); npmi; frequency = P(i, j)',
      'diagonal': 'excluded from the correlations (each symmetric pair counted once) and blanked in the figure',
      'correlations': results, 'run_config': config_lib.recorded(run.config),
      'run_test': {k: metrics[k] for k in ('test_f1', 'test_f1_tuned', 'best_epoch')} if metrics else None,
      'run_test_f1': (metrics or {}).get('test_f1'), 'run_test_f1_tuned': (metrics or {}).get('test_f1_tuned'),
  }
  out.parent.mkdir(parents=True, exist_ok=True)
  checkpoints.write_json(str(stem.with_suffix('.json')), record)
  about_run = (f'test example-F1 {metrics["test_f1"]:.4f} at 0.5, {metrics["test_f1_tuned"]:.4f} at the dev-tuned '
               f'threshold, best dev epoch {metrics["best_epoch"]}; its config is `run_config` in the JSON beside this '
               'file.' if metrics else 'unfinished (no metrics.json).')
  tables.page('energy_analysis.md', {
      'task': run.task.name, 'system': name, 'command': made_by(), 'date': record['date'], 'split': args.split,
      'examples': x.shape[0], 'labels': y.shape[1], 'run': about_run, 'table': table,
      'at': args.at, 'figure': out.name}, stem.with_suffix('.md'))
  if args.save_matrices:
    np.savez_compressed(stem.with_suffix('.npz'), **{f'score_hessian_{at}': s for at, s in scores.items()},
                        **{f'cooccurrence_{n}': c for n, c in coocs.items()}, label_frequency=y.mean(0))
  print(table)

  try:
    analysis.plot_hessian_vs_cooccurrence(
        scores[args.at], coocs['correlation'], str(out), order=np.argsort(-y.mean(0), kind='stable'),
        title=f'{run.task.name}, {name}: learned energy vs label co-occurrence ({args.split} split)',
        hessian_label=f'mean score Hessian -d2E/dy_i dy_j at {args.at} y', cooc_label='label correlation (phi)')
    print(f'wrote {out}, {stem.with_suffix(".json")}, {stem.with_suffix(".md")}')
    if metrics and (metrics.get('history') or metrics.get('train_log')):
      plots.plot_training_curves(metrics, f'{stem}_training_curves.png', title=f'{run.task.name}, {name}',
                                 skip=('dev_threshold',))
      print(f'wrote {stem}_training_curves.png')
    else:
      print('no metrics.json (the run did not finish): training curves skipped')
  except ImportError as e:  # no matplotlib
    sys.exit(f'energy_analysis: {e} (the correlations are in {stem.with_suffix(".json")})')


if __name__ == '__main__':
  sys.exit(cli.guarded(main))
