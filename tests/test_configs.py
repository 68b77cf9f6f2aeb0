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


@pytest.mark.parametrize('name', ['default', 'bibtex', 'tagging'])  # tiny and tiny_tagging: in most other tests
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
  """The main job from a directory outside the repository, the config by absolute path, no PYTHONPATH: configs
  import only the installed package (tiny.py builds on default.py by path)."""
  env = {k: v for k, v in os.environ.items() if k != 'PYTHONPATH'}
  main = subprocess.run([sys.executable, '-m', 'implicit_jax.main', f'--config={ROOT / "configs" / "tiny.py"}',
                         f'--workdir={tmp_path / "run"}', '--config.num_epochs=1'], cwd=tmp_path,
                        capture_output=True, text=True, timeout=300, env=dict(env, JAX_PLATFORMS='cpu'))
  assert main.returncode == 0, main.stderr[-2000:]
  assert 'test example-F1' in main.stdout
  recorded = json.loads((tmp_path / 'run' / 'config.json').read_text())
  assert recorded['model']['inference_hidden'] == [16] and recorded['implicit']['inner_steps'] == 2  # tiny's


def test_configs_building_on_a_sibling_load_by_path():
  """delicious.py and genbase.py build on bibtex.py; from_file resolves it next to them."""
  config = config_lib.from_file(ROOT / 'configs' / 'genbase.py')
  assert (config.task, config.data.name, config.implicit.primary_loss) == ('mlc', 'genbase', 'cd')
  assert tuple(config.model.inference_hidden) == (150, 150)


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
  """SPEN, DVN, NCE-GBI, InfNet and SEAL build and train with the implicit method's section full of invalid
  values (they never read it), and their own section's cost does change the loss."""
  task = tasks.get_task(load_config('tiny'))
  for method in ('spen', 'dvn', 'nce_gbi', 'infnet', 'infnet_plus', 'seal_static', 'seal_dynamic'):
    config = load_config('tiny')
    config.method, config.infnet.finetune_epochs, config.seal.pretrain_epochs = method, 1, 1
    config.implicit.update(cost='bogus', cost_scale=-1.0, primary_loss='bogus', inner_steps=0)
    config.implicit.negatives.update(sampler='bogus', num_samples=-1, include_mean=False)
    config.implicit.solver.name = 'bogus'
    methods.build(task, config)  # would raise on any of them
  batch = next(data.train_batches(task, 16, np.random.default_rng(0)))
  losses = []
  for cost in ('l1', 'f1'):
    config = load_config('tiny')
    config.method, config.spen.cost = 'spen', cost
    m = methods.build(task, config)
    losses.append(float(jax.jit(m.train_step)(m.init(jax.random.key(0)), batch, jax.random.key(1))[1]['loss']))
  assert losses[0] != losses[1]


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
