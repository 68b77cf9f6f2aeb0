"""Stop and resume: a run killed with SIGKILL and resumed ends exactly like an uninterrupted one; a NaN stops
training with the step and quantity and leaves the last checkpoint restorable; a changed config is refused."""

import json
import os
import signal
import subprocess
import sys
import time

import chex
import flax
import jax
import numpy as np
import pytest

from implicit_jax import methods, tasks
from implicit_jax.engine import checkpoints, config as config_lib, train
from tests.conftest import ROOT, full_opt_env, load_config

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
  """metrics.json but for the seconds and the config's provenance (config_file: the --config of a command-line
  run, empty for one built in Python), which say how a run was made, not what it computed."""
  out = {k: v for k, v in metrics.items() if k != 'train_seconds'}
  out['config'] = {k: v for k, v in out.get('config', {}).items() if k not in ('config_file', 'overrides')}
  return out


# The term solved every 3rd step by the host's count (solver.reuse='r3h'): a resume at a step that is no multiple
# of 3 must pick up the count where the killed run left it.
REUSE_HOST = {'implicit.solver.name': 'gcr', 'implicit.solver.iterations': 1, 'implicit.solver.reuse': 'r3h'}


@pytest.mark.e2e
@pytest.mark.parametrize('epoch_ends,solver', [(True, {}), (False, {}), (True, REUSE_HOST)],
                         ids=['epoch-ends', 'every-k-steps', 'reuse-r3h'])
def test_sigkill_mid_training_then_resume_equals_uninterrupted(tmp_path, epoch_ends, solver):
  killed, clean = tmp_path / 'killed', tmp_path / 'clean'
  cmd, env = _main(killed, f'--config.checkpoint_epoch_ends={epoch_ends}',
                   *(f'--config.{k}={v}' for k, v in solver.items()))
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
  config = load_config('tiny')  # the same run, uninterrupted, in this process
  config.num_epochs, config.checkpoint_every, config.checkpoint_epoch_ends = EPOCHS, EVERY, epoch_ends
  config.update_from_flattened_dict(solver)
  train.train_and_evaluate(config, str(clean))

  a, b = (json.loads((d / 'metrics.json').read_text()) for d in (killed, clean))
  assert a['steps'] == EPOCHS * 8 and a['history'] and a['train_log']
  assert _comparable(a) == _comparable(b)  # every metric, the history and the training log, exactly
  (state_a, loop_a), (state_b, loop_b) = _final_state(killed), _final_state(clean)
  chex.assert_trees_all_equal(state_a, state_b)  # parameters and optimiser states, bit for bit
  assert loop_a['best'] == loop_b['best']
  lines = [json.loads(line)['step'] for line in (killed / 'metrics.jsonl').read_text().splitlines()]
  assert lines == sorted(lines)  # the steps redone after the kill were not logged twice


@pytest.mark.e2e
def test_nan_stops_with_step_and_quantity_and_keeps_the_last_checkpoint(tmp_path):
  config = load_config('tiny')
  config.log_every = config.checkpoint_every = 1
  config.implicit.inner_optimizer.name = 'sgd'
  config.implicit.inner_optimizer.learning_rate = 1e3  # diverges after a few steps
  config.divergence.max_loss = 0  # the divergence check would stop it before the NaN this test is about
  with pytest.raises(FloatingPointError) as err:
    train.train_and_evaluate(config, str(tmp_path))
  message = str(err.value)
  import re  # pylint: disable=import-outside-toplevel
  found = re.search(r'non-finite (\w+) \((nan|inf)\) .* up to step (\d+); training stopped, last good '
                    r'checkpoint: step (\d+) in (\S+)', message)
  assert found, message
  bad_step, good_step = int(found.group(3)), int(found.group(4))
  assert good_step == bad_step - 1
  assert found.group(5) == str(tmp_path / 'checkpoints')
  state, loop = _final_state(tmp_path)
  assert int(state.step) == good_step
  chex.assert_tree_all_finite(state.params)
  assert str(good_step) in loop['train_log']


@pytest.mark.e2e
def test_resume_with_a_different_config_is_refused(tmp_path):
  config = load_config('tiny')
  config.num_epochs = 1
  train.train_and_evaluate(config, str(tmp_path))
  config.optimizer.learning_rate = 0.5
  with pytest.raises(ValueError, match=r'holds a run with a different config: optimizer.learning_rate \(stored '
                                       r'0.01, now 0.5\)'):
    train.train_and_evaluate(config, str(tmp_path))
  config.optimizer.learning_rate = 1e-2
  config.num_epochs = 2  # allowed: training continues for one more epoch
  assert train.train_and_evaluate(config, str(tmp_path))['steps'] == 16


def test_checkpoints_at_epoch_ends_off_save_every_k_steps_and_the_last_with_each_best_first(tmp_path, monkeypatch):
  """checkpoint_epoch_ends=False (short epochs): a checkpoint every checkpoint_every steps and after the last epoch,
  not at the other epoch ends; every checkpoint's best epoch is on disk before it; the results are the same."""
  calls = []
  save, save_best = checkpoints.Checkpointer.save, checkpoints.Checkpointer.save_best
  monkeypatch.setattr(checkpoints.Checkpointer, 'save', lambda self, state, loop: (
      calls.append(('state', int(state.step), (loop['best'] or {}).get('step'))), save(self, state, loop))[1])
  monkeypatch.setattr(checkpoints.Checkpointer, 'save_best', lambda self, step, params: (
      calls.append(('best', step, None)), save_best(self, step, params))[1])
  results = {}
  for ends in (True, False):
    calls.clear()
    config = load_config('tiny')  # 8 steps an epoch
    config.num_epochs, config.checkpoint_every, config.checkpoint_epoch_ends = EPOCHS, 5, ends
    results[ends] = train.train_and_evaluate(config, str(tmp_path / str(ends)))
    states = [step for kind, step, _ in calls if kind == 'state']
    assert states == (sorted({5, 10, 15, 20, 25, 30, 8, 16, 24, 32}) if ends else [5, 10, 15, 20, 25, 30, 32])
    for i, (kind, step, best) in enumerate(calls):
      if kind == 'state' and best is not None:  # the best parameters it names were written before it
        assert ('best', best, None) in calls[:i], (ends, calls)
  same = [_comparable(results[ends]) for ends in (True, False)]
  for result in same:
    del result['config']['checkpoint_epoch_ends']  # how the run saved, not what it computed
  assert same[0] == same[1] and same[0]['history']


def test_checkpoint_epoch_ends_off_needs_checkpoint_every(tmp_path):
  config = load_config('tiny')
  config.checkpoint_epoch_ends, config.checkpoint_every = False, 0
  with pytest.raises(ValueError, match='checkpoint_epoch_ends=False needs config.checkpoint_every > 0'):
    train.train_and_evaluate(config, str(tmp_path))


def test_load_trained_restores_the_best_dev_parameters(tiny_run):
  workdir, result = tiny_run
  run = checkpoints.load_trained(str(workdir))
  assert set(run.modules) == {'infnet', 'energy'} and set(run.params) == {'theta', 'phi'}
  dev = run.task.splits['dev']
  probs = run.predict(dev['x'])
  assert probs.shape == dev['y'].shape and np.all((probs >= 0) & (probs <= 1))
  # The reloaded best parameters reproduce the selected epoch's dev F1, with the arrays or the split dict.
  assert run.task.evaluator.metrics(probs, dev)['f1'] == pytest.approx(result['dev_f1'], abs=1e-12)
  np.testing.assert_array_equal(run.predict(dev), probs)
  with pytest.raises(ValueError, match=r'predict: x has shape \(3, 2\), the model expects \[N, 8\]'):
    run.predict(np.zeros((3, 2), np.float32))


def test_contradictory_config_rejected_before_reading_data(tmp_path):
  config = load_config('bibtex')
  config.data.dev_fraction = 0.0
  with pytest.raises(ValueError, match=r'config.data.dev_fraction must be in \(0, 1\): best-epoch selection and '
                                       r'the tuned threshold need a dev split, got 0.0'):
    train.train_and_evaluate(config, str(tmp_path))
  assert not os.listdir(tmp_path)  # nothing built or written


@pytest.mark.e2e
def test_evaluate_cli_scores_the_saved_model(tiny_run, tmp_path):
  workdir, result = tiny_run
  proc = subprocess.run([sys.executable, '-m', 'implicit_jax.evaluate', f'--workdir={workdir}', '--split=all',
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


@pytest.mark.e2e
def test_a_field_added_since_a_run_was_recorded_neither_blocks_resume_nor_loading(tmp_path):
  """No migration table: a config.json without a field reads as having the field's default (which, by the rule of
  engine/config.py, is what the code did before the field existed); a real change to the field is refused."""
  config = load_config('tiny')
  config.num_epochs = 1
  train.train_and_evaluate(config, str(tmp_path))
  stored = json.loads((tmp_path / 'config.json').read_text())
  del stored['implicit']['refine']
  del stored['eval_batch_size']
  checkpoints.write_json(str(tmp_path / 'config.json'), stored)
  config.num_epochs = 2
  assert train.train_and_evaluate(config, str(tmp_path))['steps'] == 16  # resumed and continued
  checkpoints.write_json(str(tmp_path / 'config.json'), stored)
  assert checkpoints.load_trained(str(tmp_path)).config.implicit.refine.steps == 0
  config.implicit.refine.steps = 3
  parts = config_lib.check(config)
  with pytest.raises(ValueError, match=r'implicit\.refine\.steps \(not recorded: the run used its default 0, now 3\)'):
    checkpoints.check_config(str(tmp_path), parts.recorded(config), parts)


@pytest.mark.e2e
def test_a_run_recorded_with_its_methods_own_gbi_section_resumes_and_loads(tmp_path):
  """The second config layout kept GBI inside each method's section (``spen.gbi``); such a record reads as the
  shared ``config.gbi`` with its values: it resumes, loads back, and a real change to it is refused."""
  config = load_config('tiny')
  config.method, config.num_epochs, config.gbi.steps = 'spen', 1, 7
  train.train_and_evaluate(config, str(tmp_path))
  stored = json.loads((tmp_path / 'config.json').read_text())
  stored['spen']['gbi'] = stored.pop('gbi')
  checkpoints.write_json(str(tmp_path / 'config.json'), stored)
  assert checkpoints.load_trained(str(tmp_path)).config.gbi.steps == 7
  config.num_epochs = 2
  assert train.train_and_evaluate(config, str(tmp_path))['steps'] == 16  # resumed and continued
  checkpoints.write_json(str(tmp_path / 'config.json'), stored)
  config.gbi.steps = 20
  parts = config_lib.check(config)
  with pytest.raises(ValueError, match=r'gbi\.steps \(stored 7, now 20\)'):
    checkpoints.check_config(str(tmp_path), parts.recorded(config), parts)


def test_only_result_changing_fields_of_the_method_in_use_are_compared(tmp_path):
  """A run records its method's section alone: tuning another method's settings does not touch it."""
  config = load_config('tiny')
  config.method, config.num_epochs = 'feedforward', 1
  train.train_and_evaluate(config, str(tmp_path))
  stored = json.loads((tmp_path / 'config.json').read_text())
  assert not {'implicit', 'spen', 'nce_gbi', 'infnet', 'seal', 'rspen', 'gbi'} & set(stored)
  config.implicit.aux_lambda = 7.0   # another method's section: the feedforward run neither reads nor records it
  config.log_every, config.eval_batch_size = 1, 32  # what it prints and how it batches predictions
  parts = config_lib.check(config)
  assert checkpoints.check_config(str(tmp_path), parts.recorded(config), parts)


FIXTURE = ROOT / 'tests' / 'fixtures' / 'workdir_v1'
# Scores reported since the fixture was written (example F1 under both empty-set conventions, the count of empty
# rows, the run's convention): extra keys beside the old ones, whose values must not change.
NEW_SCORES = ('example_f1_empty1', 'example_f1_empty0', 'empty_rows', 'empty_f1')


def without_new_scores(tree):
  if isinstance(tree, dict):
    return {k: without_new_scores(v) for k, v in tree.items() if k not in NEW_SCORES}
  return tree


def assert_same_run(got, want, path='', rtol=1e-5):
  """``got`` equals ``want`` key for key, floats to ``rtol``: XLA:CPU's code differs between processors (this
  fixture was written on one; AMD EPYC machines give float32 diagnostics differing in the last bit), so a float
  the run logs may move by an ulp, never more."""
  if isinstance(want, dict):
    assert isinstance(got, dict) and set(got) == set(want), f'{path}: keys {sorted(got)} != {sorted(want)}'
    for k in want:
      assert_same_run(got[k], want[k], f'{path}/{k}', rtol)
  elif isinstance(want, list):
    assert isinstance(got, list) and len(got) == len(want), path
    for i, (g, w) in enumerate(zip(got, want)):
      assert_same_run(g, w, f'{path}[{i}]', rtol)
  elif isinstance(want, float):
    assert got == pytest.approx(want, rel=rtol), f'{path}: {got} != {want}'
  else:
    assert got == want, f'{path}: {got!r} != {want!r}'


@pytest.mark.e2e
def test_a_workdir_written_before_the_engine_resumes_and_loads(tmp_path):
  """tests/fixtures/workdir_v1: a finished 1-epoch run of configs/tiny.py (implicit) written by the code before
  tasks were plug-ins (config format 1, top-level solver/negatives/gbi). It still evaluates as it did then, and
  extended to 2 epochs it ends exactly as that code's own resumed run did (expected_after_resume.json)."""
  import shutil  # pylint: disable=import-outside-toplevel
  workdir = tmp_path / 'run'
  shutil.copytree(FIXTURE, workdir)
  assert 'solver' in json.loads((workdir / 'config.json').read_text())  # the old format
  evaluated = subprocess.run([sys.executable, '-m', 'implicit_jax.evaluate', f'--workdir={workdir}', '--split=all',
                              '--json'], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                             env=full_opt_env(JAX_PLATFORMS='cpu'))
  assert evaluated.returncode == 0, evaluated.stderr[-2000:]
  expected = json.loads((FIXTURE.parent / 'workdir_v1_evaluate.json').read_text())
  assert without_new_scores(json.loads(evaluated.stdout)) == expected
  # Resumed by the command line at XLA's default optimisation, as the expected numbers were made.
  resumed = subprocess.run([sys.executable, '-m', 'implicit_jax.main', f'--config={ROOT / "configs" / "tiny.py"}',
                            f'--workdir={workdir}', '--config.num_epochs=2', '--config.checkpoint_every=4'],
                           cwd=tmp_path, capture_output=True, text=True, timeout=300,
                           env=full_opt_env(JAX_PLATFORMS='cpu'))
  assert resumed.returncode == 0, resumed.stderr[-2000:]
  assert 'resuming from step 8' in resumed.stdout
  result = json.loads((workdir / 'metrics.json').read_text())
  old = json.loads((FIXTURE.parent / 'workdir_v1_expected_after_resume.json').read_text())
  # Diagnostics logged since (inner stationarity, cosine of the terms) are extra keys of the training log; every
  # quantity the old code logged is unchanged.
  result['train_log'] = {step: {k: v for k, v in m.items() if k in old['train_log'][step]}
                         for step, m in result['train_log'].items()} if 'train_log' in old else result.get('train_log')
  assert_same_run(without_new_scores({k: result[k] for k in old}), old)
  assert 'solver' in json.loads((workdir / 'config.json').read_text())['implicit']  # rewritten in the new format


def test_a_first_format_record_with_a_field_no_version_knew_is_refused_untouched(tmp_path):
  """workdir_v1 given a top-level field no version had: its upgrade dropped it with the other methods' sections, so
  the run was evaluated and, resumed, rewritten without it. Now refused as such a field inside a section is."""
  import shutil  # pylint: disable=import-outside-toplevel
  from implicit_jax import evaluate  # pylint: disable=import-outside-toplevel
  workdir = tmp_path / 'run'
  shutil.copytree(FIXTURE, workdir)
  path = workdir / 'config.json'
  record = json.loads(path.read_text())
  record['momentum_schedule'] = 'cosine'
  text = json.dumps(record)
  path.write_text(text)
  want = (rf'^{path} holds fields this version of implicit_jax does not know \(momentum_schedule\): a newer version '
          'wrote it, or it was edited; read or resume it with the version that wrote it$')
  config = load_config('tiny')
  config.num_epochs, config.checkpoint_every = 2, 4  # a resume for one more epoch
  with pytest.raises(config_lib.NewerRecord, match=want):
    train.train_and_evaluate(config, str(workdir))
  with pytest.raises(config_lib.NewerRecord, match=want):
    evaluate.evaluate_run(str(workdir))
  assert path.read_text() == text and not (workdir / 'checkpoints' / '16').exists()


@flax.struct.dataclass
class _StateBeforeMemory:
  """methods.State as it was before solver memory was a field of its own (kept in opt_state['solver'])."""
  step: jax.Array
  params: dict
  opt_state: dict


@pytest.mark.parametrize('solver', ['warm', 'reuse', None])
def test_a_checkpoint_with_the_solver_memory_in_opt_state_resumes_with_it_as_state_memory(tmp_path, solver):
  """Runs checkpointed before solver memory was State.memory have no memory entry and kept the memory, if any,
  in opt_state['solver'] (the same arrays): such a checkpoint is read in its layout and made today's state, not
  set aside as unreadable (every run saved before the change: None, a solver that keeps nothing)."""
  config = load_config('tiny')
  config.implicit.solver.name = 'gcr'
  config.implicit.solver.warm_start = solver == 'warm'
  config.implicit.solver.reuse = 'r2' if solver == 'reuse' else 'none'
  method = methods.build(tasks.get_task(config), config)
  state = method.init(jax.random.key(0))
  assert (state.memory is not None) == (solver is not None) and 'solver' not in state.opt_state
  memory = jax.tree.map(lambda a: a + 0.5, state.memory)   # as a few steps would leave it: not the initial zeros
  opt_state = state.opt_state if memory is None else {**state.opt_state, 'solver': memory}
  old = _StateBeforeMemory(state.step + 3, state.params, opt_state)
  ckpt = checkpoints.Checkpointer(str(tmp_path))
  try:
    ckpt.save(old, {'history': [], 'train_log': {}, 'best': None, 'train_seconds': 0.0})
    restored, _ = ckpt.restore(jax.eval_shape(method.init, jax.random.key(0)))
  finally:
    ckpt.close()
  assert int(restored.step) == 3 and 'solver' not in restored.opt_state
  chex.assert_trees_all_equal(restored.memory, memory)
  chex.assert_trees_all_equal(restored.params, state.params)
