"""The tagging task plugged into the engine: the generated HMM problem and its known answer, padded and
bucketed batches, one compilation per padded shape, and four methods trained on it by the real loop."""

import itertools

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from implicit_jax import methods, tasks
from implicit_jax.engine import data, train
from implicit_jax.methods import implicit
from implicit_jax.tasks.tagging import synthetic
from tests.conftest import load_config
from implicit_jax.testing import flat64


@pytest.fixture(scope='module')
def task():
  return tasks.get_task(load_config('tiny_tagging'))


def test_posterior_decoding_is_the_exact_marginal_argmax():
  """forward-backward against enumeration of every tag sequence of short sentences."""
  params = synthetic.hmm(3, 8, 0.4)
  start, transition, emission = params
  words, tags, lengths = synthetic.sample(np.random.default_rng(0), 20, params, 2, 4)
  decoded = synthetic.posterior_decode(words, lengths, params)
  for i, length in enumerate(lengths):
    marginals = np.zeros((length, 3))
    for seq in itertools.product(range(3), repeat=length):
      p = start[seq[0]] * emission[seq[0], words[i, 0]]
      for t in range(1, length):
        p *= transition[seq[t - 1], seq[t]] * emission[seq[t], words[i, t]]
      marginals[np.arange(length), seq] += p
    np.testing.assert_array_equal(decoded[i, :length], marginals.argmax(axis=1))
    assert np.all(tags[i, length:] == -1) and np.all(words[i, length:] == 0)


def test_the_known_answers_order_the_baselines(task):
  info = task.info
  # Context matters (ambiguous words), and the most frequent tag alone is far worse.
  assert info['bayes_accuracy'] > info['word_only_accuracy'] + 0.1 > info['majority_accuracy'] + 0.2
  assert set(task.splits) == {'train', 'dev', 'test'}
  assert task.splits['train']['x'].shape == task.splits['train']['mask'].shape == (256, 12)


def test_training_batches_are_bucketed_and_cover_each_epoch(task):
  lengths = task.splits['train']['mask'].sum(axis=1)
  seen, shapes = [], set()
  for batch in data.train_batches(task, 16, np.random.default_rng(3)):
    shapes.add(batch['x'].shape)
    real = batch['mask'].sum(axis=1)
    assert batch['x'].shape[1] == (6 if real.max() <= 6 else 12)  # the smallest bucket holding the batch
    assert batch['y'].shape == (*batch['x'].shape, 4)              # one-hot gold rows, zero on padding
    np.testing.assert_array_equal(batch['y'].sum(axis=-1), batch['mask'])
    seen.append(real)
  assert shapes == {(16, 6), (16, 12)}
  np.testing.assert_array_equal(np.sort(np.concatenate(seen)), np.sort(lengths))  # 256 = 16 full batches


def test_one_compilation_per_padded_shape(task):
  """The real jitted step and predictor: a trace per bucket, none for a repeated shape or the padded tail."""
  config = load_config('tiny_tagging')
  method = methods.build(task, config)
  traces = {'step': 0, 'predict': 0}

  def counting(fn, name):
    def counted(*args):
      traces[name] += 1  # runs when jax traces, not when the compiled step runs
      return fn(*args)
    return counted

  method = method._replace(train_step=counting(method.train_step, 'step'),
                           predict=counting(method.predict, 'predict'))
  _, replicated, sharded = train.data_parallel(config)
  rng = jax.random.key(config.seed)  # the keys train.py derives: the same programs as the training test's
  step = train.make_train_step(method, jax.random.fold_in(rng, 1), replicated, sharded)
  state = jax.device_put(method.init(jax.random.fold_in(rng, 0)), replicated)
  shapes = set()
  for batch in data.train_batches(task, config.batch_size, np.random.default_rng([0, 0])):
    shapes.add(batch['x'].shape)
    state, metrics = step(state, data.shard_batch(batch, sharded))
  chex.assert_tree_all_finite(metrics)
  assert traces['step'] == len(shapes) == 2
  for eval_batch_size in (64, 48):  # 48: the dev split's 64 sentences end in a tail of 16, padded to 48
    config.eval_batch_size = eval_batch_size
    traces['predict'] = 0
    predict = train.make_predict(method, replicated, sharded)
    shapes = set()
    for split in ('dev', 'test', 'dev'):
      for batch, _ in data.prediction_batches(task, task.splits[split], eval_batch_size):
        assert len(batch['x']) == eval_batch_size
        shapes.add(batch['x'].shape)
      pred = data.predict(task, lambda b: predict(state.params, b), task.splits[split], eval_batch_size, sharded)
      assert pred.shape == (len(task.splits[split]['y']), 12, 4)
    assert traces['predict'] == len(shapes) <= 2


def test_padding_does_not_change_outputs_or_energies(task):
  """A batch cut to its bucket and the same batch padded to the split's width give the same relaxed outputs and
  energies on the real tokens: the encoders and the pairwise term honour the mask."""
  for encoder in ('conv', 'bilstm'):
    config = load_config('tiny_tagging')
    config.model.encoder = encoder
    t = tasks.get_task(config)
    net, energy = t.make_inference_net(), t.make_energy()
    arrays = t.splits['dev']
    short = np.flatnonzero(arrays['mask'].sum(axis=1) <= 6)[:8]
    wide = {k: v[short] for k, v in t.inputs(arrays).items()}
    cut = {k: v[:, :6] for k, v in wide.items()}
    y_wide = jnp.asarray(t.space.gold(arrays['y'][short]))
    theta, phi = jax.jit(net.init)(jax.random.key(0), cut), jax.jit(energy.init)(jax.random.key(1), cut, y_wide[:, :6])
    outputs = jax.jit(lambda b, y: (t.space.relax(net.apply(theta, b)), energy.apply(phi, b, y)))
    (a, e_cut), (b, e_wide) = outputs(cut, y_wide[:, :6]), outputs(wide, y_wide)
    mask = cut['mask'][..., None] > 0
    np.testing.assert_allclose(np.where(mask, a, 0), np.where(mask, b[:, :6], 0), atol=1e-5)
    np.testing.assert_allclose(e_cut, e_wide, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize('method', [pytest.param(m, marks=pytest.mark.e2e) if m != 'feedforward' else m
                                    for m in ('implicit', 'feedforward', 'spen', 'infnet')])
def test_methods_learn_the_synthetic_tagging_task(tmp_path, method):
  """The real loop on the tiny tagging task (3 epochs, 256 sentences): test token accuracy at least 0.3 above
  always predicting the most frequent tag, and above the best tagger that ignores context."""
  config = load_config('tiny_tagging')
  config.method = method
  config.infnet.finetune_epochs = 1
  result = train.train_and_evaluate(config, str(tmp_path))
  info = result['task_info']
  assert result['test_accuracy'] > info['majority_accuracy'] + 0.3, result['test_accuracy']
  assert result['test_accuracy'] > info['word_only_accuracy'], (result['test_accuracy'], info)
  assert result['test_accuracy'] <= info['bayes_accuracy'] + 0.03  # no better than the truth allows (noise only)
  assert result['dev_accuracy'] == max(h['dev_accuracy'] for h in result['history'])


def test_energy_dropout_is_one_mask_per_step_and_off_at_evaluation():
  """model.energy_dropout: a training batch's ``energy_dropout`` key fixes one mask (E stays a function within the
  step, as the implicit gradient needs), a batch without it is the deterministic energy, and rate 0 ignores it."""
  config = load_config('tiny_tagging')
  config.model.energy_dropout = 0.5
  task = tasks.get_task(config)
  energy = task.make_energy()
  phi = methods.init_params(task, jax.random.key(0), {'phi': energy})['phi']
  batch = {k: jnp.asarray(v) for k, v in next(data.train_batches(task, 8, np.random.default_rng(0))).items()}
  key = lambda i: jax.random.key_data(jax.random.key(i))  # pylint: disable=unnecessary-lambda-assignment
  e = lambda b: energy.apply(phi, b, b['y'])  # pylint: disable=unnecessary-lambda-assignment
  clean, drop1 = e(batch), e(dict(batch, energy_dropout=key(1)))
  np.testing.assert_array_equal(drop1, e(dict(batch, energy_dropout=key(1))))     # same key, same function
  assert not np.allclose(drop1, clean) and not np.allclose(drop1, e(dict(batch, energy_dropout=key(2))))
  config.model.energy_dropout = 0.0
  plain = tasks.get_task(config).make_energy()
  np.testing.assert_array_equal(plain.apply(phi, batch, batch['y']),
                                plain.apply(phi, dict(batch, energy_dropout=key(1)), batch['y']))
  config.model.energy_dropout = 1.0
  with pytest.raises(ValueError, match=r'model.energy_dropout must be in \[0, 1\)'):
    tasks.get_task(config)


@pytest.mark.parametrize('method', ['crf', 'spen', 'implicit'])
def test_every_methods_step_draws_the_energy_dropout(method):
  """methods.build gives every method's step the energy's key: from the same state and step key, rate 0.3 moves
  the energy otherwise than rate 0 (the methods' own random streams are untouched by it, so nothing else differs);
  the implicit method's two losses read one key."""
  config = load_config('tiny_tagging')
  config.method = method
  batch, steps = None, []
  for rate in (0.0, 0.3):
    config.model.energy_dropout = rate
    task = tasks.get_task(config)
    if batch is None:
      batch = {k: jnp.asarray(v) for k, v in next(data.train_batches(task, 16, np.random.default_rng(0))).items()}
    m = methods.build(task, config)
    state = m.init(jax.random.key(0))
    steps.append([flat64(jax.jit(m.train_step)(state, batch, jax.random.key(k))[0].params['phi']) for k in (1, 1)])
  (zero_a, zero_b), (drop_a, drop_b) = steps
  np.testing.assert_array_equal(zero_a, zero_b)
  np.testing.assert_array_equal(drop_a, drop_b)  # one step key, one mask
  assert not np.allclose(zero_a, drop_a)
  if method == 'implicit':
    losses = implicit.make_losses(task, config)
    params = methods.init_params(task, jax.random.key(0), {'theta': losses.infnet, 'phi': losses.energy})
    one = methods.with_energy_key(implicit.step_batch(batch, jax.random.key(3), task.space, config.implicit.negatives),
                                  jax.random.key(3))
    other = methods.with_energy_key(one, jax.random.key(4))
    for loss in (jax.jit(losses.l_aux), jax.jit(losses.l_prim)):  # one program for both batches, not one per op
      assert not np.isclose(loss(params['theta'], params['phi'], one), loss(params['theta'], params['phi'], other))
