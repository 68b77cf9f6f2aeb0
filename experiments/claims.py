r"""The ledger of the papers' claims: each comparative claim of the three papers on a task run here, tested on the
committed run records.

  python -m experiments.claims --data_dir=../shared/data    # docs/results.md's results:claims block, README's line

A claim is "A over B" on one task: two rows of one published table (the implicit paper's, InfNet+'s or SEAL's),
A the one the paper puts higher, with the paper's difference A - B. Ours is the same difference on test, each row
at our protocol for that family (the rows of its own table: docs/baselines.md, docs/tagging.md, docs/horses.md "At
SEAL's protocol", docs/cora.md), paired by seed (Cora: by labeled draw), in the paper's metric x 100: example F1 at
0.5 (multi-label), token accuracy (POS, Cora), conlleval chunk F1 (NER; strict chunk F1 where a row's records
predate conlleval's), mean IoU (horses).

The interval is a paired bootstrap (95%, percentiles of ``REPLICATES`` replicates, seeded per claim by ``--seed``
and the claim's rows, so that a row's interval stays put when another row's records change): each replicate draws
the seeds and the test examples with replacement, the same examples for both rows and every drawn seed, and
recomputes each row's figure from its per-example scores (``Evaluator.example_scores``, read from the record's
kept decisions through experiments/rescore.py, which checks the gold data against the record first); a claim whose
records keep no predictions (made before records kept them) draws the seeds alone, and says so ("seeds only":
a narrower interval than the test set's sampling error would give). Each record's per-example scores must give
back its recorded figure, or the claim fails with the record named.

Verdict, against the sign of the published difference: **reproduced** when the interval lies on its side of 0,
**reversed** when it lies on the other side, **not reproduced** when it holds 0; **not run** when a row has no
records at that protocol (the note says why). "seeds agreeing": the seeds whose own difference has the
published sign.
"""

import argparse
import datetime
import sys
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
# The modules beside this one hold the published numbers and the record files of each family's table.
from experiments import compare_methods, records, reproduce_cora, reproduce_horses, reproduce_tagging, rescore
from implicit_jax.engine import cli

REPLICATES = 2000
LEVEL = 0.95
RESULTS, README = ROOT / 'docs' / 'results.md', ROOT / 'README.md'


@dataclass
class Row:
  """One side of a claim: ``runs`` maps a seed (or draw) to its record's path; ``key`` is the recorded test figure
  in the paper's metric, ``fallback`` the one read where a record lacks ``key``."""
  label: str
  config: str
  runs: dict
  key: str
  fallback: str = ''


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

  def __post_init__(self):
    if isinstance(self.published, tuple):
      self.numbers, self.published = self.published, self.published[0] - self.published[1]
    # A claim reads "the paper's winner over the other": a table row below its rival is that rival's claim.
    if self.published < 0:
      self.a, self.b, self.published = self.b, self.a, -self.published
      self.numbers = self.numbers[::-1]


def _existing(paths: dict) -> dict:
  return {seed: path for seed, path in paths.items() if path.exists()}


def mlc(dataset, system):
  runs = _existing({s: compare_methods.run_file(dataset, system, s) for s in range(10)})
  return Row(system, compare_methods.mlc.config_name(dataset, system), runs, 'test_f1')


def tagging(dataset, system):
  runs = _existing({s: ROOT / 'docs' / 'tagging' / 'runs' / f'{dataset}-{system}-seed{s}.json' for s in range(10)})
  key = 'test_accuracy' if dataset == 'pos' else 'test_f1_conlleval'
  return Row(system, f'configs/{dataset}.py:{system}', runs, key, '' if dataset == 'pos' else 'test_f1')


def horses(system):
  """A row of the horses section at SEAL's protocol that the README's row reads (reproduce_horses.summary_scale)."""
  scale = reproduce_horses.summary_scale()
  folder = reproduce_horses.SCALES[scale][1]
  runs = _existing({s: folder / f'{system}-seed{s}.json' for s in range(10)})
  return Row(system, f'configs/horses.py:{system},{scale}', runs, 'test_mean_iou')


def cora(system, size):
  runs = _existing({d: reproduce_cora.RUNS / f'cora-{system}-l{size}-d{d}.json' for d in reproduce_cora.DRAWS})
  return Row(system, f'configs/cora.py:{system} (--config.data.labeled={size})', runs, 'test_accuracy')


def _published_tagging(dataset, a, b, source):
  """(A, B) of one table: ``source`` names B's entry, A's is of the same table."""
  pub = reproduce_tagging.PUBLISHED[dataset]
  table = source.split(',')[0]
  return pub[a][table], pub[b][source]


def claims() -> list[Claim]:
  out = []
  seal, impl = compare_methods.SEAL, compare_methods.IMPLICIT_PAPER
  # The implicit paper, Table 1: implicit CD over each system of its table. Bibtex at SEAL's network sizes (the
  # rows docs/baselines.md leads with); delicious' rivals ran at 150 units only, so its pairs are at 150 units.
  for dataset, size in (('bibtex', '-h400'), ('delicious', '')):
    for rival in ('mbce', 'spen', 'dvn', 'nce-gbi'):
      out.append(Claim('implicit T1', dataset, mlc(dataset, 'implicit-cd' + size), mlc(dataset, rival + size),
                       (impl['implicit-cd'][dataset], impl[rival][dataset])))
    # The same primary loss trained implicitly or with GBI inference: SSVM (SPEN's loss) and DVN's regression.
    for loss, rival in (('ssvm', 'spen'), ('dvn', 'dvn')):
      out.append(Claim('implicit T1', dataset, mlc(dataset, f'implicit-{loss}{size}'), mlc(dataset, rival + size),
                       (impl[f'implicit-{loss}'][dataset], impl[rival][dataset])))
  # SEAL Table 1: SEAL-dynamic (its best, NCE) over the cross-entropy task net; SEAL-dynamic regression over DVN
  # (the same regression loss with GBI inference); dynamic over static (NCE).
  for dataset, size in (('bibtex', '-h400'), ('delicious', '')):
    for a, b in (('seal-dynamic nce', 'mbce'), ('seal-dynamic regression', 'dvn'),
                 ('seal-dynamic nce', 'seal-static nce')):
      out.append(Claim('SEAL T1', dataset, mlc(dataset, a + size), mlc(dataset, b + size),
                       (seal[a][dataset], seal[b][dataset])))
  # Sequence labeling: the implicit paper's Tables 3 (NER, NER+) and 9 (POS); InfNet+ Table 2.
  # POS's InfNet number in Table 9 cites Tu & Gimpel 2019 (reproduce_tagging.PUBLISHED says why it is kept).
  ner_rivals = (('bilstm', 'impl T3'), ('spen', 'impl T3'), ('infnet', 'impl T3'), ('infnet-plus-stacked', 'impl T3'))
  for dataset, rivals in (('pos', (('bilstm', 'impl T9'), ('crf', 'impl T9'), ('spen', 'impl T9'),
                                   ('infnet', 'impl T9, cites Tu & Gimpel 2019'))),
                          ('ner', ner_rivals), ('ner_plus', ner_rivals)):
    for rival, source in rivals:
      out.append(Claim(f'implicit {source.split()[1].strip(",")}', dataset, tagging(dataset, 'implicit-cd'),
                       tagging(dataset, rival), _published_tagging(dataset, 'implicit-cd', rival, source)))
  for dataset in ('pos', 'ner', 'ner_plus'):
    for rival, source in (('bilstm', 'InfNet+ T2'), ('infnet', reproduce_tagging._INFNET_2018)):  # pylint: disable=protected-access
      pub = reproduce_tagging.PUBLISHED[dataset]
      out.append(Claim('InfNet+ T2', dataset, tagging(dataset, 'infnet-plus-stacked'), tagging(dataset, rival),
                       (pub['infnet-plus-stacked']['InfNet+ T2'], pub[rival][source])))
  # Horses: SEAL Table 4 (SEAL's protocol, which our section follows) and the implicit paper's Table 10 (another
  # split and resolution: its difference is set beside ours at SEAL's protocol).
  pub = reproduce_horses.PUBLISHED
  no_dvn = 'DVN has no record in this section of docs/horses.md "At SEAL\'s protocol" (its row says why)'
  out.append(Claim('SEAL T4', 'horses', horses('seal-regression'), horses('fcn'),
                   (pub['seal-regression']['SEAL T4'], pub['fcn']['SEAL T4'])))
  out.append(Claim('SEAL T4', 'horses', horses('seal-nce'), horses('fcn'),
                   (pub['seal-nce']['SEAL T4'], pub['fcn']['SEAL T4'])))
  out.append(Claim('SEAL T4', 'horses', horses('seal-regression'), horses('dvn'),
                   (pub['seal-regression']['SEAL T4'], pub['dvn']['SEAL T4']), no_dvn))
  out.append(Claim('implicit T10', 'horses', horses('implicit-cd'), horses('dvn'),
                   (pub['implicit-cd']['implicit T10'], pub['dvn']['implicit T10']), no_dvn))
  # Cora: the implicit paper's Table 4, implicit CD over R-SPEN and DVN at each labeled-set size.
  names = reproduce_cora.PUBLISHED
  for i, size in enumerate(reproduce_cora.SIZES):
    for rival, name in (('rspen', 'R-SPEN'), ('dvn', 'DVN')):
      out.append(Claim('implicit T4', f'cora, {size} labeled', cora('implicit-cd', size), cora(rival, size),
                       (names['implicit CD'][i], names[name][i])))
  return out


def _scores(record, path, key, data_dir):
  """Per-example ``(num, den)`` of the record's test predictions, checked against its recorded ``key``."""
  task, relaxed = rescore.predicted(record, data_dir)
  evaluator = task.evaluator
  if f'test_{evaluator.headline}' != key:
    raise ValueError(f'{path}: the evaluator\'s headline figure is test_{evaluator.headline}, the claim reads {key}')
  num, den = (np.asarray(v, np.float64) for v in evaluator.example_scores(relaxed['test'], task.splits['test']))
  if abs(num.sum() / den.sum() - record[key]) > 1e-6:
    raise ValueError(f'{path}: per-example scores give {num.sum() / den.sum():.8f}, the record {record[key]:.8f}')
  return num, den


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


def test_claim(claim: Claim, data_dir, rng) -> dict:
  """Fills ``claim.result``: the paired mean, interval, seeds agreeing, basis and verdict."""
  seeds = sorted(set(claim.a.runs) & set(claim.b.runs))
  if not seeds:
    missing = [r.label for r in (claim.a, claim.b) if not r.runs]
    return {'verdict': 'not run', 'why': claim.note or f'no records of {", ".join(missing) or "common seeds"}'}
  loaded = {side: {s: _load(row.runs[s]) for s in seeds} for side, row in (('a', claim.a), ('b', claim.b))}
  if claim.a.key != claim.b.key:
    raise ValueError(f'{claim.a.label} and {claim.b.label}: rows of one claim read one figure')
  key = claim.a.key  # both rows in the paper's metric, or both in the fallback where one record lacks it
  if not all(key in r for side in loaded.values() for r in side.values()):
    key = claim.a.fallback
    if not key:
      raise ValueError(f'{claim.a.label} over {claim.b.label}: a record holds no {claim.a.key}')
  metric = {'test_f1_conlleval': 'conlleval F1'}.get(key, 'strict chunk F1' if key != claim.a.key else '')
  diffs = np.array([100 * (loaded['a'][s][key] - loaded['b'][s][key]) for s in seeds])
  seed_draw = rng.integers(len(seeds), size=(REPLICATES, len(seeds)))
  if key == claim.a.key and all(records.rescorable(r) for side in loaded.values() for r in side.values()):
    per = {side: [_scores(loaded[side][s], row.runs[s], key, data_dir) for s in seeds]
           for side, row in (('a', claim.a), ('b', claim.b))}
    sizes = {len(num) for scores in per.values() for num, _ in scores}
    if len(sizes) != 1:
      raise ValueError(f'{claim.a.label} over {claim.b.label}: test sets of {sorted(sizes)} examples; a paired '
                       'bootstrap needs one test set')
    n = sizes.pop()
    weights = rng.multinomial(n, np.full(n, 1.0 / n), size=REPLICATES).astype(np.float64)  # [R, n]
    figure = {side: np.stack([(weights @ num) / (weights @ den) for num, den in per[side]]) for side in per}  # [S, R]
    by_seed = 100 * (figure['a'] - figure['b'])
    replicates = np.take_along_axis(by_seed.T, seed_draw, axis=1).mean(axis=1)
    basis = f'examples ({n}) and seeds'
  else:
    replicates = diffs[seed_draw].mean(axis=1)
    basis = 'seeds only (records keep no predictions)'
  low, high = np.quantile(replicates, [(1 - LEVEL) / 2, (1 + LEVEL) / 2])
  # every claim's published difference is positive (Claim.__post_init__): its side of 0 is above
  verdict = 'reproduced' if low > 0 else 'reversed' if high < 0 else 'not reproduced'
  own = ''
  if claim.numbers and key == claim.a.key:  # each row against its own published number: a rival far under its own
    means = [100 * np.mean([r[key] for r in loaded[side].values()]) for side in ('a', 'b')]  # is a weak rival
    own = ', '.join(f'{m - n:+.2f}' for m, n in zip(means, claim.numbers))
  return {'own': own, 'mean': float(diffs.mean()), 'low': float(low), 'high': float(high), 'seeds': len(seeds),
          'agree': int(np.sum(diffs > 0)), 'basis': basis, 'verdict': verdict, 'metric': metric}


def table(items: list[Claim]) -> list[str]:
  lines = ['| paper | task | claim: A over B | published A - B | ours A - B [95% interval] | seeds agreeing | basis '
           '| A, B: ours - published | verdict |', '|---|---|---|---|---|---|---|---|---|']
  for c in items:
    r = c.result
    claim = f'`{c.a.config}` over `{c.b.config}`'
    if r['verdict'] == 'not run':
      lines.append(f'| {c.paper} | {c.task} | {claim} | {c.published:+.2f} | – | – | {r["why"]} | – | not run |')
      continue
    metric = f' ({r["metric"]})' if r['metric'] else ''
    lines.append(f'| {c.paper} | {c.task} | {claim} | {c.published:+.2f} | {r["mean"]:+.2f} [{r["low"]:+.2f}, '
                 f'{r["high"]:+.2f}]{metric} | {r["agree"]} of {r["seeds"]} | {r["basis"]} | {r["own"] or "–"} | '
                 f'**{r["verdict"]}** |')
  return lines


def counts(items: list[Claim]) -> str:
  order = ('reproduced', 'not reproduced', 'reversed', 'not run')
  got = [c.result['verdict'] for c in items]
  return ', '.join(f'{got.count(v)} {v}' for v in order)


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument('--data_dir', default=str(ROOT.parent / 'shared' / 'data'),
                      help='the data folder the records\' gold is read from (their decisions are scored against it)')
  parser.add_argument('--seed', type=int, default=0, help='the bootstrap\'s seed')
  args = parser.parse_args(argv)
  if not Path(args.data_dir).is_dir():
    print(f'--data_dir: no such folder {args.data_dir}', file=sys.stderr)
    return 1
  items = claims()
  for c in items:
    try:
      c.result = test_claim(c, args.data_dir, claim_rng(c, args.seed))
    except (ValueError, OSError, rescore.NotRescorable) as e:  # a record that cannot be read: nothing is written
      print(f'{c.paper} {c.task} {c.a.label} over {c.b.label}: {rescore.cause(e)}; the ledger is not rewritten',
            file=sys.stderr)
      return 1
    print(f'{c.paper:12} {c.task:18} {c.a.label} over {c.b.label}: {c.result["verdict"]}', flush=True)
  caption = (f'Rebuilt by `python -m experiments.claims --data_dir=../shared/data` on {datetime.date.today()} from the '
             f'committed run records ({len(items)} claims: {counts(items)}). One row per comparative claim of the '
             'three papers on a task run here, A the row the paper puts higher: the published difference A - B '
             '(x 100, the paper\'s metric and '
             'table), ours on test at our protocol for the family (paired by seed; Cora by labeled draw), its '
             f'{LEVEL:.0%} interval from a paired bootstrap ({REPLICATES} replicates) over the test examples and the '
             'seeds, or over the seeds alone where a row\'s records keep no predictions ("basis": an interval over 3 '
             'seeds alone leaves out the test set\'s sampling error, so it is narrower), the seeds whose '
             'own difference has the published sign, and the verdict against that sign: reproduced (the interval '
             'on its side of 0), reversed (on the other side), not reproduced (holds 0). "A, B: ours - published": '
             'each row\'s own test score minus its number in the same table (a protocol apart, so an offset shared '
             'by both rows is expected; a rival far under its own number makes a weak claim of beating it). The '
             'method: '
             '`experiments/claims.py`\'s docstring.')
  body = '\n'.join([caption, '', *table(items)])
  records.write_block(RESULTS, 'claims', body)
  summary = ('**The papers\' claims, tested** '
             '([docs/results.md](docs/results.md#the-papers-claims-experimentsclaimspy)'
             f'): of {len(items)} comparative claims of the three papers on the tasks run here, {counts(items)}, '
             'each with a paired bootstrap interval over test examples and seeds (`python -m experiments.claims`).')
  records.write_block(README, 'claims', summary)
  print(f'{len(items)} claims: {counts(items)}')
  return 0


if __name__ == '__main__':
  sys.exit(cli.guarded(main))
