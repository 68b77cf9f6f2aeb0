"""The README's summary table: for each task, the best implicit row against the best rival, from the records.

Each reproduce script, when it rebuilds its tables (``--table_only`` or after training), computes its family's
rows with ``row`` and writes them into README.md's ``<!-- results:summary -->`` block with ``update``, which keeps
the other families' rows. The best row of each side is the one with the highest mean dev score (the selection
metric of the family's runs) among the rows run on at least ``MIN_RUNS`` seeds: choosing on test would flatter
both sides.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from experiments import records

MIN_RUNS = 3
# family -> its name in the table's first column, in table order
FAMILIES = {'mlc': 'multi-label', 'tagging': 'sequence labeling', 'cora': 'citation fields', 'horses': 'segmentation'}
START, END = '<!-- results:summary -->', '<!-- /results:summary -->'
CAPTION = (
    'Test scores x 100, mean ± sample standard deviation (ddof 1) over the seeds (N), from the committed run '
    'records. For each task, the implicit row and the rival (any other method of the family\'s tables) with the '
    f'best mean dev score among the rows run on at least {MIN_RUNS} seeds; each cell names the config that '
    'reproduces the row (seed K: `--config.seed=K`, see its docstring), or, where the row\'s records differ from '
    'its config today, the records, each its own recipe (`--config=RECORD`). "published": the implicit paper\'s number '
    '(Shankar & Piratla; NER\'s is conlleval F1). NER cells lead with conlleval F1, the papers\' metric, where every '
    'record of the row holds it, strict chunk F1 in parentheses; a row recorded before conlleval\'s F1 leads with '
    '"strict". Written by the reproduce scripts (`--table_only`); why each gap is what it is: '
    '[docs/results.md](docs/results.md).')
HEADER = ['| family | task | implicit (best on dev) | test | rival (best on dev) | test | published |',
          '|---|---|---|---|---|---|---|']


def best(groups: dict, dev_key: str, min_runs: int = MIN_RUNS):
  """The key of ``groups`` ({row: [records]}) with the highest mean ``dev_key`` among those with at least
  ``min_runs`` records (None when none has)."""
  eligible = {k: np.mean([r[dev_key] for r in rs]) for k, rs in groups.items() if len(rs) >= min_runs}
  return max(eligible, key=eligible.get) if eligible else None


def score(runs, test_key: str, extra: str = '') -> str:
  """``mean ± std (N)`` x 100 of ``test_key``. ``extra`` (NER's conlleval F1, the papers' metric) leads instead,
  with ``test_key`` (strict F1) in parentheses, when every run's record holds it; otherwise ``test_key`` leads,
  marked "strict", with ``extra`` over the runs that hold it (records made before it was recorded keep no
  predictions to rescore it from)."""
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
  """One table row; ``implicit`` and ``rival`` are ``(config name, [records])``, or ``(cell, [records])`` with the
  cell records.recipe wrote (it holds a backquote): the records, where they differ from their row today."""
  cells = [FAMILIES[family], task]
  for config, runs in (implicit, rival):
    cells += [config if '`' in config else f'`{config}`', score(runs, test_key, extra)] if runs else ['–', '–']
  return '| ' + ' | '.join(cells + [published]) + ' |'


def update(readme: Path, family: str, rows: list[str]) -> None:
  """Replaces ``family``'s rows in README.md's summary block (created at its markers; nothing when README has no
  markers), keeping the other families' rows, in ``FAMILIES`` order."""
  text = readme.read_text(encoding='utf-8')
  if START not in text:
    return
  block = text.split(START, 1)[1].split(END, 1)[0]
  kept = {f: [] for f in FAMILIES}
  for line in block.splitlines():
    cells = [c.strip() for c in line.strip().strip('|').split('|')] if line.startswith('| ') else []
    name = next((f for f, title in FAMILIES.items() if cells and cells[0] == title), None)
    if name and name != family:
      kept[name].append(line)
  kept[family] = list(rows)
  body = [CAPTION, '', *HEADER, *[line for f in FAMILIES for line in kept[f]]]
  records.write_block(readme, 'summary', '\n'.join(body))
