"""Compilations of the real training loop on the tiny tagging task: one XLA executable per bucket, never more.

``data.train_batches`` and ``data.prediction_batches`` cut every batch to the smallest of ``data.buckets`` that
holds its longest sentence (the split's width when none does), so the jitted train step and the jitted predictor
each see a handful of shapes and must compile once per shape, however many epochs run.

What is counted is XLA executables, not traces: JAX records the event ``/jax/core/compile/backend_compile_duration``
(``dispatch.BACKEND_COMPILE_EVENT``) once for every executable it builds, around ``compiler.compile_or_get_cached``,
so a compilation and a load from the persistent compilation cache (which tests/conftest.py turns on) both count,
and a call served by jit's in-memory caches does not. A ``jax.monitoring`` listener collects the events, and each
is charged to the wrapped function being called on the same thread at that moment: ``train.make_train_step`` and
``train.make_predict`` are patched to wrap what they return (the jitted functions themselves unchanged), so the
other programs the loop compiles (initialisation, metric means, a checkpointer's thread) are not counted.
"""

import threading

import jax
import numpy as np
import pytest

from implicit_jax import tasks
from implicit_jax.engine import data, train
from tests.conftest import load_config

COMPILE_EVENT = '/jax/core/compile/backend_compile_duration'
BUCKETS = (6, 9)  # with the split's width (12, its longest sentence): three training shapes


class CompileCounter:
  """The XLA executables built during each call of each wrapped function (on the calling thread)."""

  def __init__(self):
    self._local = threading.local()
    self.calls = {}    # name -> [(batch shape, executables built during that call)]
    self.wrapped = {}  # name -> the counting wrapper
    self.jitted = {}   # name -> the jitted function the loop built

  def listener(self, event, duration_secs, **kwargs):
    del duration_secs, kwargs
    active = getattr(self._local, 'active', None)
    if event == COMPILE_EVENT and active is not None:
      active[0] += 1

  def wrap(self, fn, name):
    """``fn(params_or_state, batch)`` counted under ``name``."""
    self.calls[name], self.jitted[name] = [], fn

    def counted(first, batch):
      self._local.active = built = [0]
      try:
        return fn(first, batch)
      finally:
        self._local.active = None
        self.calls[name].append((tuple(batch['x'].shape), built[0]))

    self.wrapped[name] = counted
    return counted

  def compiles(self, name) -> int:
    return sum(n for _, n in self.calls[name])

  def shapes(self, name) -> set:
    return {shape for shape, _ in self.calls[name]}

  def check_once_per_shape(self, name):
    """Every call that brings a new shape builds exactly one executable; every other call builds none."""
    seen = set()
    for i, (shape, built) in enumerate(self.calls[name]):
      expected = 0 if shape in seen else 1
      assert built == expected, f'{name} call {i} on {shape}: {built} executables built, expected {expected}'
      seen.add(shape)
    assert self.compiles(name) == len(self.shapes(name))


@pytest.fixture
def counter(monkeypatch):
  c = CompileCounter()
  make_step, make_predict = train.make_train_step, train.make_predict

  def counting_step(method, step_rng, replicated, sharded, *start):
    c.method, c.replicated, c.sharded = method, replicated, sharded
    return c.wrap(make_step(method, step_rng, replicated, sharded, *start), 'step')

  monkeypatch.setattr(train, 'make_train_step', counting_step)
  monkeypatch.setattr(train, 'make_predict', lambda *args: c.wrap(make_predict(*args), 'predict'))
  jax.monitoring.register_event_duration_secs_listener(c.listener)
  try:
    yield c
  finally:
    jax.monitoring.unregister_event_duration_listener(c.listener)


def _first(batches, width):
  return next(b for b in batches if b['x'].shape[1] == width)


@pytest.mark.parametrize('method', ['feedforward', pytest.param('implicit', marks=pytest.mark.e2e)])
def test_the_loop_compiles_step_and_predictor_once_per_bucket(tmp_path, counter, method):
  config = load_config('tiny_tagging')
  config.method = method
  config.data.buckets = BUCKETS
  config.num_epochs = 3        # 48 steps: epochs 2 and 3 bring no new shape
  config.eval_batch_size = 32  # dev and test cut into batches of several buckets, test's tail padded
  result = train.train_and_evaluate(config, str(tmp_path))
  assert result['steps'] == len(counter.calls['step']) == 48

  step_shapes, predict_shapes = counter.shapes('step'), counter.shapes('predict')
  assert {width for _, width in step_shapes} == {*BUCKETS, 12}, step_shapes
  assert len(predict_shapes) >= 2, predict_shapes
  assert len(counter.calls['predict']) > len(predict_shapes)  # shapes came back, served without compiling
  counter.check_once_per_shape('step')     # 3 executables in 48 steps
  counter.check_once_per_shape('predict')  # 3 dev evaluations, then dev and test again: one per shape
  # jit's own cache agrees: one entry per shape (a call that missed its fast path would add one).
  assert counter.jitted['step']._cache_size() == len(step_shapes)
  assert counter.jitted['predict']._cache_size() == len(predict_shapes)

  # The count can fail: the bucket set (6, 7, 9) would add the shape of width 7, and with it exactly one
  # executable for each function; a fresh state or parameters of the same shapes add none.
  compiles = {name: counter.compiles(name) for name in ('step', 'predict')}
  extra = load_config('tiny_tagging')
  extra.data.buckets = (6, 7, 9)
  task = tasks.get_task(extra)
  state = jax.device_put(counter.method.init(jax.random.key(1)), counter.replicated)
  params = jax.device_put(counter.method.init(jax.random.key(2)).params, counter.replicated)
  batches = list(data.train_batches(task, config.batch_size, np.random.default_rng([config.seed, 0])))
  predict_batches = [b for b, _ in data.prediction_batches(task, task.splits['train'], 32)]
  for width in (6, 7, 7):
    state, _ = counter.wrapped['step'](state, data.shard_batch(_first(batches, width), counter.sharded))
    jax.block_until_ready(counter.wrapped['predict'](
        params, data.shard_batch(_first(predict_batches, width), counter.sharded)))
  assert (counter.compiles('step'), counter.compiles('predict')) == (compiles['step'] + 1, compiles['predict'] + 1)
  counter.check_once_per_shape('step')
  counter.check_once_per_shape('predict')
