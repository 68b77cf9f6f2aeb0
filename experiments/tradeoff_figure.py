r"""Dev score against training seconds, every method of a task family one point: the trade-off a user chooses from.

Usage: python -m experiments.tradeoff_figure [--families mlc,pos,ner,horses,cora]

From the committed run records only (each holds its dev score at the selected epoch and its training seconds):
docs/tradeoff/<family>.png and .md, pages of the table builder (``python -m experiments.tables`` rebuilds them with
every other page); what a point, its bars and the seconds are: experiments/pages/tradeoff.md.
"""

import functools
import re
import sys

import numpy as np

from implicit_jax.engine import cli, plots
import experiments
from experiments import compare_methods, records, tables

# family -> (title, dev key, file name prefix of its records, the folders under docs/ of their runs/)
FAMILIES = {
    'mlc': ('bibtex (dev example F1 @0.5)', 'dev_f1', 'bibtex-', ('mlc', 'baselines')),
    'pos': ('Twitter POS (dev token accuracy)', 'dev_accuracy', 'pos-', ('tagging',)),
    'ner': ('CoNLL-2003 NER (dev chunk F1, strict)', 'dev_f1', 'ner-', ('tagging',)),
    'horses': ('Weizmann horses 32x32 (dev mean IoU)', 'dev_mean_iou', '', ('horses',)),
    'cora': ('Cora citation fields, 10 labeled (dev token accuracy)', 'dev_accuracy', 'cora-', ('cora',)),
}
# The row of the committed config's implicit design, drawn red.
DEFAULT_ROW = {'mlc': 'implicit-cd-gcr'}
# MLC: the methods of docs/baselines.md (as their files name them), the committed design and the implicit term
# dropped; the main rows and the ablation's own-name rows would crowd the plot.
MLC_SYSTEMS = {s.replace(' ', '_') for s in compare_methods.ORDER} | {DEFAULT_ROW['mlc'], 'implicit-cd-none'}


def key_of(family: str):
  """A family page's ``Table.key``: a record's system, from its file name (``(GPU)`` added for a run recorded on a GPU,
  whose seconds measure another machine: drawn hollow), None for a record the figure leaves out."""
  _, dev_key, prefix, _ = FAMILIES[family]

  def key(path, record):
    name = path.stem[len(prefix):]
    if family == 'cora':  # <system>-l<size>-d<draw>: the 10-labeled draws only
      name = (match := re.fullmatch(r'(.*)-l10-d\d', name)) and match.group(1)
    else:
      name = name.rsplit('-seed', 1)[0]
    if not name or dev_key not in record or family == 'mlc' and name not in MLC_SYSTEMS:
      return None
    return name + (' (GPU)' if records.device_of(record) == 'gpu' else '')
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
         title=FAMILIES[family][0] + '\nred: implicit CD as configured; orange: other implicit rows; blue: rivals')
  ax.grid(True, alpha=0.3)
  fig.tight_layout()
  fig.savefig(experiments.ROOT / 'docs' / 'tradeoff' / f'{family}.png', dpi=110)


TABLES = [tables.Table(f'tradeoff-{family}', f'docs/tradeoff/{family}.md',
                       tuple(f'docs/{folder}/runs/{prefix}*.json' for folder in folders),
                       functools.partial(fields, family), key=key_of(family), template='tradeoff.md',
                       command=f'python -m experiments.tradeoff_figure --families={family}',
                       after=functools.partial(draw, family))
          for family, (_, _, prefix, folders) in FAMILIES.items()]


def main():
  args = experiments.parse(__doc__, {'--data_dir': None, '--seeds': None, '--table_only': None, '--families': {
      'default': ','.join(FAMILIES), 'type': experiments.names(list(FAMILIES))}}, runner_flags=False)
  for family in args.families:
    print(tables.build(TABLES[list(FAMILIES).index(family)]))


if __name__ == '__main__':
  sys.exit(cli.guarded(main))
