"""The claims ledger (experiments/claims.py): per-example scores that give back each headline figure, and the paired
bootstrap's verdicts on records made for the purpose."""

import json

import numpy as np
import pytest

from experiments import records
from implicit_jax import runner
from implicit_jax.tasks.mlc.evaluator import F1Evaluator
from implicit_jax.tasks.segmentation.evaluator import IoUEvaluator
from implicit_jax.tasks.tagging.evaluator import AccuracyEvaluator, ChunkF1Evaluator
from experiments import claims, rescore
from tests.conftest import load_config

TAGS = ('O', 'B-PER', 'I-PER', 'E-PER', 'S-PER', 'B-LOC', 'I-LOC', 'E-LOC', 'S-LOC')


def _tagging_split(rng, n=40, length=12):
  lengths = rng.integers(1, length + 1, n)
  mask = (np.arange(length)[None] < lengths[:, None]).astype(np.float32)
  y = np.where(mask > 0, rng.integers(0, len(TAGS), (n, length)), 0)
  return {'y': y, 'mask': mask}, rng.random((n, length, len(TAGS)))


@pytest.mark.parametrize('kind', ['mlc', 'accuracy', 'chunks', 'iou'])
def test_per_example_scores_give_back_the_headline_figure(kind):
  """sum(num) / sum(den) of each evaluator's example_scores is the figure its tables lead with, to 1e-12, on random
  predictions (random tag sequences hold ill-formed chunks, where conlleval and strict differ)."""
  rng = np.random.default_rng(0)
  if kind == 'mlc':
    evaluator, split = F1Evaluator(empty=0.0), {'y': (rng.random((50, 7)) < 0.2).astype(np.float32)}
    pred = rng.random((50, 7)) * 0.8
    figure = evaluator.metrics(pred, split)['f1']
  elif kind == 'iou':
    evaluator, split = IoUEvaluator(), {'y': (rng.random((6, 8, 8)) < 0.3).astype(np.float32)}
    split['y'][0] = 0  # an empty gold mask
    pred = rng.random((6, 8, 8)) * 0.9
    pred[0] = 0  # predicted empty too: IoU 1
    figure = evaluator.metrics(pred, split)['mean_iou']
  else:
    split, pred = _tagging_split(rng)
    if kind == 'accuracy':
      evaluator = AccuracyEvaluator()
      split['y'][0, 0] = -1  # a token without a gold tag is not counted
      figure = evaluator.metrics(pred, split)['accuracy']
    else:
      evaluator = ChunkF1Evaluator(TAGS)
      figure = evaluator.score(pred, split, {})['f1_conlleval']
  num, den = evaluator.example_scores(pred, split)
  assert len(num) == len(den) == len(split['y'])
  assert abs(np.sum(num) / np.sum(den) - figure) < 1e-12
  assert evaluator.headline


def _record(path, seed, value, key='test_f1'):
  path.write_text(json.dumps({'seed': seed, key: value, 'history': []}))
  return path


def _row(tmp_path, name, values, key='test_f1'):
  return claims.Row(name, f'configs/x.py:{name}',
                    {s: _record(tmp_path / f'{name}-{s}.json', s, v, key) for s, v in enumerate(values)}, key)


def test_seed_only_claims_are_oriented_and_judged(tmp_path):
  """A published difference below 0 is its rival's claim; an interval above 0 reproduces, one below reverses, one
  that holds 0 does not reproduce; a row without records is not run."""
  rng = np.random.default_rng(0)
  high, low = _row(tmp_path, 'high', [0.50, 0.52, 0.51]), _row(tmp_path, 'low', [0.40, 0.41, 0.42])
  mixed = _row(tmp_path, 'mixed', [0.45, 0.55, 0.50])
  claim = claims.Claim('paper', 'task', low, high, -2.0)  # the paper has high above low
  assert (claim.a.label, claim.b.label, claim.published) == ('high', 'low', 2.0)
  given = claims.Claim('paper', 'task', low, high, (40.0, 52.0), spreads=(None, 3.5))  # each row's published
  assert (given.a.label, given.numbers, given.published) == ('high', (52.0, 40.0), 12.0)  # number: swapped with it
  assert given.spreads == (3.5, None)
  judged = claims.test_claim(given, None, rng)
  assert np.allclose(judged['own'], (-1.0, 1.0)) and judged['level'] == (True, True)  # 51 - 52, 41 - 40
  result = claims.test_claim(claim, None, rng)
  assert result['verdict'] == 'reproduced' and result['agree'] == 3 and result['basis'].startswith('seeds only')
  assert abs(result['mean'] - 10.0) < 1e-9 and result['low'] <= result['mean'] <= result['high']
  assert result['size'] == 'below'  # the published +2 is under our interval: ours is the larger difference
  reversed_ = claims.Claim('paper', 'task', low, high, 1.0)
  reversed_.result = claims.test_claim(reversed_, None, rng)
  assert reversed_.result['verdict'] == 'reversed' and reversed_.result['size'] == 'above'
  assert claims.verdict_cell(reversed_) == '**reversed**: high ahead by 10.00'  # who gains, by how much
  assert claims.test_claim(claims.Claim('paper', 'task', mixed, _row(tmp_path, 'same', [0.5] * 3), 1.0), None,
                           rng)['verdict'] == 'not shown'
  missing = claims.Row('gone', 'configs/x.py:gone', {}, 'test_f1')
  assert claims.test_claim(claims.Claim('paper', 'task', high, missing, 1.0), None, rng)['verdict'] == 'not run'


def test_a_truncated_record_is_named(tmp_path):
  """It was json's 'Expecting ...: line 1 column 12', under the claim's name alone."""
  high, low = _row(tmp_path, 'high', [0.50, 0.52, 0.51]), _row(tmp_path, 'low', [0.40, 0.41, 0.42])
  cut = low.runs[1]
  cut.write_text(cut.read_text()[:12])
  with pytest.raises(ValueError) as error:
    claims.test_claim(claims.Claim('paper', 'task', high, low, 1.0), None, np.random.default_rng(0))
  assert str(error.value).startswith(f'{cut}: not valid JSON (truncated?): '), error.value


@pytest.mark.e2e
def test_claims_with_predictions_resample_the_test_examples(tmp_path):
  """Two tiny multi-label runs recorded as the scripts record them: the claim of one over the other is judged on
  their per-example scores (basis: examples and seeds), its mean is the recorded difference, a run against itself
  is a difference of exactly 0 (not reproduced), and a record whose figure its decisions do not give is refused,
  naming it."""
  rows = {}
  for name, epochs in (('short', 1), ('long', 3)):
    config = load_config('tiny')
    config.method, config.num_epochs = 'feedforward', epochs
    out = tmp_path / f'{name}.json'
    runner.run_all([runner.Run('run', config, out, str(tmp_path / name))], writer=records.save)
    rows[name] = claims.Row(name, name, {0: out}, 'test_f1')
  rng = np.random.default_rng(0)
  result = claims.test_claim(claims.Claim('paper', 'tiny', rows['long'], rows['short'], 1.0), None, rng)
  a, b = (records.load(rows[n].runs[0])['test_f1'] for n in ('long', 'short'))
  assert result['basis'].startswith('examples (') and abs(result['mean'] - 100 * (a - b)) < 1e-9
  assert result['low'] <= result['mean'] <= result['high']
  same = claims.test_claim(claims.Claim('paper', 'tiny', rows['long'], rows['long'], 1.0), None, rng)
  assert (same['low'], same['high'], same['verdict'], same['p']) == (0.0, 0.0, 'not shown', 1.0)
  bad = json.loads(rows['long'].runs[0].read_text())
  bad['test_f1'] += 0.01
  (tmp_path / 'bad.json').write_text(json.dumps(bad))
  with pytest.raises(ValueError, match='bad.json: per-example scores give'):
    claims.test_claim(claims.Claim('paper', 'tiny', claims.Row('bad', 'bad', {0: tmp_path / 'bad.json'}, 'test_f1'),
                                   rows['short'], 1.0), None, rng)


@pytest.mark.slow
def test_the_committed_ledger_is_what_the_records_give(tmp_path):
  """experiments/claims.py on a copy of the checkout rebuilds README's claims line and the ledger's rows exactly as
  committed (a verdict typed by hand, or one the records no longer give, fails here)."""
  import os  # pylint: disable=import-outside-toplevel
  import shutil  # pylint: disable=import-outside-toplevel
  import subprocess  # pylint: disable=import-outside-toplevel
  import sys  # pylint: disable=import-outside-toplevel
  from tests.test_tagging_data import tagging_data  # pylint: disable=import-outside-toplevel
  data = tagging_data('weizmann_horse')
  root = claims.ROOT
  copy = tmp_path / 'repo'
  for folder in ('configs', 'experiments', 'docs'):
    shutil.copytree(root / folder, copy / folder, ignore=shutil.ignore_patterns('__pycache__'))
  shutil.copy(root / 'README.md', copy / 'README.md')
  env = dict(os.environ, JAX_PLATFORMS='cpu', PYTHONPATH=str(root))
  proc = subprocess.run([sys.executable, '-m', 'experiments.claims', f'--data_dir={data}'], cwd=copy,
                        capture_output=True, text=True, timeout=900, env=env, check=False)
  assert proc.returncode == 0, proc.stderr[-2000:]
  start, end = '<!-- results:claims -->', '<!-- /results:claims -->'  # the block records.write_block writes
  block = lambda text: text[text.index(start):text.index(end)]
  rows = lambda text: [line for line in block(text).splitlines() if line.startswith('|')]
  assert block((copy / 'README.md').read_text()) == block((root / 'README.md').read_text())
  assert rows((copy / 'docs' / 'results.md').read_text()) == rows((root / 'docs' / 'results.md').read_text())


def test_a_claims_interval_does_not_depend_on_the_claims_before_it(tmp_path):
  """Each claim draws its bootstrap from --seed and its own rows: another claim tested first, or a claim added to
  the ledger, leaves its interval as it was; another claim gets other draws."""
  high, low = _row(tmp_path, 'high', [0.50, 0.52, 0.47]), _row(tmp_path, 'low', [0.40, 0.46, 0.42])
  claim, other = claims.Claim('paper', 'task', high, low, 1.0), claims.Claim('paper', 'other task', high, low, 1.0)
  alone = claims.test_claim(claim, None, claims.claim_rng(claim, 0))
  rng = claims.claim_rng(claim, 0)
  claims.test_claim(other, None, claims.claim_rng(other, 0))
  assert claims.test_claim(claim, None, rng) == alone
  assert claims.claim_rng(other, 0).integers(1 << 30) != claims.claim_rng(claim, 0).integers(1 << 30)
  assert claims.claim_rng(claim, 1).integers(1 << 30) != claims.claim_rng(claim, 0).integers(1 << 30)


def test_a_row_off_its_published_level_is_marked(tmp_path):
  """At level: within 2 points of the row's own published number, or within the paper's +- where that is wider."""
  high, low = _row(tmp_path, 'high', [0.50, 0.52, 0.51]), _row(tmp_path, 'low', [0.40, 0.41, 0.42])
  rng = np.random.default_rng(0)
  off = claims.test_claim(claims.Claim('paper', 'task', high, low, (54.0, 41.0)), None, rng)
  assert np.allclose(off['own'], (-3.0, 0.0)) and off['level'] == (False, True)
  wide = claims.test_claim(claims.Claim('paper', 'task', high, low, (54.0, 41.0), spreads=(3.5, 0.1)), None, rng)
  assert wide['level'] == (True, True)


def test_one_seed_without_predictions_has_no_interval_and_no_p_value(tmp_path):
  """A single seed's difference is not an interval: the claim is listed, its verdict 'no interval', and Holm's
  correction is taken over the others only."""
  one = claims.Claim('paper', 'one', _row(tmp_path, 'a1', [0.6]), _row(tmp_path, 'b1', [0.5]), 1.0)
  three = claims.Claim('paper', 'three', _row(tmp_path, 'a3', [0.6, 0.7, 0.65]), _row(tmp_path, 'b3', [0.5] * 3), 1.0)
  for c in (one, three):
    c.result = claims.test_claim(c, None, np.random.default_rng(0))
  assert one.result['verdict'] == 'no interval' and 'p' not in one.result and abs(one.result['mean'] - 10) < 1e-9
  claims.adjust([one, three])
  assert 'holm' not in one.result and three.result['holm'] == three.result['p']  # a family of one
  assert claims.judged([one, three]) == [three]


def test_holm_by_hand():
  """p 0.01, 0.04, 0.03, 0.005: in increasing order times 4, 3, 2, 1 (0.02, 0.03, 0.06, 0.04), each at least the one
  before it (the last 0.04 becomes 0.06)."""
  assert np.allclose(claims.holm([0.01, 0.04, 0.03, 0.005]), [0.03, 0.06, 0.06, 0.02])
  assert claims.holm([0.5, 0.9]) == [1.0, 1.0]  # capped at 1


def test_p_value_reads_the_bootstrap_spread_off_a_normal_curve():
  """Replicates -1 and 1 have standard deviation sqrt(2) (ddof 1): an observed 1.96 sqrt(2) is p = 0.05; a spread of
  0 is p = 1 at a difference of 0 (a run against itself)."""
  assert abs(claims.p_value(1.96 * np.sqrt(2), np.array([-1.0, 1.0])) - 0.0499958) < 1e-6
  assert claims.p_value(-1.96 * np.sqrt(2), np.array([-1.0, 1.0])) == claims.p_value(1.96 * np.sqrt(2),
                                                                                      np.array([-1.0, 1.0]))
  assert claims.p_value(0.0, np.zeros(5)) == 1.0


def test_size_places_the_published_difference_against_the_interval():
  assert [claims.size(2.0, lo, hi) for lo, hi in ((1, 3), (0, 1), (3, 4))] == ['inside', 'above', 'below']
  assert [claims.direction(lo, hi) for lo, hi in ((0.1, 1), (-1, 1), (-1, -0.1))] == ['reproduced', 'not shown',
                                                                                     'reversed']


def test_the_ledger_holds_every_claim_the_papers_make_on_the_tasks_run_here():
  """The claims issue 64 found missing, each a row: the implicit paper's CD over its own SSVM and DVN losses; InfNet+
  Table 2's shared and stacked over separated, Table 4's global energies over stacked; SEAL Table 1's dynamic
  against static (margin, regression) on every dataset run here; SEAL Table 4's FCN over DVN and regression over
  NCE. Every claim quotes its two rows as the paper names them and their numbers, none twice, and every table
  a claim is listed under as not run is a table of one of the papers."""
  items = claims.claims()
  # a rival read from its row tried on dev (claims.dev_chosen) stands for the row the paper names
  base = {alt + w: s + w for s, alts in claims.DEV_ALTERNATIVES.items() for alt in alts for w in ('', '-h400')}
  pairs = {(c.paper, c.task, frozenset(base.get(r.label, r.label) for r in (c.a, c.b))) for c in items}
  assert len(pairs) == len(items)
  has = lambda paper, task, a, b: (paper, task, frozenset((a, b))) in pairs  # noqa: E731
  for dataset, width in (('bibtex', '-h400'), ('delicious', '')):
    for loss in ('ssvm', 'dvn'):
      assert has('implicit T1', dataset, 'implicit-cd' + width, f'implicit-{loss}{width}')
  for dataset in ('pos', 'ner', 'ner_plus'):
    for param in ('shared', 'stacked'):
      assert has('InfNet+ T2', dataset, f'infnet-plus-{param}', 'infnet-plus-separated')
  for dataset in ('ner', 'ner_plus'):
    for ge in 'abc':
      assert has('InfNet+ T4', dataset, f'infnet-plus-stacked-ge-{ge}', 'infnet-plus-stacked')
  for dataset in ('bibtex', 'delicious', 'genbase', 'cal500', 'spo_fun'):
    width = '-h400' if dataset == 'bibtex' else ''
    for loss in ('margin', 'regression', 'nce'):
      assert has('SEAL T1', dataset, f'seal-dynamic {loss}{width}', f'seal-static {loss}{width}')
  assert has('SEAL T4', 'horses', 'fcn', 'dvn') and has('SEAL T4', 'horses', 'seal-regression', 'seal-nce')
  for c in items:
    assert len(c.names) == 2 and all(c.names) and len(c.numbers) == 2, c
    assert c.published == pytest.approx(c.numbers[0] - c.numbers[1]) and c.published > 0, c
  papers = {c.paper.split()[0] for c in items}
  assert {paper.split()[0] for paper, _, _ in claims.NOT_RUN} <= papers


def test_the_forest_plot_draws_every_claim_with_a_difference(tmp_path):
  """One line per claim that has a difference of ours, numbered as in the table, each family in its panel; a claim
  not run has none."""
  rng = np.random.default_rng(0)
  high, low = _row(tmp_path, 'high', [0.50, 0.52, 0.51]), _row(tmp_path, 'low', [0.40, 0.41, 0.42])
  items = [claims.Claim('implicit T1', 'bibtex', high, low, (50.0, 45.0)),
           claims.Claim('implicit T1', 'bibtex', high, claims.Row('gone', 'gone', {}, 'test_f1'), 1.0),
           claims.Claim('implicit T4', 'cora, 5 labeled', low, high, (40.0, 52.0)),
           claims.Claim('SEAL T1', 'genbase', _row(tmp_path, 'a1', [0.6]), _row(tmp_path, 'b1', [0.5]), 1.0)]
  for c in items:
    c.result = claims.test_claim(c, None, rng)
  claims.adjust(items)
  labels = claims.draw(items, tmp_path / 'forest.png')
  assert labels == ['#1 implicit T1, bibtex: high over low', '#4 SEAL T1, genbase: a1 over b1',
                    '#3 implicit T4, cora, 5 labeled: high over low']
  assert (tmp_path / 'forest.png').read_bytes()[:8] == b'\x89PNG\r\n\x1a\n'


def test_each_reading_of_a_records_ner_tags_is_what_conllevals_rules_give():
  """A committed NER record's kept test decisions, read both ways: the ledger's per-sentence scores under each
  reading add up to the F1 that conlleval's counting loop gives with that reading's rules (tests/test_tagging_data.py
  transcribes them), the IOB2 one to the record's own test_f1_conlleval; the two differ on this record."""
  from tests.test_tagging_data import BIOES, IOB2, conlleval_pl_counts, tagging_data  # pylint: disable=import-outside-toplevel
  from implicit_jax.tasks.tagging.evaluator import sentences  # pylint: disable=import-outside-toplevel
  data = tagging_data('conll2003')
  path = claims.ROOT / 'docs' / 'tagging' / 'runs' / 'ner-bilstm-seed0.json'
  record = records.load(path)
  task, relaxed = rescore.predicted(record, str(data))
  split, evaluator = task.splits['test'], task.evaluator
  names = evaluator.tag_names
  gold = [[names[t] for t in s] for s in sentences(split['y'], split['mask'])]
  pred = [[names[t] for t in s] for s in sentences(np.argmax(relaxed['test'], axis=-1), split['mask'])]
  f1 = {}
  for reading, rules in (('conlleval', IOB2), ('conlleval_bioes', BIOES)):
    num, den = claims._scores(record, path, 'test_f1_conlleval', str(data), reading)  # pylint: disable=protected-access
    found_gold, found_pred, correct = conlleval_pl_counts(gold, pred, rules)
    assert (num.sum(), den.sum()) == (2 * correct, found_gold + found_pred), reading
    f1[reading] = num.sum() / den.sum()
  assert abs(f1['conlleval'] - record['test_f1_conlleval']) < 1e-12
  assert f1['conlleval'] != f1['conlleval_bioes']


def test_a_verdict_that_changes_with_the_reading_says_so():
  same = {'verdict': 'not shown', 'size': 'inside', 'depends': False,
          'reading': {'mean': 0.1, 'low': -0.2, 'high': 0.4, 'verdict': 'not shown', 'size': 'inside'}}
  assert claims.reading_note(same) == ''
  moved = {**same, 'depends': True, 'reading': {'mean': 0.78, 'low': 0.13, 'high': 1.45, 'verdict': 'reproduced',
                                                'size': 'inside'}}
  assert claims.reading_note(moved) == ('; **depends on the reading**: with the tags read BIOES as it stands, +0.78 '
                                        '[+0.13, +1.45], reproduced, inside')


def test_knife_edges_lists_the_claims_whose_verdict_moves_with_the_bootstrap_seed(tmp_path, capsys):
  """A claim whose interval sits on 0 changes verdict from one bootstrap seed to another; one far from 0 does not."""
  diffs = [0.52, -0.58, 1.32, 0.42, -0.18, 1.12, 0.72, 0.02]  # 8 seeds: the interval's low end near 0
  edge = (_row(tmp_path, 'e1', [0.5 + d / 100 for d in diffs]), _row(tmp_path, 'e2', [0.5] * 8))
  far = (_row(tmp_path, 'f1', [0.60, 0.61, 0.62]), _row(tmp_path, 'f2', [0.40, 0.41, 0.42]))
  ledgers = []
  for seed in range(20):
    items = [claims.Claim('paper', 'edge', *edge, 1.0), claims.Claim('paper', 'far', *far, 1.0)]
    for c in items:
      c.result = claims.test_claim(c, None, np.random.default_rng(seed))
    ledgers.append(items)
  assert claims.knife_edges(ledgers) == 0
  lines = capsys.readouterr().out.splitlines()
  assert len(lines) == 2 and lines[0].startswith('#1 paper edge e1 over e2: ') and lines[0].endswith(
      'of 20 bootstrap seeds') and lines[1] == '1 knife edges over 20 bootstrap seeds'


def test_a_rival_is_read_from_whichever_of_its_rows_scores_higher_on_dev(tmp_path):
  """claims.dev_chosen picks on the mean dev figure, never on test; a row without records is passed over."""
  def row(name, devs, tests):
    for seed, (dev, test) in enumerate(zip(devs, tests)):
      (tmp_path / f'{name}-seed{seed}.json').write_text(json.dumps({'dev_f1': dev, 'test_f1': test, 'seed': seed}))
    return claims.Row(name, name, {i: tmp_path / f'{name}-seed{i}.json' for i in range(3)}, 'test_f1')
  before, after = row('dvn', [0.30, 0.32], [0.50, 0.52]), row('dvn-mirror', [0.40, 0.41], [0.20, 0.21])
  assert claims.dev_chosen([before, after]).label == 'dvn-mirror'
  assert claims.dev_chosen([after, before]).label == 'dvn-mirror'
  assert claims.dev_chosen([before, row('empty', [], [])]).label == 'dvn'
  # an alternative without records on a task leaves the row as it is, its records unread (POS's hold no dev_f1)
  (tmp_path / 'pos-seed0.json').write_text(json.dumps({'dev_accuracy': 0.8, 'seed': 0}))
  pos = claims.Row('pos', 'pos', {0: tmp_path / 'pos-seed0.json'}, 'test_accuracy')
  assert claims.dev_chosen([pos, row('pos-e30', [], [])]) is pos
  (tmp_path / 'dvn-seed0.json').write_text('{"dev_f1": 0.3')
  with pytest.raises(rescore.BadRecord, match='dvn-seed0.json'):
    claims.dev_chosen([before, after])
