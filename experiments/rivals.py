r"""The weak rivals of issue 64 and the ledger's knife edges: each row before and after what was tried, beside its
published numbers, from the committed records (docs/rivals.md).

  python -m experiments.rivals      # rebuild docs/rivals.md (also: python -m experiments.tables rivals)

What "before" and "after" are: docs/rivals.md. Every figure is read from records but the published numbers, which
the families' scripts hold (compare_methods.SEAL / IMPLICIT_PAPER, reproduce_tagging.PUBLISHED).
"""

import dataclasses
import sys

import numpy as np

import experiments
from experiments import claims, compare_methods, records, reproduce_tagging, tables

BEFORE_SEEDS = (0, 1, 2)
# The ledger's knife edges (`python -m experiments.claims --knife_edges=20`): claims whose direction verdict changed
# with the bootstrap seed; (paper, task, A, B) as the ledger names them. The page tallies each one's verdicts over
# KNIFE_SEEDS bootstrap seeds on the seeds it had (BEFORE_SEEDS) and on all it has now.
KNIFE = [('SEAL T1', 'bibtex', 'seal-dynamic regression-h400', 'seal-static regression-h400'),
         ('implicit T3', 'ner', 'implicit-cd', 'bilstm')]
KNIFE_SEEDS = 20
TEXT = experiments.TEXT['rivals']
AT_LEVEL = claims.AT_LEVEL  # points: the ledger's at-level bar, the "within 2 points of its published number"


def published(dataset, system) -> list[tuple[float, str]]:
  """A row's published numbers [(value, source)]: SEAL's and the implicit paper's Table 1, or tagging's PUBLISHED."""
  if dataset in compare_methods.DATASETS:
    return compare_methods.published(system, dataset)
  return [(v, source) for source, v in reproduce_tagging.PUBLISHED[dataset][system].items()]


def stem(dataset, system) -> str:
  """The records' stem of a row, as claims reads it (bibtex's rows at SEAL's 400-unit sizes)."""
  return f'{dataset}-{system.replace(" ", "_")}' + ('-h400' if dataset == 'bibtex' else '')


# (label, dataset, system, why not rerun: a key of TEXT['not_rerun'], None for a row rerun). What was tried in a row's
# place is the ledger's: claims.DEV_ALTERNATIVES (several: the one higher on dev shown; TEXT['tried'] keyed by the
# first one's stem).
RIVALS = [
    ('delicious, DVN, 150 units', 'delicious', 'dvn', None),
    ('delicious, SEAL-dynamic NCE, 150 units', 'delicious', 'seal-dynamic nce', None),
    ('delicious, SEAL-static NCE, 150 units', 'delicious', 'seal-static nce', None),
    ('delicious, SEAL-static margin, 150 units', 'delicious', 'seal-static margin', None),
    ('bibtex, SPEN, 400 units (after: with the pretraining stage)', 'bibtex', 'spen', 'pretrain'),
    *[(f'NER+, InfNet+ {p}', 'ner_plus', f'infnet-plus-{p}', 'ner') for p in ('separated', 'shared')],
    ('NER+, InfNet+ stacked (after: 30 epochs)', 'ner_plus', 'infnet-plus-stacked', None),
    *[(f'NER+, InfNet+ stacked + global energy ({g})', 'ner_plus', f'infnet-plus-stacked-ge-{g}', 'ner')
      for g in 'abc'],
    ('NER, fixed word vectors, BiLSTM (after: more epochs)', 'ner_fixed', 'bilstm', None),
]
# The tasks the ledger holds claims on: a rival elsewhere is read by none
LEDGER_TASKS = {task for table in experiments.TEXT['claims']['tested'] for task in table['tasks']}


def afters(dataset, system) -> list[str]:
  return [stem(dataset, alt) for alt in claims.DEV_ALTERNATIVES.get(system, ())]


# The knife edges' rows, before (seeds 0-2) and after (every seed): (label, dataset, system)
KNIFE_ROWS = [(f'bibtex, {s}, 400 units', 'bibtex', s) for s in ('seal-dynamic regression', 'seal-static regression')]
STEMS = {s for _, dataset, system, *_ in RIVALS + KNIFE_ROWS for s in (stem(dataset, system), *afters(dataset, system))}


def _mean(rs, metric):
  return 100 * np.mean([r[metric] for r in rs])


def _cell(rs, metric):
  return f'{records.mean_std([r[metric] for r in rs])} ({len(rs)})' if rs else '–'


def _gap(rs, metric, pubs):
  return '; '.join(f'{_mean(rs, metric) - v:+.2f}' for v, _ in pubs) if rs else ''


def _published(pubs):
  return '; '.join(f'{v:.2f} ({src})' for v, src in pubs)


def rivals_table(groups) -> str:
  lines = ['| rival | metric | before | after | published | gap after (before) | within 2 points (after, else '
           'before) | the ledger reads (dev before / after) | what was tried, or why not |',
           '|---|---|---|---|---|---|---|---|---|']
  for label, dataset, system, why in RIVALS:
    before, tried, pubs = stem(dataset, system), afters(dataset, system), published(dataset, system)
    metric = 'test_f1_conlleval' if dataset.startswith('ner') else 'test_f1'
    old = [r for r in groups.get(before, []) if r['seed'] in BEFORE_SEEDS]
    devs = [[r['dev_f1'] for r in groups.get(s, [])] for s in (before, *tried)]
    new = groups[(before, *tried)[claims.dev_best([[], *devs[1:]])]] if any(devs[1:]) else []
    level = 'yes' if min(abs(_mean(new or old, metric) - v) for v, _ in pubs) <= AT_LEVEL else 'no'
    reads = 'before (no row after)'  # which row the ledger reads: claims.dev_chosen's
    if new:
      reads = (f'{"after" if claims.dev_best(devs) else "before"} ({_mean(groups[before], "dev_f1"):.2f} / '
               f'{_mean(new, "dev_f1"):.2f})')
      epochs = ', '.join(str(r['best_epoch']) for r in new)
      what = f'{TEXT["tried"][tried[0]]}; epochs selected on dev: {epochs} of {new[0]["config"]["num_epochs"]}'
    else:
      devices = ', '.join(sorted({records.device_of(r) for r in old}))
      what = TEXT['not_rerun'][why] + (
          f'; a run of its records: {np.mean([r["train_seconds"] for r in old]):.0f} s on {devices}' if old else '')
    if dataset not in LEDGER_TASKS:
      reads = 'none (no claim on this task)'
    lines.append(f'| {label} | {"conlleval F1" if metric.endswith("conlleval") else "example F1 @0.5"} | '
                 f'{_cell(old, metric)} | {_cell(new, metric)} | {_published(pubs)} | '
                 f'{_gap(new, metric, pubs) + " " if new else ""}({_gap(old, metric, pubs)}) | {level} | {reads} | '
                 f'{what} |')
  return '\n'.join(lines)


def knife_table(groups) -> str:
  lines = ['| row | before (seeds 0-2) | after | published |', '|---|---|---|---|']
  for label, dataset, system in KNIFE_ROWS:
    rs, pubs = groups.get(stem(dataset, system), []), published(dataset, system)
    lines.append(f'| {label} | {_cell([r for r in rs if r["seed"] in BEFORE_SEEDS], "test_f1")} | '
                 f'{_cell(rs, "test_f1")} | {_published(pubs)} |')
  return '\n'.join(lines)


def tally(claim) -> str:
  """The claim's direction verdicts over KNIFE_SEEDS bootstrap seeds, and its seed-0 interval."""
  data_dir = claims.SETTINGS['data_dir']
  results = [claims.test_claim(claim, data_dir, claims.claim_rng(claim, s)) for s in range(KNIFE_SEEDS)]
  first = results[0]
  interval = f'[{first["low"]:+.2f}, {first["high"]:+.2f}]' if 'low' in first else 'none'
  return (claims.tally([r.get('verdict') for r in results], zeros=False)
          + f' (mean {first["mean"]:+.2f}, interval {interval})')


def knife_verdicts() -> str:
  lines = ['| claim | seeds A / B | verdicts before (seeds 0-2) | verdicts now |', '|---|---|---|---|']
  every = claims.claims()
  for paper, task, a, b in KNIFE:
    (i, c), = [(i, c) for i, c in enumerate(every, 1) if (c.paper, c.task, c.a.label, c.b.label) == (paper, task, a, b)]
    keep = lambda row: dataclasses.replace(row, runs={k: v for k, v in row.runs.items() if k in BEFORE_SEEDS})
    before = dataclasses.replace(c, a=keep(c.a), b=keep(c.b), result={})
    rerun = len(c.a.runs) > len(BEFORE_SEEDS) or len(c.b.runs) > len(BEFORE_SEEDS)
    lines.append(f'| #{i} {paper}, {task}: {a} over {b} | {len(c.a.runs)} / {len(c.b.runs)} | '
                 f'{tally(before)} | {tally(c) if rerun else TEXT["not_rerun"]["ner"]} |')
  return '\n'.join(lines)


def fields(groups) -> dict:
  return {'rivals': rivals_table(groups), 'knife': knife_table(groups), 'verdicts': knife_verdicts(),
          'knife_seeds': KNIFE_SEEDS, 'at_level': AT_LEVEL}


TABLES = [tables.Table('rivals', 'docs/rivals.md', ('docs/baselines/runs/*.json', 'docs/tagging/runs/*.json'), fields,
                       command='python -m experiments.rivals', key=tables.variant_key(STEMS))]


def main():
  print(tables.build(TABLES[0]))


if __name__ == '__main__':
  from implicit_jax.engine import cli  # pylint: disable=import-outside-toplevel
  sys.exit(cli.guarded(main))
