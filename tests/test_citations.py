"""Cora citation fields (implicit_jax/tasks/citations): the reader, each reward rule on hand-written taggings, the
reward's independence from gold tags, the rules decoder against exhaustive search, the split, the semi-supervised
methods on the generated fixture (tests/fixtures/cora, made by its make_fixture.py), and the real file when
../shared/data is there."""

import itertools

import jax.numpy as jnp
import numpy as np
import pytest

from implicit_jax import losses, methods, tasks
from implicit_jax.engine import train
from implicit_jax.tasks.citations import reader, rules
from tests.conftest import ROOT, load_config

FIXTURE = ROOT / 'tests' / 'fixtures' / 'cora'
SHARED = ROOT.parent / 'shared' / 'data'
F = {f: k for k, f in enumerate(reader.FIELDS)}


def one_hot(tags):
  return jnp.asarray(np.eye(len(reader.FIELDS), dtype=np.float32)[[F[t] for t in tags]])


def reward_of(tokens, tags):
  f = rules.features(tokens)
  batch = {'mask': np.ones((1, len(tokens)), np.float32), 'evidence': f.evidence[None], 'joined': f.joined[None]}
  return float(rules.reward(batch, one_hot(tags)[None])[0])


def reference_reward(tokens, tags):
  """The reward on a hard tagging, written out rule by rule (independent of rules.reward's array algebra)."""
  points = total = 0.0
  for t in range(len(tokens)):
    for rule in rules.TOKEN_RULES:
      if rule.fires(tuple(tokens), t):
        total += 1
        points += tags[t] == rule.field
  for t in range(1, len(tokens)):
    if not rules.ends_field(tokens[t - 1]):
      total += rules.BOUNDARY_WEIGHT
      points += rules.BOUNDARY_WEIGHT * (tags[t] == tags[t - 1])
  segments = [k for k, _ in itertools.groupby(tags)]
  extra = sum(segments.count(f) - 1 for f in set(segments))
  points += rules.CONTIGUOUS_WEIGHT / (1 + extra)
  total += rules.CONTIGUOUS_WEIGHT
  return points / total


# --------------------------------------------------------------------------------------------------- reader

def test_reader_reads_the_fixture_and_keeps_punctuation_on_tokens():
  cs = reader.read(FIXTURE / reader.FILE)
  assert len(cs) == 60
  c = cs[0]
  assert len(c.tokens) == len(c.tags) and set(c.tags) <= set(reader.FIELDS)
  assert c.tags[0] == 'author' and c.tokens[-1].endswith('.') and c.tags[-1] == 'date'
  assert c.line == 3


@pytest.mark.parametrize('text, message', [
    ('<ref><author> A. B. </author> <title> X.\n</ref>', 'never closed'),
    ('<ref><author> A. B. </author> <venue> X. </venue>\n</ref>', 'unknown field tag'),
    ('<ref><author> A. <title> B. </title> </author>\n</ref>', 'opens inside'),
    ('<ref><author> A. B. </title>\n</ref>', 'closes'),
    ('<ref><author> A. B. </author>\n', r'refs\.txt:2: <ref> is never closed: add </ref>'),
    ('<ref><author> A. B. </author>\n<ref><title> X. </title>\n</ref>',
     r'refs\.txt:2: <ref> is not closed before the next <ref> on line 3: add </ref>'),
    ('<author> A. B. </author>\n</ref>', r'refs\.txt:3: </ref> closes no <ref>'),
    ('<author> A. B. </author>\n', 'no <ref>'),
])
def test_malformed_references_name_the_file_and_line(tmp_path, text, message):
  path = tmp_path / 'refs.txt'
  path.write_text('<data>\n' + text + '\n</data>\n')
  with pytest.raises(ValueError, match=message) as e:
    reader.read(path)
  assert str(path) in str(e.value)


def test_untagged_text_outside_fields_is_dropped():
  tokens, tags = reader.parse_reference('<author> A. Cau. </author> . <title> Fast code. </title> .', 'here')
  assert tokens == ('A.', 'Cau.', 'Fast', 'code.') and tags == ('author', 'author', 'title', 'title')


# ---------------------------------------------------------------------------------------- rules, one by one

# (rule, tokens, index where it fires, a token where it must not fire)
RULE_CASES = {
    'first_token_author': (['J.', 'Smith.', 'Title.'], 0, 1),
    'year': (['Smith.', 'Fast.', '1992.'], 2, 1),
    'month': (['Smith.', 'Fast.', 'January', '1992.'], 2, 1),
    'pages_word': (['Smith.', 'Fast.', 'pp.', '1-9.'], 2, 1),
    'page_range': (['Smith.', 'Fast.', 'pages', '463-484,'], 3, 1),
    'proceedings': (['Smith.', 'Fast.', 'at', 'Proc.', 'AAAI,'], 3, 1),
    'in_then_title': (['Smith.', 'Fast.', 'In', 'Advances', 'in', 'neural'], 3, 5),
    'journal': (['Smith.', 'Fast.', 'Journal', 'of', 'AI,'], 2, 3),
    'tech': (['Smith.', 'Fast.', 'Technical', 'Report', 'TR-9,'], 2, 4),
    'institution': (['Smith.', 'Fast.', 'Stanford', 'University,'], 3, 2),
    'publisher': (['Smith.', 'Fast.', 'MIT', 'Press,'], 3, 2),
    'editor': (['Smith.', 'Fast.', 'In', 'J.', 'Doe,', 'editor,'], 5, 4),
    'volume': (['Smith.', 'Fast.', 'AI,', '1(2):', '3-9,'], 3, 2),
    'location': (['Smith.', 'Fast.', 'Boston,', 'MA,'], 2, 1),
    'thesis_note': (['Smith.', 'Fast.', 'Submitted', 'to', 'AI.'], 2, 3),
}


def test_every_token_rule_has_a_case():
  assert set(RULE_CASES) == {r.name for r in rules.TOKEN_RULES}


@pytest.mark.parametrize('rule', rules.TOKEN_RULES, ids=lambda r: r.name)
def test_token_rule_fires_where_written_and_earns_its_point(rule):
  tokens, fires_at, silent_at = RULE_CASES[rule.name]
  assert rule.fires(tuple(tokens), fires_at) and not rule.fires(tuple(tokens), silent_at)
  # Two taggings that differ only at the firing token: taking the rule's field earns exactly one point.
  other = 'editor' if rule.field != 'editor' else 'location'  # neither title nor the rule's field
  base = ['title'] * len(tokens)
  with_field = list(base)
  with_field[fires_at] = rule.field
  without = list(base)
  without[fires_at] = other
  f = rules.features(tokens)
  total = f.evidence.sum() + rules.BOUNDARY_WEIGHT * f.joined.sum() + rules.CONTIGUOUS_WEIGHT
  assert reward_of(tokens, with_field) - reward_of(tokens, without) == pytest.approx(1.0 / total, abs=1e-6)


def test_boundary_rule_asks_for_the_same_field_after_unpunctuated_tokens():
  tokens = ['Smith', 'and', 'Jones.', 'Title']
  assert rules.features(tokens).joined.tolist() == [0, 1, 1, 0]
  # One change after 'Jones.' (allowed) against one after 'Smith' (breaks the rule once).
  gap = reward_of(tokens, ['author', 'author', 'author', 'title']) - reward_of(
      tokens, ['author', 'title', 'title', 'title'])
  f = rules.features(tokens)
  total = f.evidence.sum() + rules.BOUNDARY_WEIGHT * f.joined.sum() + rules.CONTIGUOUS_WEIGHT
  assert gap == pytest.approx(rules.BOUNDARY_WEIGHT / total, abs=1e-6)


def test_contiguity_rule_counts_a_reentered_field():
  tokens = ['A.', 'B.', 'C.', 'D.']  # every token ends a field: only the token rules and contiguity count
  contiguous = reward_of(tokens, ['author', 'title', 'title', 'date'])
  reentered = reward_of(tokens, ['author', 'title', 'author', 'date'])   # author twice: V = 1, 1 / (1 + V)
  total = 1.0 + rules.CONTIGUOUS_WEIGHT  # first_token_author fires once
  assert contiguous - reentered == pytest.approx(rules.CONTIGUOUS_WEIGHT * (1 - 1 / 2) / total, abs=1e-6)


def test_reward_equals_the_rule_by_rule_count_on_random_taggings():
  rng = np.random.default_rng(0)
  for c in reader.read(FIXTURE / reader.FILE)[:10]:
    tags = list(c.tags) if rng.random() < 0.3 else [reader.FIELDS[k] for k in rng.integers(0, 13, len(c.tokens))]
    assert reward_of(c.tokens, tags) == pytest.approx(reference_reward(c.tokens, tags), abs=1e-6)


def test_reward_never_reads_gold_tags():
  raw = ('<author> A. Cau, R. Kuiper. </author> <title> Formalising strategy. </title> <booktitle> Proc. 5th '
         'Workshop, </booktitle> <date> 1992. </date>')
  tokens, gold = reader.parse_reference(raw, 'here')
  untagged = reader.untagged_tokens(raw)
  assert untagged == tokens
  f_tagged, f_untagged = rules.features(tokens), rules.features(untagged)
  np.testing.assert_array_equal(f_tagged.evidence, f_untagged.evidence)
  y = one_hot(gold)[None]
  batch = {'mask': np.ones((1, len(tokens)), np.float32), 'evidence': f_untagged.evidence[None],
           'joined': f_untagged.joined[None]}
  with_gold = dict(batch, y=np.asarray(y))
  scrambled = dict(batch, y=np.asarray(one_hot(['title'] * len(tokens))[None]))
  r = float(rules.reward(batch, y)[0])
  assert r == float(rules.reward(with_gold, y)[0]) == float(rules.reward(scrambled, y)[0])


def test_reward_of_a_relaxed_tagging_is_multilinear():
  # On product distributions the token and boundary terms are expectations: a mixture of two taggings that
  # agree on contiguity scores the mixture of their rewards.
  tokens = ['J.', 'Smith', 'and', 'K.', 'Lee.', 'Fast', 'code.', '1992.']
  a = ['author'] * 5 + ['title'] * 2 + ['date']
  b = ['author'] * 5 + ['title'] * 3
  mixed = 0.5 * one_hot(a) + 0.5 * one_hot(b)
  f = rules.features(tokens)
  batch = {'mask': np.ones((1, 8), np.float32), 'evidence': f.evidence[None], 'joined': f.joined[None]}
  # b's date position differs only at the last token, where no boundary rule applies (it follows 'code.').
  assert float(rules.reward(batch, mixed[None])[0]) == pytest.approx(
      0.5 * reward_of(tokens, a) + 0.5 * reward_of(tokens, b), abs=1e-6)


def test_decode_finds_the_best_contiguous_tagging_of_a_small_case():
  tokens = ['J.', 'Smith', 'In', 'Proc.', 'AAAI', '1992.']
  f = rules.features(tokens)
  keep = [F['author'], F['booktitle'], F['date']]          # 3 fields: 3^6 taggings to enumerate
  ev = f.evidence[:, keep]
  best = -1.0
  for tags in itertools.product(range(3), repeat=len(tokens)):
    segments = [k for k, _ in itertools.groupby(tags)]
    if len(segments) != len(set(segments)):
      continue
    pts = sum(ev[t, c] for t, c in enumerate(tags)) + sum(
        rules.BOUNDARY_WEIGHT * f.joined[t] * (tags[t] == tags[t - 1]) for t in range(1, len(tags)))
    best = max(best, pts)
  got = rules.decode(ev, f.joined, beam=4)
  pts = sum(ev[t, c] for t, c in enumerate(got)) + sum(
      rules.BOUNDARY_WEIGHT * f.joined[t] * (got[t] == got[t - 1]) for t in range(1, len(got)))
  assert pts == pytest.approx(best)
  segments = [k for k, _ in itertools.groupby(got.tolist())]
  assert len(segments) == len(set(segments)) and got[0] == 0 and got[3] == 1 and got[-1] == 2


# ------------------------------------------------------------------------------------------------- the task

def fixture_config(method='implicit', **data):
  config = load_config('cora')
  config.method = method
  config.data.data_dir = str(FIXTURE)
  config.data.num_test, config.data.num_dev, config.data.labeled_rows = 15, 10, 20
  config.model.embeddings, config.model.encoder = 'random', 'conv'
  config.model.hidden = config.model.energy_hidden = 16
  config.batch_size, config.num_epochs, config.log_every = 10, 2, 100
  for k, v in data.items():
    config.data[k] = v
  return config


def test_split_is_disjoint_and_draws_differ():
  task = tasks.get_task(fixture_config(labeled=5, draw=0))
  ids = task.info['ids']
  assert ids['test'] == list(range(45, 60)) and len(ids['dev']) == 10 and len(ids['labeled']) == 5
  assert not set(ids['test']) & set(ids['dev']) and not set(ids['labeled']) & set(ids['unlabeled'])
  assert sorted(ids['dev'] + ids['labeled'] + ids['unlabeled']) == list(range(45))
  other = tasks.get_task(fixture_config(labeled=5, draw=1)).info['ids']
  assert other['labeled'] != ids['labeled'] and other['dev'] == ids['dev'] and other['test'] == ids['test']
  train_split = task.splits['train']
  assert len(train_split['y']) == 20 + 30
  unlabeled = train_split['labeled'] == 0
  assert unlabeled.sum() == 30 and np.all(train_split['y'][unlabeled] == -1)
  assert np.all(train_split['mask'][unlabeled].sum(axis=1) > 0)  # the tokens are there, the tags are not


def test_accuracy_on_the_training_split_counts_labeled_tokens_only():
  """``evaluate --split=all`` scores the training split, whose unlabeled rows carry gold -1 on real tokens: the gold
  tagging itself scores 1.0 there (they are not errors), and a tagging wrong only on unlabeled rows too."""
  task = tasks.get_task(fixture_config())
  train_split = task.splits['train']
  gold = np.maximum(train_split['y'], 0)
  assert np.any((train_split['y'] == -1) & (train_split['mask'] > 0))  # the case at issue is in the split
  pred = np.eye(len(reader.FIELDS), dtype=np.float32)[gold]
  assert task.evaluator.score(pred, train_split, {})['accuracy'] == 1.0
  unlabeled = train_split['labeled'] == 0
  pred[unlabeled] = np.roll(pred[unlabeled], 1, axis=-1)  # every unlabeled token gets another tag
  assert task.evaluator.metrics(pred, train_split)['accuracy'] == 1.0
  pred[~unlabeled] = np.roll(pred[~unlabeled], 1, axis=-1)
  assert task.evaluator.metrics(pred, train_split)['accuracy'] == 0.0


def test_bad_settings_name_the_field(tmp_path):
  with pytest.raises(ValueError, match='data.labeled'):
    tasks.get_task(fixture_config(labeled=0))
  with pytest.raises(FileNotFoundError, match='tagged_references.txt'):
    tasks.get_task(fixture_config(data_dir=str(tmp_path)))
  with pytest.raises(ValueError, match='learns from gold outputs only.*data.unlabeled=False'):
    config = fixture_config('feedforward')
    methods.build(tasks.get_task(config), config)


def test_reward_ranking_loss_by_hand():
  e = jnp.array([[0.0], [1.0], [3.0]])
  r = jnp.array([[0.9], [0.5], [0.5]])
  # Ordered pairs: (0, 1) and (0, 2): [1 * 0.4 + 0 - 1]_+ = 0, [0.4 + 0 - 3]_+ = 0; then swap energies.
  assert float(losses.reward_ranking_terms(e, r, 1.0)[0]) == 0.0
  got = float(losses.reward_ranking_terms(e[::-1], r, 1.0)[0])     # energies 3, 1, 0 for rewards .9, .5, .5
  assert got == pytest.approx(((0.4 + 3 - 1) + (0.4 + 3 - 0)) / 2)
  valid = jnp.array([[1.0], [1.0], [0.0]])
  assert float(losses.reward_ranking_terms(e[::-1], r, 1.0, valid)[0]) == pytest.approx(0.4 + 3 - 1)


@pytest.mark.parametrize('method', ['implicit', 'dvn', 'rspen'])
@pytest.mark.e2e
def test_semi_supervised_methods_train_on_the_fixture(tmp_path, method):
  result = train.train_and_evaluate(fixture_config(method), str(tmp_path / method))
  assert np.isfinite(result['test_accuracy']) and result['test_accuracy'] > 1 / 13


def test_implicit_primary_loss_is_cd_on_labeled_rows_and_reward_rank_on_unlabeled_ones():
  import jax  # pylint: disable=import-outside-toplevel
  from implicit_jax.methods import implicit  # pylint: disable=import-outside-toplevel
  config = fixture_config('implicit')
  task = tasks.get_task(config)
  l_aux, l_prim, infnet, energy = implicit.make_losses(task, config)
  params = methods.init_params(task, jax.random.key(0), {'theta': infnet, 'phi': energy})
  train_split = task.splits['train']
  labeled = train_split['labeled']
  rows = np.concatenate([np.flatnonzero(labeled == 1)[:3], np.flatnonzero(labeled == 0)[:3]])
  batch = {k: v[rows][:, :32] if k in task.padded else v[rows] for k, v in train_split.items()}
  batch['y'] = task.space.gold(batch['y'])
  batch = implicit.step_batch(batch, jax.random.key(1), task.space, config.implicit.negatives)
  neg = config.implicit.negatives
  logits = implicit.train_logits(infnet, params['theta'], batch)
  y_neg = task.space.negatives(logits, batch['noise'], neg.sampler, neg.temperature, neg.scale, neg.include_mean)
  e_neg, e_gold = energy.apply(params['phi'], batch, y_neg), energy.apply(params['phi'], batch, batch['y'])
  cost = task.space.cost('hamming')(y_neg, batch['y'], batch['mask'])
  cd = losses.contrastive_divergence_terms(e_neg, e_gold, cost)
  rank = losses.reward_ranking_terms(e_neg, rules.reward(batch, y_neg), config.implicit.reward_margin)
  want = (float(jnp.sum(cd[:3])) + float(jnp.sum(rank[3:]))) / 6
  assert float(l_prim(params['theta'], params['phi'], batch)) == pytest.approx(want, rel=1e-5)
  assert float(jnp.sum(rank[3:])) > 0  # the unlabeled rows contribute
  # L_aux's cross-entropy sees only the labeled rows: unlabeled gold outputs are all zero.
  assert float(jnp.sum(batch['y'][3:])) == 0.0 and float(jnp.sum(batch['y'][:3])) > 0


@pytest.mark.e2e
def test_rspen_trains_on_a_binary_output_space_too():
  config = load_config('tiny')
  config.method, config.num_epochs = 'rspen', 1
  task = tasks.get_task(config)
  method = methods.build(task, config)
  import jax  # pylint: disable=import-outside-toplevel
  from implicit_jax.engine import data  # pylint: disable=import-outside-toplevel
  batch = next(data.train_batches(task, 16, np.random.default_rng(0)))
  state, metrics = jax.jit(method.train_step)(method.init(jax.random.key(0)), batch, jax.random.key(1))
  assert np.isfinite(float(metrics['loss'])) and float(metrics['loss']) > 0
  y = method.predict(state.params, batch)
  assert y.shape == batch['y'].shape and float(jnp.min(y)) >= 0 and float(jnp.max(y)) <= 1


@pytest.mark.skipif(not (SHARED / reader.FILE).is_file(), reason='../shared/data/cora_citation is absent')
def test_real_corpus_statistics_and_rule_precision():
  cs = reader.read(SHARED / reader.FILE)
  assert len(cs) == 500 and sum(len(c.tokens) for c in cs) == 11604
  assert {t for c in cs for t in c.tags} == set(reader.FIELDS)
  hits = total = 0
  for c in cs:
    for t in range(len(c.tokens)):
      for rule in rules.TOKEN_RULES:
        if rule.fires(c.tokens, t):
          total += 1
          hits += c.tags[t] == rule.field
  assert 0.8 < hits / total < 1.0          # informative and noisy
