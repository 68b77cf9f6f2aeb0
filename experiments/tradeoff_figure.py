r"""Dev score against training seconds, every method of a task family one point: the trade-off a user chooses from.

Usage: python -m experiments.tradeoff_figure [--families mlc,pos,ner,horses,cora]

From the committed run records only (each holds its dev score at the selected epoch and its training seconds):
docs/tradeoff/<family>.png and .md (the points as a table; its text experiments/pages/tradeoff.md, which says what the
seconds measure), pages of the table builder (``python -m experiments.tables`` rebuilds them with every other page,
and tests/test_tables.py holds them to their records). A point is a system's mean over seeds (Cora: draws), its bars
the sample standard deviations (ddof 1); runs recorded on a GPU, whose seconds measure another machine, are drawn
hollow and named "(GPU)".
"""

import argparse
import functools
import re
import sys

import numpy as np

from implicit_jax.engine import cli, plots
import experiments
from experiments import compare_methods, records, tables

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


def key_of(family: str):
  """A family page's ``Table.key``: a record's system (``(GPU)`` added for a run recorded on a GPU, whose seconds
  measure another machine: drawn hollow, never compared with the CPU points), None for one left out."""
  _, dev_key, sources = FAMILIES[family]
  prefixes = {folder: prefix for folder, prefix in sources}

  def key(path, record):
    prefix = prefixes.get(path.parent)
    system = system_of(path.stem[len(prefix):], family) if prefix is not None else None
    if not system or dev_key not in record:
      return None
    return system + (' (GPU)' if records.device_of(record) == 'gpu' else '')
  return key


def spread(values) -> float:
  return float(np.std(values, ddof=1)) if len(values) > 1 else 0.0


def points(family: str, groups) -> dict:
  """System -> (dev scores x 100, training seconds), in the systems' order."""
  key = FAMILIES[family][1]
  return {system: (np.array([100 * r[key] for r in rs]), np.array([r['train_seconds'] for r in rs]))
          for system, rs in sorted(groups.items())}


def fields(family: str, groups) -> dict:
  rows = [f'| {system} | {len(dev)} | {dev.mean():.2f} ± {spread(dev):.2f} | {secs.mean():.0f} ± {spread(secs):.0f} |'
          for system, (dev, secs) in points(family, groups).items()]
  return {'title': FAMILIES[family][0], 'family': family, 'rows': '\n'.join(rows)}


def draw(family: str, groups) -> None:
  """docs/tradeoff/<family>.png: each system's dev score against its seconds."""
  title = FAMILIES[family][0]
  fig = plots.import_figure()(figsize=(8, 5.5))
  ax = fig.subplots()
  for system, (dev, secs) in points(family, groups).items():
    default = system.split(' ')[0] == DEFAULT_ROW.get(family, 'implicit-cd')
    color = 'tab:red' if default else ('tab:orange' if system.startswith('implicit') else 'tab:blue')
    ax.errorbar(secs.mean(), dev.mean(), xerr=spread(secs), yerr=spread(dev), fmt='o', color=color, capsize=2,
                mfc='none' if system.endswith('(GPU)') else color)
    ax.annotate(system, (secs.mean(), dev.mean()), textcoords='offset points', xytext=(4, 3), fontsize=7)
  ax.set(xscale='log', xlabel='training seconds per run (log scale; wall time, CPU unless hollow: GPU)',
         ylabel='dev score x 100',
         title=title + '\nred: implicit CD as configured; orange: other implicit rows; blue: rivals')
  ax.grid(True, alpha=0.3)
  fig.tight_layout()
  fig.savefig(DOCS / 'tradeoff' / f'{family}.png', dpi=110)


# One page a family, rebuilt with every other page by the table builder (python -m experiments.tables).
TABLES = [tables.Table(f'tradeoff-{family}', f'docs/tradeoff/{family}.md',
                       tuple(f'{folder.relative_to(experiments.ROOT)}/{prefix}*.json' for folder, prefix in sources),
                       functools.partial(fields, family), key=key_of(family), template='tradeoff.md',
                       command=f'python -m experiments.tradeoff_figure --families={family}',
                       after=functools.partial(draw, family))
          for family, (_, _, sources) in FAMILIES.items()]


def main():
  parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument('--families', default=','.join(FAMILIES), type=experiments.names(list(FAMILIES)))
  args = parser.parse_args()
  for family in args.families:
    print(tables.build(TABLES[list(FAMILIES).index(family)]))


if __name__ == '__main__':
  sys.exit(cli.guarded(main))
