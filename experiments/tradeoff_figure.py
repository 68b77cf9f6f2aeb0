r"""Dev score against training seconds, every method of a task family one point: the trade-off a user chooses from.

Usage: python -m experiments.tradeoff_figure [--families mlc,pos,ner,horses,cora]

Reads the committed run records only (experiments/records.py: each holds its dev score at the selected
epoch and the run's training seconds) and writes docs/tradeoff/<family>.png and docs/tradeoff/<family>.md (the points as a table).
A point is the mean over the seeds (or Cora's draws) of a system; its bars are the sample standard deviations
(ddof 1) of both coordinates. Runs recorded on a GPU are drawn hollow and named "(GPU)": their seconds measure another
machine. Seconds are wall time on the shared 2-core machine the project runs on, so a row run beside another job is slower
than its step cost says: benchmarks/implicit_cost.py measures the steps side by side.
"""

import argparse
import datetime
import json
import sys
from pathlib import Path

import numpy as np

from implicit_jax.engine import cli
import experiments
from experiments import records

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / 'docs'
# family -> (title, dev key, [(folder, glob prefix to strip)], system name -> shown label; None: every system)
FAMILIES = {
    'mlc': ('bibtex (dev example F1 @0.5)', 'dev_f1', [(DOCS / 'mlc' / 'runs', 'bibtex-'),
                                                          (DOCS / 'baselines' / 'runs', 'bibtex-')]),
    'pos': ('Twitter POS (dev token accuracy)', 'dev_accuracy', [(DOCS / 'tagging' / 'runs', 'pos-')]),
    'ner': ('CoNLL-2003 NER (dev chunk F1, strict)', 'dev_f1', [(DOCS / 'tagging' / 'runs', 'ner-')]),
    'horses': ('Weizmann horses 32x32 (dev mean IoU)', 'dev_mean_iou', [(DOCS / 'horses' / 'runs', '')]),
    'cora': ('Cora citation fields, 10 labeled (dev token accuracy)', 'dev_accuracy',
             [(DOCS / 'cora' / 'runs', 'cora-')]),
}
# The row of the committed config's implicit design, drawn red.
DEFAULT_ROW = {'mlc': 'implicit-cd-gcr'}
# MLC: the main rows and the ablation's own-name rows would crowd the plot; these are the methods.
MLC_SYSTEMS = ('mbce', 'implicit-cd', 'implicit-cd-gcr', 'implicit-ssvm', 'implicit-dvn', 'implicit-nce',
               'implicit-cd-none', 'spen', 'dvn', 'nce-gbi', 'infnet', 'infnet+_separated', 'infnet+_shared',
               'infnet+_stacked', 'seal-static_margin', 'seal-static_regression', 'seal-static_nce',
               'seal-dynamic_margin', 'seal-dynamic_regression', 'seal-dynamic_regression-s', 'seal-dynamic_nce')


def system_of(stem: str, prefix: str, family: str) -> str | None:
  if not stem.startswith(prefix):
    return None
  name = stem[len(prefix):]
  if family == 'cora':  # cora-<system>-l<size>-d<draw>
    if not name.endswith(tuple(f'-l10-d{d}' for d in range(10))):
      return None
    return name.rsplit('-l10-d', 1)[0]
  name = name.rsplit('-seed', 1)[0]
  if family == 'mlc' and name not in MLC_SYSTEMS:
    return None
  return name


def points(family: str) -> dict:
  _, key, sources = FAMILIES[family]
  runs = {}
  for folder, prefix in sources:
    for path in sorted(folder.glob('*.json')):
      system = system_of(path.stem, prefix, family)
      if system is None:
        continue
      record = json.loads(path.read_text())
      if key not in record:
        continue
      if records.device_of(record) == 'gpu':
        system += ' (GPU)'  # seconds of another machine: drawn hollow, never compared with the CPU points
      runs.setdefault(system, []).append((100 * record[key], record['train_seconds']))
  return runs


def spread(values) -> float:
  return float(np.std(values, ddof=1)) if len(values) > 1 else 0.0


def draw(family: str, runs: dict, out: Path) -> str:
  import matplotlib  # pylint: disable=import-outside-toplevel
  matplotlib.use('Agg')
  import matplotlib.pyplot as plt  # pylint: disable=import-outside-toplevel
  title = FAMILIES[family][0]
  fig, ax = plt.subplots(figsize=(8, 5.5))
  rows = []
  for system, values in sorted(runs.items()):
    dev, secs = np.array([v[0] for v in values]), np.array([v[1] for v in values])
    implicit = system.startswith('implicit')
    default = system.split(' ')[0] == DEFAULT_ROW.get(family, 'implicit-cd')
    color = 'tab:red' if default else ('tab:orange' if implicit else 'tab:blue')
    ax.errorbar(secs.mean(), dev.mean(), xerr=spread(secs), yerr=spread(dev), fmt='o', color=color, capsize=2,
                mfc='none' if system.endswith('(GPU)') else color)
    ax.annotate(system, (secs.mean(), dev.mean()), textcoords='offset points', xytext=(4, 3), fontsize=7)
    rows.append(f'| {system} | {len(values)} | {dev.mean():.2f} ± {spread(dev):.2f} | '
                f'{secs.mean():.0f} ± {spread(secs):.0f} |')
  ax.set_xscale('log')
  ax.set_xlabel('training seconds per run (log scale; wall time, CPU unless hollow: GPU)')
  ax.set_ylabel('dev score x 100')
  ax.set_title(title + '\nred: implicit CD as configured; orange: other implicit rows; blue: rivals')
  ax.grid(True, alpha=0.3)
  fig.tight_layout()
  fig.savefig(out.with_suffix('.png'), dpi=110)
  plt.close(fig)
  table = '\n'.join(['| system | runs | dev (mean ± sample std, ddof 1) | train s (mean ± sample std) |',
                     '|---|---|---|---|', *rows])
  text = (f'# Trade-off: {title}\n\nRebuilt by `python -m experiments.tradeoff_figure --families={family}` on '
          f'{datetime.date.today()} from the committed run records. Each point: mean over seeds (Cora: draws) with '
          'sample standard deviations. Seconds are each run\'s wall time as recorded: runs made beside other jobs '
          'on the 2-core machine (the rows rerun on 2026-11-26 and 2026-11-27 shared it with up to six other '
          'training processes: docs/tagging.md, docs/cora.md) are slower than their step cost says, and GPU runs '
          '(hollow) measure another machine; docs/benchmarks.md times the steps side '
          f'by side.\n\n![{family}]({out.with_suffix(".png").name})\n\n{table}\n')
  records.write_page(out.with_suffix('.md'), text)
  return text


def main():
  parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument('--families', default=','.join(FAMILIES), type=experiments.names(list(FAMILIES)))
  args = parser.parse_args()
  folder = DOCS / 'tradeoff'
  folder.mkdir(parents=True, exist_ok=True)
  for family in args.families:
    runs = points(family)
    if not runs:
      print(f'{family}: no records')
      continue
    print(draw(family, runs, folder / family))


if __name__ == '__main__':
  sys.exit(cli.guarded(main))
