"""The linear-chain CRF (implicit_jax/methods/crf.py): the forward algorithm's log Z, its gradient (the marginals)
and Viterbi against brute-force enumeration of every tag sequence, padding included; the energy's potentials
against the energy itself; and a short training run on the synthetic HMM task."""

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from implicit_jax import methods, tasks
from implicit_jax.engine import train
from implicit_jax.methods.crf import log_partition, viterbi
from tests.conftest import float64, load_config

C, T = 3, 4
LENGTHS = (4, 2, 1, 3)


def problem(seed=0):
  rng = np.random.default_rng(seed)
  unary = rng.normal(size=(len(LENGTHS), T, C))
  transitions = rng.normal(size=(C, C))
  mask = (np.arange(T)[None] < np.asarray(LENGTHS)[:, None]).astype(np.float64)
  return unary, transitions, mask


def energies(unary, transitions, length):
  """{tag sequence: E} of one sentence, every sequence of its real length."""
  return {tags: sum(unary[t, tags[t]] for t in range(length)) + sum(transitions[tags[t - 1], tags[t]]
                                                                       for t in range(1, length))
          for tags in itertools.product(range(C), repeat=length)}


def test_log_partition_and_marginals_match_enumeration():
  unary, transitions, mask = problem()
  with float64():
    log_z = log_partition(jnp.asarray(unary), jnp.asarray(transitions), jnp.asarray(mask))
    grad_u = jax.grad(lambda u: jnp.sum(log_partition(u, jnp.asarray(transitions), jnp.asarray(mask))))(
        jnp.asarray(unary))
  for b, length in enumerate(LENGTHS):
    e = energies(unary[b], transitions, length)
    values = -np.array(list(e.values()))
    expected = np.log(np.sum(np.exp(values - values.max()))) + values.max()
    np.testing.assert_allclose(log_z[b], expected, rtol=1e-12)
    # d log Z / d u_{t, j} = -P(y_t = j): the marginals, from the same enumeration; zero on padding.
    probs = np.exp(values - expected)
    marginals = np.zeros((T, C))
    for p, tags in zip(probs, e):
      marginals[np.arange(length), tags] += p
    np.testing.assert_allclose(grad_u[b], -marginals, atol=1e-12)


def test_viterbi_matches_enumeration():
  for seed in range(5):
    unary, transitions, mask = problem(seed)
    tags = np.asarray(viterbi(jnp.asarray(unary, jnp.float32), jnp.asarray(transitions, jnp.float32),
                              jnp.asarray(mask, jnp.float32)))
    for b, length in enumerate(LENGTHS):
      e = energies(unary[b], transitions, length)
      best = min(e, key=e.get)
      assert tuple(tags[b, :length]) == best, (seed, b)
      assert np.all(tags[b, length:] == best[-1])  # padding repeats the last tag (identity back-pointers)


def tiny(method):
  config = load_config('tiny_tagging')
  config.method = method
  return config


def test_potentials_give_the_energy():
  config = tiny('crf')
  task = tasks.get_task(config)
  method = methods.build(task, config)
  phi = method.init(jax.random.key(0)).params['phi']
  energy = task.make_energy()
  batch = task.example_batch()
  unary, transitions = energy.apply(phi, batch, method='potentials')
  tags = jax.random.randint(jax.random.key(1), batch['mask'].shape, 0, task.space.units)
  y = jax.nn.one_hot(tags, task.space.units) * batch['mask'][..., None]
  mask = batch['mask']
  by_hand = (jnp.sum(jnp.take_along_axis(unary, tags[..., None], -1)[..., 0] * mask, -1)
             + jnp.sum(transitions[tags[:, :-1], tags[:, 1:]] * mask[:, 1:] * mask[:, :-1], -1))
  np.testing.assert_allclose(energy.apply(phi, batch, y), by_hand, rtol=1e-5)


@pytest.mark.e2e
def test_crf_trains_on_the_synthetic_task(tmp_path):
  config = tiny('crf')
  result = train.train_and_evaluate(config, str(tmp_path / 'crf'))
  losses = [log['loss'] for _, log in sorted(result['train_log'].items(), key=lambda kv: int(kv[0]))]
  info = result['task_info']
  # Exact inference on the chain must use the tag transitions: above the best context-free (word-only) tagger.
  assert losses[-1] < 0.5 * losses[0]
  assert info['word_only_accuracy'] < result['test_accuracy'] <= info['bayes_accuracy'] + 0.01


def test_crf_refuses_an_energy_without_potentials():
  config = load_config('tiny')
  config.method = 'crf'
  task = tasks.get_task(config)
  with pytest.raises(ValueError, match='method crf needs a chain energy'):
    methods.build(task, config)
