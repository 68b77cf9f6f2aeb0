r"""Dev score against training seconds, every method of a task family one point: the trade-off a user chooses from.

Usage: python -m experiments.tradeoff_figure [--families mlc,pos,ner,horses,cora]

From the committed run records only (each holds its dev score at the selected epoch and its training seconds):
docs/tradeoff/<family>.png and .md (the points as a table; its text experiments/pages/tradeoff.md, which says what
the seconds measure). A point is a system's mean over seeds (Cora: draws), its bars the sample standard deviations
(ddof 1); runs recorded on a GPU, whose seconds measure another machine, are drawn hollow and named "(GPU)".
"""

import argparse
import datetime
import re
import sys

import numpy as np

from implicit_jax.engine import cli, plots
import experiments
from experiments import compare_methods, energy_analysis, records

DOCS = experiments.ROOT / 'docs'
# family -> (title, dev key, [(folder, file name prefix of its records)])
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
# MLC: the methods of docs/baselines.md (as their files name them), the committed design and the implicit term
# dropped; the main rows and the ablation's own-name rows would crowd the plot.
MLC_SYSTEMS = {s.replace(' ', '_') for s in compare_methods.ORDER} | {DEFAULT_ROW['mlc'], 'implicit-cd-none'}


def system_of(name: str, family: str) -> str | None:
  """The system of a record (its file name after the family's prefix), None for a record the figure leaves out."""
  if family == 'cora':  # <system>-l<size>-d<draw>: the 10-labeled draws only
    match = re.fullmatch(r'(.*)-l10-d\d', name)
    return match and match.group(1)
  name = name.rsplit('-seed', 1)[0]
  return None if family == 'mlc' and name not in MLC_SYSTEMS else name


def points(family: str) -> dict:
  """System -> [(dev score x 100, training seconds)]."""
  _, key, sources = FAMILIES[family]
  runs = {}
  for folder, prefix in sources:
    for path in sorted(folder.glob(f'{prefix}*.json')):
      system = system_of(path.stem[len(prefix):], family)
      record = records.load(path) if system else {}
      if key not in record:
        continue
      if records.device_of(record) == 'gpu':
        system += ' (GPU)'  # seconds of another machine: drawn hollow, never compared with the CPU points
      runs.setdefault(system, []).append((100 * record[key], record['train_seconds']))
  return runs


def spread(values) -> float:
  return float(np.std(values, ddof=1)) if len(values) > 1 else 0.0


def draw(family: str, runs: dict, out) -> str:
  title = FAMILIES[family][0]
  fig = plots.import_figure()(figsize=(8, 5.5))
  ax = fig.subplots()
  rows = []
  for system, values in sorted(runs.items()):
    dev, secs = np.array(values).T
    default = system.split(' ')[0] == DEFAULT_ROW.get(family, 'implicit-cd')
    color = 'tab:red' if default else ('tab:orange' if system.startswith('implicit') else 'tab:blue')
    ax.errorbar(secs.mean(), dev.mean(), xerr=spread(secs), yerr=spread(dev), fmt='o', color=color, capsize=2,
                mfc='none' if system.endswith('(GPU)') else color)
    ax.annotate(system, (secs.mean(), dev.mean()), textcoords='offset points', xytext=(4, 3), fontsize=7)
    rows.append(f'| {system} | {len(values)} | {dev.mean():.2f} ± {spread(dev):.2f} | '
                f'{secs.mean():.0f} ± {spread(secs):.0f} |')
  ax.set(xscale='log', xlabel='training seconds per run (log scale; wall time, CPU unless hollow: GPU)',
         ylabel='dev score x 100',
         title=title + '\nred: implicit CD as configured; orange: other implicit rows; blue: rivals')
  ax.grid(True, alpha=0.3)
  fig.tight_layout()
  fig.savefig(out.with_suffix('.png'), dpi=110)
  return energy_analysis.page('tradeoff.md', {'title': title, 'family': family, 'date': datetime.date.today(),
                                              'rows': '\n'.join(rows)}, out.with_suffix('.md'))


def main():
  parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument('--families', default=','.join(FAMILIES), type=experiments.names(list(FAMILIES)))
  args = parser.parse_args()
  (DOCS / 'tradeoff').mkdir(parents=True, exist_ok=True)
  for family in args.families:
    runs = points(family)
    print(draw(family, runs, DOCS / 'tradeoff' / family) if runs else f'{family}: no records')


if __name__ == '__main__':
  sys.exit(cli.guarded(main))
