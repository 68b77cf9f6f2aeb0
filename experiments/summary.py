"""The README's summary table: for each task, the best implicit row against the best rival, from the records.

Each family's tables write its rows (``update``). The best row of each side is the one with the highest mean dev
score among the rows run on at least ``MIN_RUNS`` seeds: choosing on test would flatter both sides.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

import experiments
from experiments import records

MIN_RUNS = 3
# family -> its name in the table's first column, in table order
FAMILIES = {'mlc': 'multi-label', 'tagging': 'sequence labeling', 'cora': 'citation fields', 'horses': 'segmentation'}
START, END = '<!-- results:summary -->', '<!-- /results:summary -->'
CAPTION = experiments.TEXT['summary']['caption'].format(min_runs=MIN_RUNS)
HEADER = ['| family | task | implicit (best on dev) | test | rival (best on dev) | test | published |',
          '|---|---|---|---|---|---|---|']


def best(groups: dict, dev_key: str, min_runs: int = MIN_RUNS):
  """The row of ``groups`` with the highest mean ``dev_key`` among those with ``min_runs`` records, or None."""
  eligible = {k: np.mean([r[dev_key] for r in rs]) for k, rs in groups.items() if len(rs) >= min_runs}
  return max(eligible, key=eligible.get) if eligible else None


def sides(groups: dict, dev_key: str) -> tuple:
  """``(implicit, rival)``: the ``best`` of the implicit rows of ``groups`` and of the others."""
  implicit = {k: rs for k, rs in groups.items() if k.startswith('implicit')}
  return best(implicit, dev_key), best({k: rs for k, rs in groups.items() if k not in implicit}, dev_key)


def score(runs, test_key: str, extra: str = '') -> str:
  """``mean ± std (N)`` x 100 of ``test_key``; ``extra`` (NER's conlleval F1) leads instead where every run's record
  holds it, else ``test_key`` leads, marked "strict", with ``extra`` over the runs that hold it."""
  n = len(runs)
  strict = records.mean_std([r[test_key] for r in runs])
  if not extra or not runs:
    return f'{strict} ({n})'
  have = [r[extra] for r in runs if extra in r]
  if len(have) == n:
    return f'{records.mean_std(have)} ({n}) (strict {strict})'
  if not have:
    return f'strict {strict} ({n}) (conlleval not recorded)'
  return f'strict {strict} ({n}) (conlleval {records.mean_std(have)}, {len(have)} of {n} seeds)'


def row(family: str, task: str, implicit: tuple, rival: tuple, test_key: str, published: str,
        extra: str = '') -> str:
  """One table row; ``implicit`` and ``rival``: ``(config name or records.recipe's cell, [records])``."""
  cells = [FAMILIES[family], task]
  for config, runs in (implicit, rival):
    cells += [config if '`' in config else f'`{config}`', score(runs, test_key, extra)] if runs else ['–', '–']
  return '| ' + ' | '.join(cells + [published]) + ' |'


def update(readme: Path, family: str, rows: list[str]) -> None:
  """Replaces ``family``'s rows in README.md's summary block (if any), the others kept, in ``FAMILIES`` order."""
  text = readme.read_text(encoding='utf-8')
  if START not in text:
    return
  block = text.split(START, 1)[1].split(END, 1)[0]
  family_of = {title: f for f, title in FAMILIES.items()}
  kept = {f: [] for f in FAMILIES}
  for line in block.splitlines():
    name = family_of.get(line.strip().strip('|').split('|')[0].strip()) if line.startswith('| ') else None
    if name and name != family:
      kept[name].append(line)
  kept[family] = list(rows)
  body = [CAPTION, '', *HEADER, *[line for f in FAMILIES for line in kept[f]]]
  records.write_block(readme, 'summary', '\n'.join(body))
