r"""The ledger of the papers' claims: each comparative claim of the three papers on a task run here, tested on the
committed run records.

  python -m experiments.claims --data_dir=../shared/data    # docs/claims.md, docs/results.md's claims block,
                                                             # README's claims line
  python -m experiments.tables claims                        # the same, with the default --data_dir and --seed

A claim is "A over B" on one task: two rows of one published table (the implicit paper's, InfNet+'s or SEAL's; the
claims are listed in experiments/published.toml), A the one the paper puts higher. Ours is the same difference on
test, each row at our protocol for its family, paired by seed (Cora: by labeled draw), in the paper's metric x 100:
example F1 at 0.5, token accuracy (POS, Cora), conlleval chunk F1 (NER; strict chunk F1 where a row's records
predate conlleval's), mean IoU (horses). Each bootstrap replicate (``REPLICATES``, seeded per claim by ``--seed`` and
the claim's rows, so that it stays put when another row's records change) draws the seeds and the test examples with
replacement, the same for both rows, and recomputes each row's figure from its per-example scores
(``Evaluator.example_scores`` on the record's kept decisions, through experiments/rescore.py; they must give back
the recorded figure, or the claim fails naming the record). The verdicts, the rows' published level, the records
without kept predictions and Holm's correction: docs/claims.md.
"""

from __future__ import annotations

import argparse
import functools
import math
import sys
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

import experiments
from experiments import compare_methods, records, reproduce_cora, reproduce_horses, reproduce_tagging, rescore, tables
from implicit_jax.engine import cli

ROOT = Path(__file__).resolve().parents[1]
DATA_DIR = str(ROOT.parent / 'shared' / 'data')
REPLICATES = 2000
LEVEL = 0.95
FAMILY_ALPHA = 0.05  # Holm's family-wise error rate
LEVEL_ALPHA = 1 - LEVEL  # one claim's test at the interval's level
AT_LEVEL = 2.0  # points from a row's own published number
COMMAND = 'python -m experiments.claims --data_dir=../shared/data'
DIRECTIONS = ('reproduced', 'not shown', 'reversed')
SIZES = ('inside', 'above', 'below')


@dataclass
class Row:
  """One side of a claim: ``runs`` maps a seed (or draw) to its record's path (seeds without one are dropped);
  ``key`` is the recorded test figure in the paper's metric, ``fallback`` the one read where a record lacks ``key``."""
  label: str
  config: str
  runs: dict
  key: str
  fallback: str = ''

  def __post_init__(self):
    self.runs = {seed: path for seed, path in self.runs.items() if path.exists()}


@dataclass
class Claim:
  paper: str
  task: str
  a: Row
  b: Row
  published: float | tuple  # A - B in the paper, x 100; or (A, B), each row's own number
  note: str = ''
  result: dict = field(default_factory=dict)
  numbers: tuple = ()  # (A, B) as published, where the claim was given them
  spreads: tuple = ()  # (A, B): the paper's +- of each, where it gives one (None where it does not)
  names: tuple = ()  # (A, B): the rows' names in the paper's table

  def __post_init__(self):
    if isinstance(self.published, tuple):
      self.numbers, self.published = self.published, self.published[0] - self.published[1]
    # A claim reads "the paper's winner over the other": a table row below its rival is that rival's claim.
    if self.published < 0:
      self.a, self.b, self.published = self.b, self.a, -self.published
      self.numbers, self.spreads, self.names = self.numbers[::-1], self.spreads[::-1], self.names[::-1]


# The paper's name of each row, as its table prints it (subscripts as L_X), by table and our system
# (experiments/published.toml).
ROW_NAMES = experiments.TEXT['claims']['row_names']
CORA_NAMES = {'implicit-cd': 'implicit CD', 'rspen': 'R-SPEN', 'dvn': 'DVN'}  # reproduce_cora.PUBLISHED's names


def _family(table: dict, task: str):
  """A system's Row and published number in ``table`` on ``task``, and its published +- (None: the table gives
  none). Bibtex's rows are at SEAL's network sizes (the rows docs/baselines.md leads with), the other datasets' at
  150 units; horses' are the section at SEAL's protocol that the README's row reads (reproduce_horses.summary_scale)."""
  paper, spreads = table['paper'], table.get('spreads')
  if task in compare_methods.DATASETS:
    pub = compare_methods.SEAL if paper == 'SEAL T1' else compare_methods.IMPLICIT_PAPER
    width = '-h400' if task == 'bibtex' else ''
    mlc_row = lambda s: Row(s, compare_methods.mlc.config_name(task, s),
                            {i: compare_methods.run_file(task, s, i) for i in range(10)}, 'test_f1')
    row = lambda s: dev_chosen([mlc_row(c + width) for c in (s, *DEV_ALTERNATIVES.get(s, ()))])
    return row, lambda s: pub[s][task], (lambda s: compare_methods.SEAL_SPREAD[s][task]) if spreads else None
  if task == 'horses':
    scale = reproduce_horses.summary_scale()
    folder = reproduce_horses.SCALES[scale][1]
    row = lambda s: Row(s, f'configs/horses.py:{s},{scale}', {i: folder / f'{s}-seed{i}.json' for i in range(10)},
                        'test_mean_iou')
    return row, lambda s: reproduce_horses.PUBLISHED[s][paper], reproduce_horses.SEAL_T4_SPREAD.get if spreads else None
  if task.startswith('cora'):
    size = int(task.split()[1])  # 'cora, 5 labeled'
    row = lambda s: Row(s, f'configs/cora.py:{s} (--config.data.labeled={size})',
                        {d: reproduce_cora.RUNS / f'cora-{s}-l{size}-d{d}.json' for d in reproduce_cora.DRAWS},
                        'test_accuracy')
    return row, lambda s: reproduce_cora.PUBLISHED[CORA_NAMES[s]][reproduce_cora.SIZES.index(size)], None
  pub = reproduce_tagging.PUBLISHED[task]  # a source 'impl T9, cites Tu & Gimpel 2019' is Table 9's
  metric, fallback = ('test_accuracy', '') if task == 'pos' else ('test_f1_conlleval', 'test_f1')
  folder = ROOT / 'docs' / 'tagging' / 'runs'
  tagging_row = lambda s: Row(s, f'configs/{task}.py:{s}',
                              {i: folder / f'{task}-{s}-seed{i}.json' for i in range(10)}, metric, fallback)
  number = lambda s: next(v for source in table['sources'] for k, v in pub[s].items() if k.split(',')[0] == source)
  row = lambda s: dev_chosen([tagging_row(c) for c in (s, *DEV_ALTERNATIVES.get(s, ()))])
  return row, number, None


# A rival's rows tried in its place on dev (issue 64, docs/rivals.md): the ledger reads whichever of the row and these
# scores higher on dev, as every row of the tables was chosen (experiments/published.toml [claims.dev_alternatives]).
DEV_ALTERNATIVES = experiments.TEXT['claims']['dev_alternatives']


def dev_best(devs: list[list[float]]) -> int:
  """The rule every choice on dev follows: the index of the candidate whose dev figures (none where it has no
  records) have the highest mean, the first of equals."""
  return max((i for i, d in enumerate(devs) if len(d)), key=lambda i: (np.mean(devs[i]), -i))


def dev_chosen(candidates: list[Row]) -> Row:
  """The candidate ``dev_best`` takes on its records' ``dev_f1``; the one with records, or the first, where fewer
  than two have any (its records are then read by the claim, which names itself beside a file it cannot read)."""
  if sum(bool(c.runs) for c in candidates) < 2:
    return next((c for c in candidates if c.runs), candidates[0])
  return candidates[dev_best([[_load(p)['dev_f1'] for p in c.runs.values()] for c in candidates])]


def claims() -> list[Claim]:
  """Every comparative claim of the three papers on a task run here (experiments/published.toml), in table order."""
  out = []
  for table in experiments.TEXT['claims']['tested']:
    names, why = ROW_NAMES[table['paper']], table.get('no_records', {})
    for task in table['tasks']:
      row, number, spread = _family(table, task)
      for a, b in table['pairs']:
        if number(a) != number(b):  # a tie is no claim
          out.append(Claim(table['paper'], task, row(a), row(b), (number(a), number(b)),
                           note=why.get(a, why.get(b, '')), names=(names[a], names[b]),
                           spreads=(spread(a), spread(b)) if spread else ()))
  return out


# The papers' comparative claims on tasks or rows not run here: (table, claim, why not), experiments/published.toml;
# where the table ties two rows, the numbers are read from reproduce_tagging.PUBLISHED.
_TIES = {'t2_ties': ', '.join(f'{reproduce_tagging.PUBLISHED[d]["infnet-plus-shared"]["InfNet+ T2"]:.1f}'
                              for d in ('pos', 'ner', 'ner_plus')),
         't4_ge_b': f'{reproduce_tagging.PUBLISHED["ner_plus"]["infnet-plus-stacked-ge-b"]["InfNet+ T4"]:.1f}'}
NOT_RUN = [(c['paper'], c['claim'], c['why'].format(**_TIES)) for c in experiments.TEXT['claims']['not_run']]


_SCORES = {}  # (record path, key, reading) -> per-example scores: a row's records serve several claims
# NER's two readings of BIOES output before conlleval's counting (implicit_jax/tasks/tagging/chunks.py): the tags
# mapped to IOB2 (S- -> B-, E- -> I-; the ledger's, the records' test_f1_conlleval), and the tags as they stand, a
# chunk closed after every E- and S-.
HEADLINE_READING, OTHER_READING = 'conlleval', 'conlleval_bioes'
READING_NAMES = {HEADLINE_READING: 'IOB2 first', OTHER_READING: 'BIOES as it stands'}


def _scores(record, path, key, data_dir, reading: str = HEADLINE_READING):
  """Per-example ``(num, den)`` of the record's test predictions, checked against its recorded ``key``; NER's other
  ``reading`` (not recorded: nothing to check it against) where asked."""
  if (path, key, reading) not in _SCORES:
    task, relaxed = rescore.predicted(record, data_dir)
    evaluator = task.evaluator
    if f'test_{evaluator.headline}' != key:
      raise ValueError(f'{path}: the evaluator\'s headline figure is test_{evaluator.headline}, the claim reads {key}')
    more = {} if reading == HEADLINE_READING else {'scheme': reading}
    num, den = (np.asarray(v, np.float64) for v in evaluator.example_scores(relaxed['test'], task.splits['test'],
                                                                             **more))
    if reading == HEADLINE_READING and abs(num.sum() / den.sum() - record[key]) > 1e-6:
      raise ValueError(f'{path}: per-example scores give {num.sum() / den.sum():.8f}, the record {record[key]:.8f}')
    _SCORES[path, key, reading] = num, den
  return _SCORES[path, key, reading]


def _load(path: Path) -> dict:
  """The record at ``path``; one that cannot be read (a truncated file) is a BadRecord naming it: json's own error
  names a line and column, not the file."""
  try:
    return records.load(path)
  except ValueError as e:
    raise rescore.BadRecord(str(e) if str(e).startswith(str(path)) else f'{path}: {rescore.cause(e)}') from e


def claim_rng(claim: Claim, seed: int) -> np.random.Generator:
  """The bootstrap's random numbers for ``claim``: from ``seed`` and the claim's paper, task and rows alone."""
  name = f'{claim.paper}|{claim.task}|{claim.a.label}|{claim.b.label}'
  return np.random.default_rng([seed, zlib.crc32(name.encode())])


def p_value(observed: float, replicates: np.ndarray) -> float:
  """Two-sided p-value of ``observed`` against 0, read off a normal curve with the replicates' spread: the tail a
  percentile count cannot resolve with this many replicates (module doc)."""
  sd = float(np.std(replicates, ddof=1))
  if sd == 0:
    return 1.0 if observed == 0 else 0.0
  return math.erfc(abs(observed) / sd / math.sqrt(2))


def holm(p_values: list[float]) -> list[float]:
  """Holm's step-down adjusted p-values, in the order given: the k-th smallest of m times (m - k + 1), never below
  the one before it in that order, at most 1."""
  adjusted, running = [0.0] * len(p_values), 0.0
  for rank, i in enumerate(sorted(range(len(p_values)), key=lambda i: p_values[i])):
    running = max(running, min(1.0, (len(p_values) - rank) * p_values[i]))
    adjusted[i] = running
  return adjusted


def direction(low: float, high: float) -> str:
  # every claim's published difference is positive (Claim.__post_init__): its side of 0 is above
  return 'reproduced' if low > 0 else 'reversed' if high < 0 else 'not shown'


def size(published: float, low: float, high: float) -> str:
  """Where the published difference lies against our interval: above it, ours is the smaller."""
  return 'above' if published > high else 'below' if published < low else 'inside'


def _interval(published: float, replicates: np.ndarray) -> dict:
  """The percentile interval of ``replicates`` and both verdicts on it."""
  low, high = (float(q) for q in np.quantile(replicates, [(1 - LEVEL) / 2, (1 + LEVEL) / 2]))
  return {'low': low, 'high': high, 'verdict': direction(low, high), 'size': size(published, low, high)}


def test_claim(claim: Claim, data_dir, rng) -> dict:
  """``claim.result``: the paired mean, interval, p-value, seeds agreeing, basis, verdicts, rows against their own."""
  rows = (claim.a, claim.b)
  seeds = sorted(set(claim.a.runs) & set(claim.b.runs))
  if not seeds:
    missing = [r.label for r in rows if not r.runs]
    return {'verdict': 'not run', 'why': claim.note or f'no records of {", ".join(missing) or "common seeds"}'}
  loaded = [[_load(row.runs[s]) for s in seeds] for row in rows]
  if claim.a.key != claim.b.key:
    raise ValueError(f'{claim.a.label} and {claim.b.label}: rows of one claim read one figure')
  key = claim.a.key  # both rows in the paper's metric, or both in the fallback where one record lacks it
  if not all(key in r for side in loaded for r in side):
    key = claim.a.fallback
    if not key:
      raise ValueError(f'{claim.a.label} over {claim.b.label}: a record holds no {claim.a.key}')
  metric = {'test_f1_conlleval': 'conlleval F1'}.get(key, 'strict chunk F1' if key != claim.a.key else '')
  diffs = np.array([100 * (a[key] - b[key]) for a, b in zip(*loaded)])
  own, level = (), ()
  if claim.numbers and key == claim.a.key:  # each row against its own number: a rival far under its own is a weak one
    own = tuple(100 * np.mean([r[key] for r in side]) - n for side, n in zip(loaded, claim.numbers))
    level = tuple(abs(d) <= max(AT_LEVEL, s or 0.0) for d, s in zip(own, claim.spreads or (None, None)))
  out = {'own': own, 'level': level, 'mean': float(diffs.mean()), 'seeds': len(seeds),
         'agree': int(np.sum(diffs > 0)), 'metric': metric}
  seed_draw = rng.integers(len(seeds), size=(REPLICATES, len(seeds)))
  if key == claim.a.key and all(records.rescorable(r) for side in loaded for r in side):
    per_example = lambda reading: [[_scores(r, row.runs[s], key, data_dir, reading) for r, s in zip(side, seeds)]
                                   for row, side in zip(rows, loaded)]
    per = per_example(HEADLINE_READING)
    sizes = {len(num) for side in per for num, _ in side}
    if len(sizes) != 1:
      raise ValueError(f'{claim.a.label} over {claim.b.label}: test sets of {sorted(sizes)} examples; a paired '
                       'bootstrap needs one test set')
    n = sizes.pop()
    weights = rng.multinomial(n, np.full(n, 1.0 / n), size=REPLICATES).astype(np.float64)  # [R, n]

    def resampled(per):
      a, b = (np.stack([(weights @ num) / (weights @ den) for num, den in side]) for side in per)  # [S, R]
      return np.take_along_axis(100 * (a - b).T, seed_draw, axis=1).mean(axis=1)
    replicates = resampled(per)
    out['basis'] = f'examples ({n}) and seeds'
    if key == 'test_f1_conlleval':  # the other reading, on the same draws
      other = per_example(OTHER_READING)
      mean = float(np.mean([100 * (a[0].sum() / a[1].sum() - b[0].sum() / b[1].sum()) for a, b in zip(*other)]))
      out['reading'] = {'mean': mean, **_interval(claim.published, resampled(other))}
  elif len(seeds) < 2:  # one seed and no test predictions: nothing to resample
    return {**out, 'verdict': 'no interval', 'basis': 'one seed, no predictions kept'}
  else:
    replicates = diffs[seed_draw].mean(axis=1)
    out['basis'] = 'seeds only (records keep no predictions)'
  out.update(_interval(claim.published, replicates), p=p_value(out['mean'], replicates))
  out['depends'] = 'reading' in out and (out['reading']['verdict'], out['reading']['size']) != (out['verdict'],
                                                                                               out['size'])
  return out


def judged(items: list[Claim]) -> list[Claim]:
  """The claims with an interval, those Holm's correction is taken over."""
  return [c for c in items if 'p' in c.result]


def adjust(items: list[Claim]) -> None:
  """Sets each judged claim's Holm-adjusted p-value and whether its direction verdict stands."""
  tested = judged(items)
  for c, p in zip(tested, holm([c.result['p'] for c in tested])):
    c.result['holm'] = p
    c.result['stands'] = c.result['verdict'] != 'not shown' and p < FAMILY_ALPHA


def verdict_cell(c: Claim) -> str:
  """The direction verdict, naming the row ahead (as its config names it) and by how much where one is."""
  r = c.result
  a, b = (row.label.replace(' ', '_') for row in (c.a, c.b))
  return {'reproduced': f'**reproduced**: {a} ahead', 'reversed': f'**reversed**: {b} ahead by {-r["mean"]:.2f}',
          'no interval': f'no interval ({a if r["mean"] > 0 else b} ahead on its one seed)'}.get(r['verdict'],
                                                                                                '**not shown**')


def reading_note(r: dict) -> str:
  """What the other reading of NER's tags gives, where it changes a verdict."""
  if not r.get('depends'):
    return ''
  o = r['reading']
  return (f'; **depends on the reading**: with the tags read {READING_NAMES[OTHER_READING]}, {o["mean"]:+.2f} '
          f'[{o["low"]:+.2f}, {o["high"]:+.2f}], {o["verdict"]}, {o["size"]}')


def table(items: list[Claim]) -> list[str]:
  lines = ['| # | paper | task | claim: A over B | the paper\'s rows: A; B | published A - B | ours A - B [95% '
           'interval] | seeds agreeing | direction | size: published vs ours | A, B: ours - published (✓ at level) | '
           'Holm p | basis |', '|---|---|---|---|---|---|---|---|---|---|---|---|---|']
  for i, c in enumerate(items, 1):
    r = c.result
    quoted = '; '.join(f'"{name}" {number:.2f}' for name, number in zip(c.names, c.numbers))
    head = f'| {i} | {c.paper} | {c.task} | `{c.a.config}` over `{c.b.config}` | {quoted} | {c.published:+.2f} |'
    if r['verdict'] == 'not run':
      lines.append(f'{head} – | – | not run: {r["why"]} | – | – | – | – |')
      continue
    metric = f' ({r["metric"]})' if r['metric'] else ''
    level = ', '.join(f'{d:+.2f} {"✓" if ok else "✗"}' for d, ok in zip(r['own'], r['level'])) or '–'
    interval, p = (f' [{r["low"]:+.2f}, {r["high"]:+.2f}]', r['holm']) if 'low' in r else ('', None)  # none: one seed
    holm_cell = '–' if p is None else ('<0.0001' if p < 1e-4 else f'{p:.2g}' if p < 0.1 else f'{p:.2f}') + (
        ' (not after Holm)' if r['verdict'] != 'not shown' and not r['stands'] else '')
    lines.append(f'{head} {r["mean"]:+.2f}{interval}{metric} | {r["agree"]} of {r["seeds"]} | {verdict_cell(c)}'
                 f'{reading_note(r)} | {r.get("size", "–")} | {level} | {holm_cell} | {r["basis"]} |')
  return lines


def at_level(c: Claim) -> bool:
  return len(c.result.get('level', ())) == 2 and all(c.result['level'])


def tally(values: list, order=DIRECTIONS, zeros: bool = True) -> str:
  """How many of ``values`` are each of ``order``: '3 reproduced, 0 not shown, ...' (the zeros if ``zeros``)."""
  return ', '.join(f'{values.count(v)} {v}' for v in order if zeros or v in values)


def counts(items: list[Claim]) -> dict:
  """The ledger's verdict counts: both axes at level and among the rest, Holm's effect, the claims not judged."""
  tested = judged(items)
  level = [c for c in tested if at_level(c)]
  rest = [c for c in tested if not at_level(c)]
  shown = [c for c in tested if c.result['verdict'] != 'not shown']
  out = {'claims': len(items), 'tested': len(tested), 'level': len(level), 'rest': len(rest),
         'shown': len(shown), 'stand': sum(c.result['stands'] for c in shown),
         'taken_back': ', '.join(f'#{items.index(c) + 1}' for c in shown if not c.result['stands']) or 'none',
         'disagree': ', '.join(f'#{items.index(c) + 1}' for c in tested
                               if (c.result['p'] < LEVEL_ALPHA) != (c.result['verdict'] != 'not shown')) or 'none',
         'no_interval': sum(c.result['verdict'] == 'no interval' for c in items),
         'not_run': sum(c.result['verdict'] == 'not run' for c in items)}
  for prefix, group in (('level_', level), ('rest_', rest), ('', tested)):
    out[prefix + 'direction'] = tally([c.result['verdict'] for c in group])
    out[prefix + 'size'] = tally([c.result['size'] for c in group], SIZES)
  return out


def readings(items: list[Claim], data_dir) -> tuple[list[str], float]:
  """The table of each NER / NER+ row's test F1 under both readings, and the largest change of a seed's F1."""
  rows = {}
  for c in items:
    for row in (c.a, c.b):
      if row.key == 'test_f1_conlleval' and row.runs and 'reading' in c.result:
        rows.setdefault((c.task, row.label), row)
  head, other = READING_NAMES[HEADLINE_READING], READING_NAMES[OTHER_READING]
  lines = [f'| dataset | row | seeds | conlleval F1, tags {head} | tags {other} | {other} - {head}, per seed |',
           '|---|---|---|---|---|---|']
  moves = []
  for (task, _), row in rows.items():
    a, b = ([100 * num.sum() / den.sum() for num, den in
             (_scores(_load(path), path, row.key, data_dir, reading) for _, path in sorted(row.runs.items()))]
            for reading in (HEADLINE_READING, OTHER_READING))
    moves += [abs(y - x) for x, y in zip(a, b)]
    lines.append(f'| {task} | `{row.config}` | {len(a)} | {records.mean_std(a, scale=1)} | '
                 f'{records.mean_std(b, scale=1)} | {", ".join(f"{y - x:+.2f}" for x, y in zip(a, b))} |')
  return lines, max(moves)


class LedgerError(Exception):
  """A claim whose records cannot be read or rescored: the message names the claim and the record."""


@functools.cache
def ledger(data_dir: str = DATA_DIR, seed: int = 0) -> list[Claim]:
  """Every claim, tested on the committed records."""
  items = claims()
  for c in items:
    try:
      c.result = test_claim(c, data_dir, claim_rng(c, seed))
    except (ValueError, OSError, rescore.NotRescorable) as e:
      raise LedgerError(f'{c.paper} {c.task} {c.a.label} over {c.b.label}: {rescore.cause(e)}') from e
  adjust(items)
  return items


SETTINGS = {'data_dir': DATA_DIR, 'seed': 0}  # what the command was given; ledger(**SETTINGS): one cache entry


def fields(groups) -> dict:  # pylint: disable=unused-argument  # the claims read their rows' records themselves
  items = ledger(**SETTINGS)
  reading_lines, move = readings(items, SETTINGS['data_dir'])
  dependent = [f'#{i}' for i, c in enumerate(items, 1) if c.result.get('depends')]
  ner = [c.result for c in items if 'reading' in c.result]
  return {**{k: str(v) for k, v in counts(items).items()}, 'table': '\n'.join(table(items)),
          'replicates': str(REPLICATES), 'readings': '\n'.join(reading_lines),
          'reading_move': f'{move:.2f}', 'reading_claims': str(len(ner)),
          'dependent': ', '.join(dependent) or 'none', 'n_dependent': str(len(dependent)),
          'ner_direction': tally([r['verdict'] for r in ner]),
          'other_direction': tally([r['reading']['verdict'] for r in ner]),
          'not_run_claims': '\n'.join(f'- {paper}: {claim}. Why not: {why}.' for paper, claim, why in NOT_RUN),
          'level_pct': f'{LEVEL:.0%}', 'at_level': f'{AT_LEVEL:g}', 'alpha': f'{FAMILY_ALPHA:g}'}


def blocks(groups, fields_) -> dict:  # pylint: disable=unused-argument
  """docs/results.md's claims block (the page's ledger section) and README's claims line (published.toml)."""
  ledger_section = fields_['page'].split('\n## The ledger\n', 1)[1].split('\n## ', 1)[0]
  body = (f'Rebuilt by `{COMMAND}` on {fields_["date"]} from the committed run records; the method, Holm\'s '
          f'correction and the command list: [claims.md](claims.md).\n{ledger_section}')
  summary = experiments.TEXT['claims']['readme'].format(**counts(ledger(**SETTINGS)), at_level=f'{AT_LEVEL:g}')
  return {('docs/results.md', 'claims'): body, ('README.md', 'claims'): summary}


FIGURE = ROOT / 'docs' / 'claims.png'
# The forest plot's panels: each family's differences on a scale of their own (multi-label ones reach 80 points,
# tagging ones stay within 3).
PANELS = (('multi-label classification (example F1 @0.5)', lambda c: c.paper.endswith('T1')),
          ('sequence labeling (POS token accuracy, NER conlleval F1)', lambda c: c.task in ('pos', 'ner', 'ner_plus')),
          ('Weizmann horses (mean IoU)', lambda c: c.task == 'horses'),
          ('Cora citation fields (token accuracy)', lambda c: c.task.startswith('cora')))
TICKS = (-50, -20, -10, -5, -2, -1, 0, 1, 2, 5, 10, 20, 50, 100)


def draw(items: list[Claim], path: Path = FIGURE) -> list[str]:
  """The ledger as a forest plot, one line per claim with a difference of ours (numbered as in the table), against
  the published difference; returns the lines' labels, top to bottom."""
  import matplotlib  # pylint: disable=import-outside-toplevel
  import matplotlib.ticker  # pylint: disable=import-outside-toplevel
  matplotlib.use('Agg')
  import matplotlib.pyplot as plt  # pylint: disable=import-outside-toplevel
  shown = [(i, c) for i, c in enumerate(items, 1) if 'mean' in c.result]
  panels = [(title, [(i, c) for i, c in shown if belongs(c)]) for title, belongs in PANELS]
  panels = [(title, rows) for title, rows in panels if rows]
  heights = [len(rows) + 2 for _, rows in panels]
  fig, axes = plt.subplots(len(panels), 1, figsize=(10, 0.17 * sum(heights) + 1.2),
                           gridspec_kw={'height_ratios': heights})
  for ax, (title, rows) in zip(np.atleast_1d(axes), panels):
    for y, (i, c) in enumerate(rows):
      r = c.result
      color = 'black' if at_level(c) else 'tab:orange' if any(r.get('level', ())) else 'tab:gray'
      if 'low' in r:
        ax.plot([r['low'], r['high']], [y, y], color=color, lw=1.6, solid_capstyle='butt')
        ax.plot(r['mean'], y, 'o', color=color, ms=3.5)
      else:  # one seed, no interval
        ax.plot(r['mean'], y, 'o', mfc='white', color=color, ms=3.5)
      ax.plot(c.published, y, 'D', color='tab:red', ms=3.5, alpha=0.8)
    ax.axvline(0, color='k', lw=0.6)
    ax.set_xscale('symlog', linthresh=2)  # before the ticks: a new scale resets them
    ends = [0.0] + [v for _, c in rows for v in (c.published, c.result['mean'], c.result.get('low', 0),
                                                  c.result.get('high', 0))]
    left, right = min(ends) - 0.15 * abs(min(ends)) - 0.3, max(ends) + 0.15 * abs(max(ends)) + 0.3
    ax.set_xlim(left, right)
    ax.set_xticks([t for t in TICKS if left <= t <= right])
    ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f'{v:g}'))
    ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
    ax.set_yticks(range(len(rows)), [f'#{i} {c.paper}, {c.task}: {c.a.label} over {c.b.label}' for i, c in rows],
                  fontsize=5.5)
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.grid(axis='x', lw=0.3, alpha=0.5)
    ax.set_title(title, fontsize=8, loc='left')
    ax.tick_params(axis='x', labelsize=7)
  marks = [plt.Line2D([], [], ms=3.5, **mark) for mark in (
      {'color': 'black', 'marker': 'o', 'label': 'ours A - B, 95% interval: both rows at their published level'},
      {'color': 'tab:orange', 'marker': 'o', 'label': 'one row at its published level'},
      {'color': 'tab:gray', 'marker': 'o', 'label': 'neither (or not comparable)'},
      {'color': 'tab:gray', 'marker': 'o', 'mfc': 'white', 'ls': '',
       'label': 'one seed without kept predictions: no interval'},
      {'color': 'tab:red', 'marker': 'D', 'ls': '', 'label': 'published A - B'})]
  fig.legend(handles=marks, loc='upper center', ncol=2, fontsize=7, frameon=False)
  fig.supxlabel('A - B, points x 100 (symmetric log scale: linear within +-2)', fontsize=8)
  fig.tight_layout(rect=(0, 0, 1, 1 - 0.9 / fig.get_figheight()))
  fig.savefig(path, dpi=110, metadata={'Software': None})
  plt.close(fig)
  return [label.get_text() for ax in np.atleast_1d(axes) for label in ax.get_yticklabels()]


@functools.cache
def _used_records() -> frozenset:
  return frozenset(Path(p).resolve() for c in claims() for row in (c.a, c.b) for p in row.runs.values())


def key(path: Path, record: dict):
  """A record some claim reads is on the page's command list; the other records of the same folders are not."""
  return tables.stem(path, record) if Path(path).resolve() in _used_records() else None


TABLES = [tables.Table('claims', 'docs/claims.md', ('docs/mlc/runs/*.json', 'docs/baselines/runs/*.json',
                                                    'docs/tagging/runs/*.json', 'docs/horses/runs_seal*/*.json',
                                                    'docs/cora/runs/*.json'),
                       fields, command=COMMAND, key=key, blocks=blocks,
                       after=lambda groups: draw(ledger(**SETTINGS)))]


def knife_edges(ledgers: list[list[Claim]]) -> int:
  """Prints each claim whose direction verdict (or, for NER, its other reading's) changes with the bootstrap seed."""
  edges = 0
  for i, versions in enumerate(zip(*ledgers), 1):
    c = versions[0]
    for what, verdicts in (('', [v.result.get('verdict') for v in versions]),
                           (f', tags read {READING_NAMES[OTHER_READING]}',
                            [v.result['reading']['verdict'] for v in versions if 'reading' in v.result])):
      if len(set(verdicts)) > 1:
        edges += 1
        print(f'#{i} {c.paper} {c.task} {c.a.label} over {c.b.label}{what}: {tally(verdicts, zeros=False)} of '
              f'{len(verdicts)} bootstrap seeds')
  print(f'{edges} knife edges over {len(ledgers)} bootstrap seeds')
  return 0


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument('--data_dir', default=DATA_DIR,
                      help='the data folder the records\' gold is read from (their decisions are scored against it)')
  parser.add_argument('--seed', type=int, default=0, help='the bootstrap\'s seed')
  parser.add_argument('--knife_edges', type=int, default=0, metavar='K',
                      help='test the ledger under bootstrap seeds --seed .. --seed + K - 1 and print each claim whose '
                      'direction verdict changes with the seed, writing nothing')
  args = parser.parse_args(argv)
  if not Path(args.data_dir).is_dir():
    print(f'--data_dir: no such folder {args.data_dir}', file=sys.stderr)
    return 1
  SETTINGS.update(data_dir=args.data_dir, seed=args.seed)
  try:
    items = ledger(**SETTINGS)
    if args.knife_edges:
      seeds = range(args.seed, args.seed + args.knife_edges)
      return knife_edges([ledger(data_dir=args.data_dir, seed=seed) for seed in seeds])
  except LedgerError as e:  # a record that cannot be read: nothing is written
    print(f'{e}; the ledger is not rewritten', file=sys.stderr)
    return 1
  for c in items:
    print(f'{c.paper:12} {c.task:18} {c.a.label} over {c.b.label}: {c.result["verdict"]}'
          f'{", " + c.result["size"] if "size" in c.result else ""}')
  tables.build(TABLES[0])
  n = counts(items)
  print(f'{n["claims"]} claims, {n["tested"]} with an interval: {n["direction"]}; {n["size"]}; '
        f'{n["stand"]} of {n["shown"]} direction verdicts stand after Holm')
  return 0


if __name__ == '__main__':
  sys.exit(cli.guarded(main))
