r"""The weak rivals of issue 64 and the ledger's knife edges: each row before and after what was tried, beside its
published numbers, from the committed records (docs/rivals.md).

  python -m experiments.rivals      # rebuild docs/rivals.md (also: python -m experiments.tables rivals)

A row's "before" is its committed row as the issue found it (its seeds 0-2); "after" the row that was tried in its
place (its own records), or, for a knife edge, the same row with seeds 3 and 4 added; a row not rerun says why.
Every figure is read from records: nothing here is typed by hand but the published numbers, which the families'
scripts hold (compare_methods.SEAL / IMPLICIT_PAPER, reproduce_tagging.PUBLISHED).
"""

import dataclasses
import sys

import numpy as np

from experiments import claims, compare_methods, records, reproduce_tagging, tables

ROOT = records.ROOT
BEFORE_SEEDS = (0, 1, 2)
# The ledger's knife edges (`python -m experiments.claims --knife_edges=20`): claims whose direction verdict changed
# with the bootstrap seed; (paper, task, A, B) as the ledger names them. The page tallies each one's verdicts over
# KNIFE_SEEDS bootstrap seeds on the seeds it had (BEFORE_SEEDS) and on all it has now.
KNIFE = [('SEAL T1', 'bibtex', 'seal-dynamic regression-h400', 'seal-static regression-h400'),
         ('implicit T3', 'ner', 'implicit-cd', 'bilstm')]
KNIFE_SEEDS = 20
_NER_REASON = ('issue 64\'s session kept the NER / NER+ rows off its shared 2-core CPU (its brief: the multi-label '
               'rows first; several of these take 10 to 40 minutes a run there); left for a machine with an '
               'accelerator')
_NER_COST = 'not rerun: ' + _NER_REASON
# (label, records' stem before, stem after or None, metric, published [(value, source)], why not rerun / what was
# tried)
_SEAL_PUB = lambda s, d: [(compare_methods.SEAL[s][d], 'SEAL T1')] + (  # pylint: disable=unnecessary-lambda-assignment
    [(compare_methods.IMPLICIT_PAPER[s][d], 'implicit T1')] if d in compare_methods.IMPLICIT_PAPER.get(s, {}) else [])
_TAG_PUB = lambda d, s: [(v, src) for src, v in reproduce_tagging.PUBLISHED[d][s].items()]  # pylint: disable=unnecessary-lambda-assignment
_DELICIOUS_NOT_RUN = ('not rerun yet: issue 64\'s session took the knife edge, SPEN\'s pretraining stage, DVN and '
                      'then the cheaper SEAL rows (static margin and NCE) first')
RIVALS = [
    ('delicious, DVN, 150 units', 'delicious-dvn', 'delicious-dvn-mirror', 'test_f1', _SEAL_PUB('dvn', 'delicious'),
     _DELICIOUS_NOT_RUN),
    ('delicious, SEAL-dynamic NCE, 150 units', 'delicious-seal-dynamic_nce', None, 'test_f1',
     _SEAL_PUB('seal-dynamic nce', 'delicious'), _DELICIOUS_NOT_RUN),
    ('delicious, SEAL-static NCE, 150 units', 'delicious-seal-static_nce', 'delicious-seal-static_nce-w0.1', 'test_f1',
     _SEAL_PUB('seal-static nce', 'delicious'), _DELICIOUS_NOT_RUN),
    ('delicious, SEAL-static margin, 150 units', 'delicious-seal-static_margin', 'delicious-seal-static_margin-w0.1',
     'test_f1',
     _SEAL_PUB('seal-static margin', 'delicious'), _DELICIOUS_NOT_RUN),
    ('bibtex, SPEN, 400 units (after: with the pretraining stage)', 'bibtex-spen-h400', 'bibtex-spen-pretrain-h400',
     'test_f1', _SEAL_PUB('spen', 'bibtex'), 'no records of the pretraining row yet'),
    *[(f'NER+, {name}', f'ner_plus-{system}', None, 'test_f1_conlleval', _TAG_PUB('ner_plus', system), _NER_COST)
      for name, system in (('InfNet+ separated', 'infnet-plus-separated'), ('InfNet+ shared', 'infnet-plus-shared'),
                           ('InfNet+ stacked', 'infnet-plus-stacked'),
                           ('InfNet+ stacked + global energy (a)', 'infnet-plus-stacked-ge-a'),
                           ('InfNet+ stacked + global energy (b)', 'infnet-plus-stacked-ge-b'),
                           ('InfNet+ stacked + global energy (c)', 'infnet-plus-stacked-ge-c'))],
    ('NER, fixed word vectors, BiLSTM', 'ner_fixed-bilstm', None, 'test_f1_conlleval', _TAG_PUB('ner_fixed', 'bilstm'),
     _NER_COST),
]
# The knife edge's rows, before (seeds 0-2) and after (every seed): (label, stem, published)
KNIFE_ROWS = [(f'bibtex, {s}, 400 units', f'bibtex-{s.replace(" ", "_")}-h400', _SEAL_PUB(s, 'bibtex'))
              for s in ('seal-dynamic regression', 'seal-static regression')]
AT_LEVEL = claims.AT_LEVEL  # points: the ledger's at-level bar, the "within 2 points of its published number"


def _cell(rs, metric):
  return f'{records.mean_std([r[metric] for r in rs])} ({len(rs)})' if rs else '–'


def _gap(rs, metric, pubs):
  if not rs:
    return ''
  mean = 100 * np.mean([r[metric] for r in rs])
  return '; '.join(f'{mean - v:+.2f}' for v, _ in pubs)


def _published(pubs):
  return '; '.join(f'{v:.2f} ({src})' for v, src in pubs)


def rivals_table(groups) -> str:
  lines = ['| rival | metric | before | after | published | gap after (before) | within 2 points (after, else '
           'before) | what was tried, or why not |', '|---|---|---|---|---|---|---|---|']
  for label, before, after, metric, pubs, why in RIVALS:
    old = [r for r in groups.get(before, []) if r['seed'] in BEFORE_SEEDS]
    new = groups.get(after, []) if after else []
    shown = new or old
    level = 'yes' if min(abs(100 * np.mean([r[metric] for r in shown]) - v) for v, _ in pubs) <= AT_LEVEL else 'no'
    tried = TRIED.get(after, why) if new else why
    if new:
      tried += '; epochs selected on dev: ' + ', '.join(str(r['best_epoch']) for r in new) + (
          f' of {new[0]["config"]["num_epochs"]}')
    if not new and old:
      tried += f'; a run of its records: {np.mean([r["train_seconds"] for r in old]):.0f} s on ' + ', '.join(
          sorted({records.device_of(r) for r in old}))
    gaps = f'{_gap(new, metric, pubs)} ({_gap(old, metric, pubs)})' if new else f'({_gap(old, metric, pubs)})'
    lines.append(f'| {label} | {"conlleval F1" if metric.endswith("conlleval") else "example F1 @0.5"} | '
                 f'{_cell(old, metric)} | {_cell(new, metric) if new else "–"} | {_published(pubs)} | {gaps} | '
                 f'{level} | {tried} |')
  return '\n'.join(lines)


# What the "after" row is, for each row run (the config that made it is its records' and the row's)
TRIED = {
    'bibtex-spen-pretrain-h400': (
        'Belanger & McCallum\'s pretraining stage (`spen.pretrain_epochs`, `spen.clamp_epochs`), 3 variants on dev '
        '(docs/sweeps/bibtex-spen-pretrain-h400.md: 10 epochs of it, the same then 10 of the global term alone, 30 '
        'of it; all under the row without the stage on dev), the second chosen; row '
        '`configs/bibtex.py:spen-pretrain-h400`'),
    'delicious-dvn-mirror': (
        'two changes on delicious dev (docs/sweeps/delicious-dvn.md): bibtex\'s dev-chosen GBI (mirror descent, step '
        '1) and a third of the learning rate, the first chosen; row `configs/delicious.py:dvn-mirror`'),
    'delicious-seal-static_margin-w0.1': (
        'two changes on delicious dev (docs/sweeps/delicious-seal-static-margin.md): the energy weighed 0.1 in the '
        'task net\'s loss (bibtex\'s dev choice) and 80 epochs, the first chosen; row '
        '`configs/delicious.py:seal-static_margin-w0.1`'),
    'delicious-seal-static_nce-w0.1': (
        'one change on delicious dev (docs/sweeps/delicious-seal-static-nce.md): the energy weighed 0.1 in the task '
        'net\'s loss (bibtex\'s dev choice); row `configs/delicious.py:seal-static_nce-w0.1`'),
}


def knife_table(groups) -> str:
  lines = ['| row | before (seeds 0-2) | after | published |', '|---|---|---|---|']
  for label, stem, pubs in KNIFE_ROWS:
    rs = groups.get(stem, [])
    lines.append(f'| {label} | {_cell([r for r in rs if r["seed"] in BEFORE_SEEDS], "test_f1")} | '
                 f'{_cell(rs, "test_f1")} | {_published(pubs)} |')
  return '\n'.join(lines)


def tally(claim, data_dir) -> str:
  """The claim's direction verdicts over KNIFE_SEEDS bootstrap seeds, and its seed-0 interval."""
  results = [claims.test_claim(claim, data_dir, claims.claim_rng(claim, s)) for s in range(KNIFE_SEEDS)]
  verdicts = [r.get('verdict') for r in results]
  first = results[0]
  interval = f'[{first["low"]:+.2f}, {first["high"]:+.2f}]' if 'low' in first else 'none'
  return (', '.join(f'{verdicts.count(v)} {v}' for v in claims.DIRECTIONS if v in verdicts)
          + f' (mean {first["mean"]:+.2f}, interval {interval})')


def knife_verdicts() -> str:
  data_dir = claims.SETTINGS['data_dir'] or str(ROOT.parent / 'shared' / 'data')
  lines = ['| claim | seeds A / B | verdicts before (seeds 0-2) | verdicts now |', '|---|---|---|---|']
  every = claims.claims()
  for paper, task, a, b in KNIFE:
    (i, c), = [(i, c) for i, c in enumerate(every, 1) if (c.paper, c.task, c.a.label, c.b.label) == (paper, task, a, b)]
    keep = lambda row: dataclasses.replace(row, runs={k: v for k, v in row.runs.items() if k in BEFORE_SEEDS})  # pylint: disable=unnecessary-lambda-assignment
    before = dataclasses.replace(c, a=keep(c.a), b=keep(c.b), result={})
    rerun = len(c.a.runs) > len(BEFORE_SEEDS) or len(c.b.runs) > len(BEFORE_SEEDS)
    lines.append(f'| #{i} {paper}, {task}: {a} over {b} | {len(c.a.runs)} / {len(c.b.runs)} | '
                 f'{tally(before, data_dir)} | {tally(c, data_dir) if rerun else "not rerun: " + _NER_REASON} |')
  return '\n'.join(lines)


def fields(groups) -> dict:
  return {'rivals': rivals_table(groups), 'knife': knife_table(groups), 'verdicts': knife_verdicts(),
          'knife_seeds': KNIFE_SEEDS, 'at_level': AT_LEVEL}


def key(path, record):
  stem = tables.stem(path, record)
  wanted = {s for _, before, after, *_ in RIVALS for s in (before, after) if s} | {s for _, s, _ in KNIFE_ROWS}
  return stem if stem in wanted else None


COMMAND = 'python -m experiments.rivals'
TABLES = [tables.Table('rivals', 'docs/rivals.md', ('docs/baselines/runs/*.json', 'docs/tagging/runs/*.json'), fields,
                       command=COMMAND, key=key)]


def main():
  print(tables.build(TABLES[0]))


if __name__ == '__main__':
  from implicit_jax.engine import cli  # pylint: disable=import-outside-toplevel
  sys.exit(cli.guarded(main))
