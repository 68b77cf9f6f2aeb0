"""Data parallel: the step over a 4-device ('data',) mesh gives the parameters of the 1-device step.

Fake CPU devices need XLA_FLAGS before JAX starts, so the comparison runs in a subprocess.
"""

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT

# A Python of its own (fake devices) stepping the tiny config on 1 and 4 devices: e2e (setup.cfg), after the fast suite.
pytestmark = pytest.mark.e2e

SCRIPT = r'''
import json, jax, numpy as np
from implicit_jax import methods, tasks
from implicit_jax.engine import config as config_lib, data, train
assert jax.device_count() == 4, jax.devices()

def run(num_devices):
  config = config_lib.from_file('configs/tiny.py')
  config.num_devices, config.batch_size, config.model.dropout = num_devices, 16, 0.3
  task = tasks.get_task(config)
  method = methods.build(task, config)
  _, replicated, sharded = train.data_parallel(config)
  state = jax.device_put(method.init(jax.random.key(0)), replicated)
  start = jax.device_get(state.params)
  step = train.make_train_step(method, jax.random.key(1), replicated, sharded)
  batches = data.train_batches(task, 16, np.random.default_rng(0))
  for i in range(5):
    batch = data.shard_batch(next(batches), sharded)
    assert len(batch['x'].sharding.device_set) == num_devices
    state, metrics = step(state, batch)
  # Evaluation on the same mesh: the padded prediction batches are sharded too, with the same outputs.
  predict = train.make_predict(method, replicated, sharded)
  preds = data.predict(task, lambda b: predict(state.params, b), task.splits['dev'], config.eval_batch_size, sharded)
  return start, jax.device_get(state.params), jax.device_get(metrics), preds

(start, one, m1, p1), (_, four, m4, p4) = run(1), run(4)

diffs = [float(np.max(np.abs(a - b)) / (np.max(np.abs(a)) + 1e-12))
         for a, b in zip(jax.tree.leaves(one), jax.tree.leaves(four))]
moved = [float(np.max(np.abs(a - b))) for a, b in zip(jax.tree.leaves(one), jax.tree.leaves(start))]
print(json.dumps({'max_rel_diff': max(diffs), 'min_moved': min(moved),
                  'predict_diff': float(np.max(np.abs(p1 - p4))), 'predict_shape': list(p4.shape),
                  'finite': bool(all(np.isfinite(v) for v in list(m1.values()) + list(m4.values())))}))
'''


def test_four_fake_devices_match_one_device_after_five_steps():
  flags = f'{os.environ.get("XLA_FLAGS", "")} --xla_force_host_platform_device_count=4'.strip()
  env = dict(os.environ, JAX_PLATFORMS='cpu', XLA_FLAGS=flags)
  proc = subprocess.run([sys.executable, '-c', SCRIPT], cwd=ROOT, env=env, capture_output=True, text=True,
                        timeout=600)
  assert proc.returncode == 0, proc.stderr[-3000:]
  out = json.loads(proc.stdout.strip().splitlines()[-1])
  # float32; the 4-device sums are reassociated, nothing else differs. Tolerance: 1e-5 of each leaf's scale,
  # while the 5 steps moved every leaf (a missing all-reduce would give O(1) differences).
  assert out['max_rel_diff'] < 1e-5, out
  assert out['min_moved'] > 1e-4 and out['finite'], out
  assert out['predict_shape'] == [64, 6] and out['predict_diff'] < 1e-4, out
