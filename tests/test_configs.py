"""Config files: each documents its command and takes a training step; they load from any working directory and
from an installed package; the records a run writes hold what the run uses."""

import json
import os
import subprocess
import sys
from pathlib import Path

import jax
import numpy as np
import pytest

from implicit_jax import methods, tasks
from implicit_jax.engine import config as config_lib, data
from tests.conftest import ROOT, load_config

SHARED = Path(os.environ.get('IMPLICIT_JAX_SHARED_DATA', ROOT.parent / 'shared' / 'data'))
CONFIGS = sorted(p.stem for p in (ROOT / 'configs').glob('*.py'))


def one_step(config):
  config_lib.check(config)
  task = tasks.get_task(config)
  method = methods.build(task, config)
  batch = next(data.train_batches(task, config.batch_size, np.random.default_rng(0)))
  state, metrics = jax.jit(method.train_step)(method.init(jax.random.key(0)), batch, jax.random.key(1))
  return task, metrics


def test_every_config_is_documented_with_its_command():
  for name in CONFIGS:
    doc = (ROOT / 'configs' / f'{name}.py').read_text()
    assert f'--config=configs/{name}.py' in doc, name


@pytest.mark.parametrize('name', ['default', 'tiny', 'bibtex', 'tagging'])
def test_configs_without_data_directory_take_a_step(name):
  task, metrics = one_step(load_config(name))
  assert np.isfinite(float(metrics['loss_prim']))
  if name == 'bibtex':
    train = task.splits['train']
    assert (len(train['y']), train['x'].shape[1], task.space.units) == (4392, 1836, 159)


@pytest.mark.slow
@pytest.mark.parametrize('name', ['delicious', 'genbase', 'cal500', 'spo_fun'])
def test_data_configs_take_a_step(name):
  if not SHARED.is_dir():
    pytest.skip(f'shared data not present at {SHARED}')
  config = load_config(name)
  config.data.data_dir = str(SHARED)
  _, metrics = one_step(config)
  assert float(metrics['implicit_norm']) > 0


def test_config_given_by_absolute_path_from_another_directory(tmp_path):
  """configs/delicious.py builds on configs/bibtex.py; neither needs the repository on the Python path."""
  code = ('from ml_collections import config_flags; from absl import flags; import sys\n'
          f'config_flags.DEFINE_config_file("config", "{ROOT / "configs" / "genbase.py"}")\n'
          'flags.FLAGS(sys.argv[:1]); c = flags.FLAGS.config\n'
          'print(c.task, c.data.name, c.implicit.primary_loss, c.model.inference_hidden)')
  env = {k: v for k, v in os.environ.items() if k != 'PYTHONPATH'}
  proc = subprocess.run([sys.executable, '-c', code], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                        env=env)
  assert proc.returncode == 0, proc.stderr[-2000:]
  assert proc.stdout.split() == ['mlc', 'genbase', 'cd', '(150,', '150)']
  main = subprocess.run([sys.executable, '-m', 'implicit_jax.main', f'--config={ROOT / "configs" / "tiny.py"}',
                         f'--workdir={tmp_path / "run"}', '--config.num_epochs=1'], cwd=tmp_path,
                        capture_output=True, text=True, timeout=300, env=dict(env, JAX_PLATFORMS='cpu'))
  assert main.returncode == 0, main.stderr[-2000:]
  assert 'test example-F1' in main.stdout


def test_a_missing_config_file_is_named():
  with pytest.raises(FileNotFoundError, match='config file .*nope.py not found'):
    config_lib.from_file('nope.py', relative_to=ROOT / 'configs' / 'tiny.py')


@pytest.mark.parametrize('method', sorted(methods.REGISTRY))
def test_a_run_records_the_sections_it_reads(method):
  config = load_config('tiny')
  config.method = method
  record = config_lib.recorded(config)
  section = methods.section_of(method)
  assert set(record) == set(config_lib.core_config()) | {'data', 'model'} | ({section} if section else set())
  assert json.loads(json.dumps(record)) == record  # plain JSON


def test_each_method_reads_its_own_section():
  """Tuning the implicit method's cost or negatives leaves SPEN, InfNet and SEAL as they were."""
  task = tasks.get_task(load_config('tiny'))
  batch = next(data.train_batches(task, 16, np.random.default_rng(0)))
  for method in ('spen', 'infnet', 'seal_dynamic'):
    losses = []
    for cost, samples in (('l1', 0), ('f1', 7)):
      config = load_config('tiny')
      config.method, config.infnet.finetune_epochs = method, 1
      config.implicit.cost, config.implicit.negatives.num_samples = cost, samples
      m = methods.build(task, config)
      _, metrics = jax.jit(m.train_step)(m.init(jax.random.key(0)), batch, jax.random.key(1))
      losses.append(float(metrics['loss']))
    assert losses[0] == losses[1], method
  config = load_config('tiny')
  config.method, config.spen.cost = 'spen', 'f1'  # while its own section does change it
  m = methods.build(task, config)
  assert float(jax.jit(m.train_step)(m.init(jax.random.key(0)), batch, jax.random.key(1))[1]['loss']) != losses[0]


def test_format_1_records_are_upgraded_with_the_values_their_runs_used():
  """The first format's shared sections, as every method read them, move into each method's own section."""
  old = load_config('tiny').to_dict()
  old = config_lib.config_json(old)
  implicit = old['implicit']
  shared = {'negatives': implicit.pop('negatives'), 'solver': implicit.pop('solver'),
            'gbi': {'steps': 7, 'step_size': 0.2, 'rule': 'mirror', 'init': 'half', 'tol': 0.0}}
  shared['negatives']['num_samples'] = 4
  del implicit['refine']
  for name in ('spen', 'dvn', 'nce_gbi'):
    del old[name]
  old['seal']['bce_weight'] = old['seal'].pop('ce_weight')
  for key in ('cost', 'cost_scale', 'num_samples', 'noise_scale', 'gbi'):
    del old['seal'][key]
  for key in ('cost', 'cost_scale'):
    del old['infnet'][key]
  implicit['cost'], implicit['cost_scale'] = 'f1', 3.0
  v1 = {**old, **shared}
  for method, section, expected in (
      ('implicit', 'implicit', {'implicit.negatives.num_samples': 4, 'implicit.solver.iterations': 3,
                                'implicit.refine.steps': 0, 'implicit.refine.rule': 'mirror', 'implicit.cost': 'f1'}),
      ('spen', 'spen', {'spen.cost': 'f1', 'spen.cost_scale': 3.0, 'spen.gbi.steps': 7}),
      ('dvn', 'dvn', {'dvn.gbi.step_size': 0.2}),
      ('nce_gbi', 'nce_gbi', {'nce_gbi.num_samples': 4, 'nce_gbi.gbi.rule': 'mirror'}),
      ('infnet_plus', 'infnet', {'infnet.cost': 'f1'}),
      ('seal_static', 'seal', {'seal.ce_weight': 1.0, 'seal.num_samples': 4, 'seal.cost_scale': 3.0})):
    record = config_lib.upgrade(dict(v1, method=method))
    assert set(record) == set(config_lib.core_config()) | {'data', 'model', section}, method
    flat = config_lib.flatten(record)
    assert {k: flat[k] for k in expected} == expected, method
    loaded = config_lib.load(dict(v1, method=method))  # a full config again, defaults for the rest
    assert loaded.method == method and loaded.implicit.solver.name == 'normal_cg'
