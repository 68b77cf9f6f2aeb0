"""Every config file builds its task and method and takes a training step; the data ones need the shared data."""

import importlib
import os
from pathlib import Path

import jax
import pytest

from implicit_jax import methods, tasks, train
from tests.conftest import ROOT

SHARED = Path(os.environ.get('IMPLICIT_JAX_SHARED_DATA', ROOT.parent / 'shared' / 'data'))
CONFIGS = sorted(p.stem for p in (ROOT / 'configs').glob('*.py') if p.stem != '__init__')


def one_step(config):
  train.check_config(config)
  task = tasks.get_task(config)
  method = methods.build(task, config)
  x, y = task.splits['train']
  state, metrics = jax.jit(method.train_step)(method.init(jax.random.key(0)),
                                              {'x': x[:config.batch_size], 'y': y[:config.batch_size]},
                                              jax.random.key(1))
  return task, metrics


def test_every_config_is_documented_with_its_command():
  for name in CONFIGS:
    doc = importlib.import_module(f'configs.{name}').__doc__
    assert f'--config=configs/{name}.py' in doc, name


@pytest.mark.parametrize('name', ['default', 'tiny', 'bibtex'])
def test_configs_without_data_directory_take_a_step(name):
  config = importlib.import_module(f'configs.{name}').get_config()
  task, metrics = one_step(config)
  assert float(metrics['loss_prim']) == float(metrics['loss_prim'])  # not NaN
  if name == 'bibtex':
    assert (len(task.splits['train'][0]), task.num_features, task.num_labels) == (4392, 1836, 159)


@pytest.mark.slow
@pytest.mark.parametrize('name', ['delicious', 'genbase', 'cal500', 'spo_fun'])
def test_data_configs_take_a_step(name):
  if not SHARED.is_dir():
    pytest.skip(f'shared data not present at {SHARED}')
  config = importlib.import_module(f'configs.{name}').get_config()
  config.data.data_dir = str(SHARED)
  _, metrics = one_step(config)
  assert float(metrics['implicit_norm']) > 0
