"""InfNet+'s global energies (tasks/tagging/models.py, Eq. 8-9): each tag language model's energy equals the
negative log-likelihood computed by stepping its LSTM cell by hand, forward and backward, with words for GE(c);
padding changes nothing; the terms add to Eq. 7 and train."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import linen as nn

from implicit_jax import methods, tasks
from implicit_jax.tasks.tagging.models import Encoder, SequenceEnergy, TagLanguageModel, reverse_within
from tests.conftest import load_config

C = 4


def by_hand(params, tlm, tags, words=None):
  """-log p(y_1..y_L, end) of one-hot ``tags`` (ids), stepping the cell one token at a time in Python."""
  p = params['params']
  lstm = p['cell']
  cell = nn.OptimizedLSTMCell(tlm.hidden)
  dense = nn.Dense(C + 1)
  inputs = [np.eye(C + 1)[C]] + [np.eye(C + 1)[t] for t in tags]        # start, then the tags (width C + 1)
  if words is not None:
    xs = [np.zeros(words.shape[-1])] + list(words)
    inputs = [np.concatenate([i, x]) for i, x in zip(inputs, xs)]
  carry = cell.initialize_carry(jax.random.key(0), (1, len(inputs[0])))
  targets = list(tags) + [C]                                               # the next tag, then the end symbol
  total = 0.0
  for inp, target in zip(inputs, targets):
    carry, h = cell.apply({'params': lstm}, carry, jnp.asarray(inp)[None])
    log_p = jax.nn.log_softmax(dense.apply({'params': p['next']}, h)[0])
    total -= float(log_p[target])
  return total


@pytest.mark.parametrize('with_words', [False, True])
def test_tag_lm_energy_is_the_hand_stepped_negative_log_likelihood(with_words):
  tlm = TagLanguageModel(C, hidden=5)
  lengths = jnp.array([3, 5])
  tags = [np.array([0, 2, 1, 0, 0]), np.array([3, 1, 1, 2, 0])]
  y = jnp.asarray(np.stack([np.eye(C)[t] for t in tags]), jnp.float32)    # [2, 5, C]; row 0 padded after 3
  words = (jnp.asarray(np.random.default_rng(0).normal(size=(2, 5, 3)), jnp.float32) if with_words else None)
  params = tlm.init(jax.random.key(1), y, lengths, words)
  got = tlm.apply(params, y, lengths, words)
  for n in range(2):
    w = None if words is None else np.asarray(words[n, :int(lengths[n])])
    want = by_hand(params, tlm, tags[n][:int(lengths[n])], w)
    assert float(got[n]) == pytest.approx(want, rel=1e-5)
  # Whatever lies in the padding does not count.
  noisy = y.at[0, 3:].set(0.25)
  np.testing.assert_allclose(tlm.apply(params, noisy, lengths, words), got, rtol=1e-6)


def test_reverse_within_reverses_the_real_positions_only():
  v = jnp.arange(10).reshape(2, 5)
  np.testing.assert_array_equal(reverse_within(v, jnp.array([3, 5])), [[2, 1, 0, 3, 4], [9, 8, 7, 6, 5]])


def test_global_energy_adds_its_tag_lms_to_eq7():
  """GE(a) holds the forward tag LM, (b) the backward one too, (c) both word-augmented ones besides; the energy of
  (c), whose terms include every other kind's, is Eq. 7's chain energy plus each tag LM's term, recomputed here."""
  encoder = Encoder(12, 'conv', 6, 8)
  batch = {'x': jnp.array([[2, 3, 4, 0], [5, 6, 7, 8]]), 'mask': jnp.array([[1., 1, 1, 0], [1, 1, 1, 1]])}
  y = jax.nn.softmax(jax.random.normal(jax.random.key(0), (3, 2, 4, C)), axis=-1)  # 3 negatives: leading axis
  for kind, tlms in (('a', 1), ('b', 2)):  # shapes only: no program to compile
    shapes = jax.eval_shape(SequenceEnergy(encoder, C, kind, gamma=0.5, tlm_hidden=6).init, jax.random.key(1), batch, y)
    assert sum(k.startswith('tlm_') and k != 'tlm_embed' for k in shapes['params']) == tlms
  kind = 'c'
  energy = SequenceEnergy(encoder, C, kind, gamma=0.5, tlm_hidden=6)
  # jitted: one program per module and input signature, not one per operation
  params = jax.jit(energy.init)(jax.random.key(1), batch, y)
  assert sum(k.startswith('tlm_') and k != 'tlm_embed' for k in params['params']) == 4
  total = jax.jit(energy.apply)(params, batch, y)
  chain = jax.jit(SequenceEnergy(encoder, C).apply)({'params': {k: v for k, v in params['params'].items()
                                                                if not k.startswith('tlm_')}}, batch, y)
  lengths = jnp.array([3, 4])
  term = 0.0
  tlm_apply = jax.jit(TagLanguageModel(C, 6).apply)
  for name in {'a': ['forward'], 'b': ['forward', 'backward'],
               'c': ['forward', 'backward', 'words_forward', 'words_backward']}[kind]:
    p = {'params': params['params'][f'tlm_{name}']}
    words = None
    if name.startswith('words'):
      words = jnp.take(params['params']['tlm_embed']['embedding'], batch['x'], axis=0)
    for k in range(3):
      ys, ws = y[k], words
      if name.endswith('backward'):
        ys = reverse_within(ys, lengths)
        ws = None if ws is None else reverse_within(ws, lengths)
      weight = 0.5 if name.startswith('words') else 1.0
      term = term + weight * jax.nn.one_hot(k, 3)[:, None] * tlm_apply(p, ys, lengths, ws)[None]
  np.testing.assert_allclose(total, chain + term, rtol=1e-5, atol=1e-5)


@pytest.mark.e2e
def test_global_energy_trains_with_infnet_plus():
  config = load_config('tiny_tagging')
  config.model.global_energy = 'c'
  config.method = 'infnet_plus'
  task = tasks.get_task(config)
  method = methods.build(task, config)
  from implicit_jax.engine import data  # pylint: disable=import-outside-toplevel
  batch = next(data.train_batches(task, config.batch_size, np.random.default_rng(0)))
  state, metrics = jax.jit(method.train_step)(jax.jit(method.init)(jax.random.key(0)), batch, jax.random.key(1))
  assert all(np.isfinite(float(v)) for v in metrics.values())
  assert any(k.startswith('tlm_') for k in state.params['phi']['params'])


def test_global_energy_is_refused_by_crf_and_an_unknown_one_is_named():
  config = load_config('tiny_tagging')
  config.model.global_energy = 'c'
  config.method = 'crf'
  task = tasks.get_task(config)
  with pytest.raises(ValueError, match='global_energy'):
    methods.build(task, config)
  config.model.global_energy = 'd'
  with pytest.raises(ValueError, match="model.global_energy: unknown 'd'"):
    tasks.get_task(config)
