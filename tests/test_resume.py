"""Stop and resume: a run killed with SIGKILL and resumed ends exactly like an uninterrupted one; a NaN stops
training with the step and quantity and leaves the last checkpoint restorable; a changed config is refused."""

import json
import os
import signal
import subprocess
import sys
import time

import chex
import jax
import numpy as np
import pytest

from configs import tiny
from implicit_jax import checkpoints, methods, tasks, train
from tests.conftest import ROOT

EPOCHS, EVERY = 4, 2  # 8 steps per epoch on the tiny config: 32 steps, a checkpoint every 2


def _main(workdir, *extra):
  cmd = [sys.executable, '-m', 'implicit_jax.main', '--config=configs/tiny.py', f'--workdir={workdir}',
         f'--config.num_epochs={EPOCHS}', f'--config.checkpoint_every={EVERY}', *extra]
  return cmd, dict(os.environ, JAX_PLATFORMS='cpu')


def _final_state(workdir):
  config = checkpoints.load_config(str(workdir))
  method = methods.build(tasks.get_task(config), config)
  ckpt = checkpoints.Checkpointer(str(workdir))
  try:
    return ckpt.restore(jax.eval_shape(method.init, jax.random.key(0)))
  finally:
    ckpt.close()


def _comparable(metrics):
  return {k: v for k, v in metrics.items() if k != 'train_seconds'}


def test_sigkill_mid_training_then_resume_equals_uninterrupted(tmp_path):
  killed, clean = tmp_path / 'killed', tmp_path / 'clean'
  cmd, env = _main(killed)
  proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
  ckpt_dir = killed / 'checkpoints'
  deadline = time.time() + 240
  # Kill as soon as the first mid-training checkpoint is committed, i.e. renamed from Orbax's temporary directory
  # to its step number: the run is then some steps past it.
  while time.time() < deadline and proc.poll() is None:
    if ckpt_dir.exists() and any(d.name.isdigit() and (d / 'commit_success.txt').exists()
                                 for d in ckpt_dir.iterdir()):
      break
    time.sleep(0.005)
  assert proc.poll() is None, 'the run ended before it could be killed'
  os.kill(proc.pid, signal.SIGKILL)
  proc.wait()
  assert proc.returncode == -signal.SIGKILL
  assert not (killed / 'metrics.json').exists()
  state, _ = _final_state(killed)
  assert 0 < int(state.step) < EPOCHS * 8, int(state.step)

  resumed = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
  assert resumed.returncode == 0, resumed.stderr[-2000:]
  assert f'resuming from step {int(state.step)}' in resumed.stdout
  config = tiny.get_config()  # the same run, uninterrupted, in this process
  config.num_epochs, config.checkpoint_every = EPOCHS, EVERY
  train.train_and_evaluate(config, str(clean))

  a, b = (json.loads((d / 'metrics.json').read_text()) for d in (killed, clean))
  assert a['steps'] == EPOCHS * 8 and a['history'] and a['train_log']
  assert _comparable(a) == _comparable(b)  # every metric, the history and the training log, exactly
  (state_a, loop_a), (state_b, loop_b) = _final_state(killed), _final_state(clean)
  chex.assert_trees_all_equal(state_a, state_b)  # parameters and optimiser states, bit for bit
  assert loop_a['best'] == loop_b['best']
  lines = [json.loads(line)['step'] for line in (killed / 'metrics.jsonl').read_text().splitlines()]
  assert lines == sorted(lines)  # the steps redone after the kill were not logged twice


def test_nan_stops_with_step_and_quantity_and_keeps_the_last_checkpoint(tmp_path):
  config = tiny.get_config()
  config.log_every = config.checkpoint_every = 1
  config.implicit.inner_optimizer.name = 'sgd'
  config.implicit.inner_optimizer.learning_rate = 1e3  # diverges after a few steps
  with pytest.raises(FloatingPointError) as err:
    train.train_and_evaluate(config, str(tmp_path))
  message = str(err.value)
  import re  # pylint: disable=import-outside-toplevel
  found = re.search(r'non-finite (\w+) \(nan\) .* up to step (\d+); training stopped, last good checkpoint: '
                    r'step (\d+) in (\S+)', message)
  assert found, message
  bad_step, good_step = int(found.group(2)), int(found.group(3))
  assert good_step == bad_step - 1
  assert found.group(4) == str(tmp_path / 'checkpoints')
  state, loop = _final_state(tmp_path)
  assert int(state.step) == good_step
  chex.assert_tree_all_finite(state.params)
  assert str(good_step) in loop['train_log']


def test_resume_with_a_different_config_is_refused(tmp_path):
  config = tiny.get_config()
  config.num_epochs = 1
  train.train_and_evaluate(config, str(tmp_path))
  config.optimizer.learning_rate = 0.5
  with pytest.raises(ValueError, match=r'holds a run with a different config: optimizer.learning_rate \(stored '
                                       r'0.01, now 0.5\)'):
    train.train_and_evaluate(config, str(tmp_path))
  config.optimizer.learning_rate = 1e-2
  config.num_epochs = 2  # allowed: training continues for one more epoch
  assert train.train_and_evaluate(config, str(tmp_path))['steps'] == 16


def test_load_trained_restores_the_best_dev_parameters(tmp_path):
  config = tiny.get_config()
  result = train.train_and_evaluate(config, str(tmp_path))
  run = checkpoints.load_trained(str(tmp_path))
  assert set(run.modules) == {'infnet', 'energy'} and set(run.params) == {'theta', 'phi'}
  x, y = run.task.splits['dev']
  probs = run.predict(x)
  assert probs.shape == y.shape and np.all((probs >= 0) & (probs <= 1))
  # The reloaded best parameters reproduce the selected epoch's dev F1.
  assert train.metrics.example_f1(probs >= 0.5, y > 0.5) == pytest.approx(result['dev_f1'], abs=1e-12)
  with pytest.raises(ValueError, match=r'predict: features have shape \(3, 2\)'):
    run.predict(np.zeros((3, 2), np.float32))


def test_contradictory_config_rejected_before_reading_data(tmp_path):
  from configs import bibtex  # pylint: disable=import-outside-toplevel
  config = bibtex.get_config()
  config.data.dev_fraction = 0.0
  with pytest.raises(ValueError, match=r'config.data.dev_fraction must be in \(0, 1\): best-epoch selection and '
                                       r'the tuned threshold need a dev split, got 0.0'):
    train.train_and_evaluate(config, str(tmp_path))
  assert not os.listdir(tmp_path)  # nothing built or written


def test_evaluate_cli_scores_the_saved_model(tmp_path):
  config = tiny.get_config()
  result = train.train_and_evaluate(config, str(tmp_path))
  proc = subprocess.run([sys.executable, '-m', 'implicit_jax.evaluate', f'--workdir={tmp_path}', '--split=all',
                         '--json'], cwd=ROOT, capture_output=True, text=True, timeout=300,
                        env=dict(os.environ, JAX_PLATFORMS='cpu'))
  assert proc.returncode == 0, proc.stderr[-2000:]
  out = json.loads(proc.stdout)
  assert set(out) == {'train', 'dev', 'test'}
  assert out['test']['at_0.5'] == result['test_at_0.5'] and out['test']['at_tuned'] == result['test_at_tuned']
  missing = subprocess.run([sys.executable, '-m', 'implicit_jax.evaluate', f'--workdir={tmp_path / "none"}'],
                           cwd=ROOT, capture_output=True, text=True, timeout=300)
  assert missing.returncode == 1 and 'is not a training workdir' in missing.stderr
  assert 'Traceback' not in missing.stderr


def test_workdir_recorded_before_a_field_was_added_still_resumes(tmp_path):
  """A config.json without a field listed in checkpoints.ADDED_FIELDS reads as having its old-behaviour value."""
  config = tiny.get_config()
  stored = checkpoints.config_json(config)
  del stored['implicit']['refine_steps']
  checkpoints.write_json(os.path.join(tmp_path, 'config.json'), stored)
  assert checkpoints.check_or_write_config(str(tmp_path), config)  # same run: accepted
  assert checkpoints.load_config(str(tmp_path)).implicit.refine_steps == 0
  checkpoints.write_json(os.path.join(tmp_path, 'config.json'), stored)
  config.implicit.refine_steps = 3  # a real change is still refused, and named
  with pytest.raises(ValueError, match=r'implicit\.refine_steps \(stored 0, now 3\)'):
    checkpoints.check_or_write_config(str(tmp_path), config)
