"""End to end: the real train_and_evaluate on the tiny config, the front door, and compile-once steps."""

import json
import os
import re
import subprocess
import sys

import chex
import jax
import numpy as np
import pytest

from implicit_jax import batch as batch_lib, methods, tasks
from implicit_jax.engine import data, train
from tests.conftest import ROOT, load_config


# Each method with what the tiny config (2 epochs, no sampled negatives) must change for it.
METHODS = {
    'implicit': {}, 'feedforward': {}, 'spen': {}, 'dvn': {},
    'nce_gbi': {'nce_gbi.num_samples': 2},
    'infnet': {'infnet.finetune_epochs': 1},
    'infnet_plus': {'infnet.parameterization': 'stacked'},
    'seal_static': {'seal.pretrain_epochs': 1, 'seal.energy_loss': 'nce', 'seal.num_samples': 2},
    'seal_dynamic': {'seal.energy_loss': 'regression_s', 'seal.num_samples': 2},
}


def tiny_config(method):
  config = load_config('tiny')
  config.method = method
  config.update_from_flattened_dict(METHODS[method])
  return config


def counting_traces(monkeypatch):
  """Makes ``methods.build`` return methods whose step and predictor count their traces (each new input shape or
  dtype is one; a compiled call is none): ``{'train_step': n, 'predict': n}``."""
  counts = {'train_step': 0, 'predict': 0}
  build = methods.build

  def counted(fn, name):
    def wrapper(*args):
      counts[name] += 1
      return fn(*args)
    return wrapper

  def counting_build(task, config, **spec):
    m = build(task, config, **spec)
    return m._replace(train_step=counted(m.train_step, 'train_step'), predict=counted(m.predict, 'predict'))

  monkeypatch.setattr(methods, 'build', counting_build)
  return counts


# The fast suite runs the real loop for the implicit method and the feedforward baseline; the other methods' runs,
# and the implicit ones whose donated state carries the GCR solver's memory, are in the e2e suite (setup.cfg).
FAST_LOOPS = ('implicit', 'feedforward')


@pytest.mark.parametrize('method', [m if m in FAST_LOOPS else pytest.param(m, marks=pytest.mark.e2e)
                                    for m in [*METHODS, 'implicit-gcr-warm', 'implicit-gcr-r2', 'implicit-gcr-r2h']])
def test_tiny_train_and_evaluate_compiles_the_step_once(tmp_path, monkeypatch, method):
  """The real loop (donated state, checkpoints, dev selection) for every method: 16 steps, 2 dev evaluations and a
  test one, with one trace of the step and one of the predictor in the loop (dev and test are padded to one batch
  shape)."""
  counts = counting_traces(monkeypatch)
  config = tiny_config(method.split('-')[0])
  if method == 'implicit-gcr-warm':  # the solver's memory rides in the donated state and the checkpoints
    config.implicit.solver.update(name='gcr', iterations=1, warm_start=True)
  if method.startswith('implicit-gcr-r2'):  # so do a reused term and its scalars (one buffer each, or donation fails)
    config.implicit.solver.update(name='gcr', iterations=1, reuse=method.split('-')[-1])
  if method.startswith('implicit') or method == 'feedforward':
    config.model.dropout = 0.5  # a dropout key per step must not retrace either
  result = train.train_and_evaluate(config, str(tmp_path))
  # predict's second trace is engine/checks' jax.eval_shape of it before training: traced, never compiled; a
  # reused term's step has two forms (Method.form), the steps that solve and those that reuse: one trace each
  assert counts == {'train_step': 2 if method.endswith('-r2h') else 1, 'predict': 2}, counts
  for key in ('test_f1', 'test_f1_tuned', 'dev_f1'):
    assert 0.0 <= result[key] <= 1.0
  assert result['steps'] == config.num_epochs * (config.data.num_train // config.batch_size)
  with open(tmp_path / 'metrics.json') as f:
    assert json.load(f)['test_f1'] == result['test_f1']


def test_the_trace_guard_can_fail():
  """What the counts above would show on a recompilation: a new batch shape traces the step again."""
  chex.clear_trace_counter()
  config = tiny_config('feedforward')
  task = tasks.get_task(config)
  m = methods.build(task, config)
  step = jax.jit(chex.assert_max_traces(m.train_step, n=1), donate_argnums=0)
  state = m.init(jax.random.key(0))
  batches = data.train_batches(task, 16, np.random.default_rng(0))
  for i in range(3):
    state, metrics = step(state, next(batches), jax.random.key(i))
    chex.assert_tree_all_finite(metrics)
  arrays = task.splits['train']
  with pytest.raises(AssertionError):
    step(state, {'x': arrays['x'][:8], 'y': arrays['y'][:8]}, jax.random.key(0))


@pytest.mark.e2e
def test_every_implicit_route_logs_the_same_diagnostics():
  """The ablation's routes (no implicit term, identity, a solver, backprop through the inner steps) are one
  config field apart and log the same keys; only the solvers have a nonzero residual, only 'none' a zero implicit
  term."""
  keys = None
  for name in ('none', 'identity', 'minres', 'gcr', 'gcr-warm', 'gcr-r2', 'unrolled'):
    config = tiny_config('implicit')
    config.implicit.solver.name = name.split('-')[0]
    config.implicit.solver.warm_start = name.endswith('-warm')
    config.implicit.solver.reuse = 'r2' if name.endswith('-r2') else 'none'
    config.model.dropout = 0.5  # the unrolled route differentiates through dropout-masked Adam steps
    task = tasks.get_task(config)
    m = methods.build(task, config)
    step = jax.jit(m.train_step)
    state = m.init(jax.random.key(0))
    batches = data.train_batches(task, 16, np.random.default_rng(0))
    for i in range(3):
      state, metrics = step(state, next(batches), jax.random.key(i))
    chex.assert_tree_all_finite(metrics)
    keys = keys or set(metrics)
    assert set(metrics) == keys and {'stationarity', 'cosine', 'residual', 'implicit_norm'} <= keys, name
    assert (metrics['implicit_norm'] == 0) == (name == 'none'), name
    assert (metrics['residual'] == 0) == (name == 'unrolled'), name
    # The warm route carries its last solution in the state, the reusing one its term; the others nothing.
    assert (state.memory is not None) == (name in ('gcr-warm', 'gcr-r2')), name
    assert set(state.opt_state) == {'theta', 'phi'} and 'memory' not in metrics, name
    if name == 'gcr-r2':
      assert float(state.memory['count']) == 3
    if name == 'gcr-warm':
      chex.assert_trees_all_equal_shapes(state.memory, state.params['theta'])
      assert any(np.any(leaf != 0) for leaf in jax.tree.leaves(state.memory))


def test_a_reused_term_runs_as_two_programs_that_train_as_the_choice_made_inside_one():
  """The term every third step: the loop's step with ``solver.reuse='r3h'`` (``FormedStep``: the host picks the
  program that solves or the one that reuses) follows the trajectory of ``'r3'`` (one program choosing by the
  carried count, ``lax.cond``) to float rounding; with its count shifted by one step it does not, so the comparison
  can fail."""
  config = tiny_config('implicit')
  config.implicit.solver.update(name='gcr', iterations=1, reuse='r3')
  task = tasks.get_task(config)
  assert methods.build(task, config).form is None  # 'r3': one program decides
  config.implicit.solver.reuse = 'r3h'
  m = methods.build(task, config)
  assert m.form is not None and [m.form(k) for k in range(4)] == [True, False, False, True]
  _, replicated, sharded = train.data_parallel(config)
  key = jax.random.key(1)
  batches = list(data.train_batches(task, 16, np.random.default_rng(0)))[:7]
  one_program = jax.jit(lambda s, b: m.train_step(s, b, batch_lib.step_key(key, s.step)))

  def run(step):
    state = jax.device_put(m.init(jax.random.key(0)), replicated)
    residuals = []
    for b in batches:
      state, metrics = step(state, data.shard_batch(b, sharded))
      residuals.append(float(metrics['residual']))
    return state, residuals

  reference, ref_residuals = run(one_program)
  formed = train.make_train_step(m, key, replicated, sharded)
  assert isinstance(formed, train.FormedStep)
  state, residuals = run(formed)
  assert formed.step == len(batches) and float(state.memory['count']) == len(batches)
  chex.assert_trees_all_close(state.params, reference.params, rtol=1e-4, atol=1e-6)
  np.testing.assert_allclose(residuals, ref_residuals, rtol=1e-3)
  shifted, _ = run(train.make_train_step(m, key, replicated, sharded, start=1))
  gap = max(float(np.max(np.abs(a - b))) for a, b in zip(jax.tree.leaves(shifted.params['phi']),
                                                           jax.tree.leaves(reference.params['phi'])))
  assert gap > 1e-3, gap


@pytest.mark.e2e
def test_implicit_training_learns_the_synthetic_structure(tmp_path):
  """More epochs on the tiny problem: test F1 well above the all-negative and chance levels (1/3 per group)."""
  config = load_config('tiny')
  config.num_epochs = 15
  assert train.train_and_evaluate(config, str(tmp_path))['test_f1'] > 0.6


def run_main(tmp_path, *overrides):
  cmd = [sys.executable, '-m', 'implicit_jax.main', '--config=configs/tiny.py', f'--workdir={tmp_path}',
         *overrides]
  env = dict(os.environ, JAX_PLATFORMS='cpu')
  return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300, env=env)


def test_main_runs_and_prints_test_f1(tmp_path):
  proc = run_main(tmp_path, '--config.num_epochs=1')
  assert proc.returncode == 0, proc.stderr[-2000:]
  assert 'test example-F1' in proc.stdout


BAD_VALUES = [
    ('method', 'spenn',
     "config.method: unknown method 'spenn'; choose one of ['crf', 'dvn', 'feedforward', 'implicit', 'infnet', "
     "'infnet_plus', 'nce_gbi', 'rspen', 'seal_dynamic', 'seal_static', 'spen']"),
    ('implicit.solver.name', 'newton', "implicit.solver.name: unknown inverse-HVP solver 'newton'"),
    ('implicit.solver.iterations', -2, 'solver.iterations must be a non-negative integer, got -2'),
    ('implicit.solver.alpha', -0.5, 'solver.alpha must be > 0, got -0.5'),
    ('optimizer.name', 'adagradd', "optimizer.name: unknown optimizer 'adagradd'"),
    ('optimizer.weight_decay', -1.0, 'optimizer.weight_decay must be a finite number >= 0, got -1.0'),
    # inf passed 'lr > 0' and trained 4 steps before a non-finite cosine stopped it, naming no field
    ('optimizer.learning_rate', float('inf'), 'optimizer.learning_rate must be a finite number > 0, got inf'),
    ('optimizer.learning_rate', float('nan'), 'optimizer.learning_rate must be a finite number > 0, got nan'),
    ('batch_size', 0, 'config.batch_size must be a positive integer, got 0'),
    ('eval_batch_size', 0, 'config.eval_batch_size must be a positive integer, got 0'),
    ('implicit.primary_loss', 'hinge', "implicit.primary_loss: unknown loss 'hinge'; choose one of ('ssvm', "),
    ('implicit.negatives.sampler', 'gumbel', "negatives.sampler: unknown sampler 'gumbel'; choose one of ("),
    ('implicit.cost', 'dice', "implicit.cost: unknown cost 'dice' for the binary output space; choose one of"),
    ('task', 'pos',
     "config.task: unknown task 'pos'; choose one of ['citations', 'mlc', 'segmentation', 'synthetic', 'tagging']"),
    ('task', 'tagging', "config.data does not hold the fields of task 'tagging'"),
    ('checkpoint_every', -1, 'config.checkpoint_every must be a non-negative integer, got -1'),
]


@pytest.mark.parametrize('field,value,message', BAD_VALUES)
def test_bad_config_values_are_named_before_anything_is_written(tmp_path, field, value, message):
  config = load_config('tiny')
  config.update_from_flattened_dict({field: value})
  with pytest.raises(ValueError, match=re.escape(message)):
    train.train_and_evaluate(config, str(tmp_path / 'run'))
  assert not (tmp_path / 'run').exists()


def test_main_bad_config_values_end_in_one_clear_line(tmp_path):
  """The command line turns those errors into one line and exit code 1 (one case: the rest is the same path)."""
  field, value, message = BAD_VALUES[1]
  proc = run_main(tmp_path, f'--config.{field}={value}')
  assert proc.returncode == 1
  assert message in proc.stderr
  assert 'Traceback' not in proc.stderr


@pytest.mark.e2e
def test_main_misspelt_override_is_an_error(tmp_path):
  proc = run_main(tmp_path, '--config.optimzer.learning_rate=0.1')
  assert proc.returncode != 0
  assert 'optimzer' in proc.stderr


@pytest.mark.e2e
def test_nan_loss_stops_with_the_step(tmp_path):
  config = load_config('tiny')
  config.optimizer.learning_rate = 1e30
  config.implicit.inner_optimizer.learning_rate = 1e30
  config.implicit.inner_optimizer.name = 'sgd'
  with pytest.raises(FloatingPointError, match=r'non-finite \w+ .* up to step \d+'):
    train.train_and_evaluate(config, str(tmp_path))


def test_readme_test_command_is_what_ci_runs():
  readme = (ROOT / 'README.md').read_text()
  ci = (ROOT / '.ci' / 'run').read_text()
  assert 'README.md' in ci and 'test-command' in ci  # CI extracts the command from the README
  marker = readme.index('<!-- test-command -->')
  command = readme[marker:].split('```')[1].strip().splitlines()[-1]
  assert command.startswith('.venv/bin/python -m pytest')
  assert np.char.count(readme, '<!-- test-command -->') == 1
  # The suites the README's command leaves out (setup.cfg's addopts) run after it in CI.
  assert '-m e2e' in ci and '-m multihost' in ci


@pytest.mark.e2e
def test_main_malformed_data_file_names_file_and_line(tmp_path):
  bad = tmp_path / 'bad.arff'
  bad.write_text('@relation r\n@attribute a numeric\n@attribute l1 {0,1}\n@attribute l2 {0,1}\n@data\n'
                 '1.0,0,1\n2.0,1\n')
  cmd = [sys.executable, '-m', 'implicit_jax.main', '--config=configs/custom.py', f'--workdir={tmp_path / "w"}',
         f'--config.data.train_file={bad}', '--config.data.num_labels=2']
  proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300,
                        env=dict(os.environ, JAX_PLATFORMS='cpu'))
  assert proc.returncode == 1
  assert f'error: {bad}:7:' in proc.stderr, proc.stderr[-1000:]
  assert 'Traceback' not in proc.stderr


def test_adamw_weight_decay_setting_shrinks_parameters_by_rate_times_decay():
  """With a zero gradient AdamW's update is -lr * weight_decay * param; Adam's is zero."""
  params = {'w': np.full(3, 2.0, np.float32)}
  zero = {'w': np.zeros(3, np.float32)}
  for name, expected in (('adamw', 2.0 - 0.1 * 0.5 * 2.0), ('adam', 2.0)):
    cfg = load_config('tiny').optimizer
    cfg.update({'name': name, 'learning_rate': 0.1, 'weight_decay': 0.5})
    opt = methods.make_optimizer(cfg, 'optimizer')
    updates, _ = opt.update(zero, opt.init(params), params)
    np.testing.assert_allclose(params['w'] + updates['w'], expected, rtol=1e-6)

