"""The parts of the plug-in contract (implicit_jax/plugins.py) beyond naming a plug-in: a method's own config
section resolved from its import path, by a config and by ``--config.method=`` on the command line; the method
helpers importable from ``plugins``; and the hooks ``predict`` asks of a task, each missing one named in one line
with the task. The fixture package is test_plugins.py's."""

import json
import os
import subprocess
import sys
import types

import numpy as np
import pytest

from implicit_jax import methods, plugins, predict, tasks
from implicit_jax.engine import config as config_lib, train
from tests.conftest import ROOT
from tests.test_plugins import PACKAGE, plugin_package, tiny  # noqa: F401  (the module's autouse fixture)


def test_resolve_gives_the_declaration_of_a_built_in_name_and_of_an_import_path():
  spec = methods.resolve('implicit')
  assert spec.section.name == 'implicit' and spec.section.defaults() == methods.default_sections()['implicit']
  assert methods.resolve('feedforward').section is None
  spec = methods.resolve(f'{PACKAGE}.method')  # read from the module's SECTION, default_config and build
  assert spec.name == f'{PACKAGE}.method' and spec.section.name == 'scaled'
  assert spec.section.defaults().to_dict() == {'weight': 1.0} and spec.shared == () and not spec.semi_supervised
  with pytest.raises(ValueError, match=rf"^config\.method: '{PACKAGE}\.no_build' does not provide build"):
    methods.resolve(f'{PACKAGE}.no_build')


def test_a_config_made_for_another_method_gains_the_plugins_section():
  config = tiny()  # built for feedforward: no 'scaled' section, and locked as a command line's config is
  config.lock()
  config_lib.add_method_section(config, f'{PACKAGE}.method')
  config.method, config.scaled.weight = f'{PACKAGE}.method', 3.0
  config_lib.check(config)
  assert config_lib.recorded(config)['scaled'] == {'weight': 3.0}
  before = config.to_dict()
  config_lib.add_method_section(config, 'implicit')  # a built-in section is there already: nothing changes
  assert config.to_dict() == before


def test_the_method_helpers_are_importable_from_plugins():
  from implicit_jax.plugins import State, init_params, make_optimizer  # pylint: disable=import-outside-toplevel
  assert (State, init_params, make_optimizer) == (methods.State, methods.init_params, methods.make_optimizer)
  assert all(getattr(plugins, name) is getattr(methods, name) for name in plugins.METHOD_HELPERS)
  with pytest.raises(AttributeError, match="has no attribute 'no_such_helper'"):
    plugins.no_such_helper  # pylint: disable=pointless-statement


def _main(root, workdir, *flags):
  """The training command line, the fixture package on PYTHONPATH as a user's would be."""
  env = dict(os.environ, JAX_PLATFORMS='cpu', PYTHONPATH=os.pathsep.join([str(root), str(ROOT)]))
  return subprocess.run([sys.executable, '-m', 'implicit_jax.main', '--config=configs/tiny.py', f'--workdir={workdir}',
                         '--config.num_epochs=1', *flags], cwd=ROOT, capture_output=True, text=True, timeout=300,
                        env=env)


@pytest.mark.e2e
def test_a_method_with_its_own_section_trains_by_config_method_alone(plugin_package, tmp_path):  # noqa: F811
  """Before: '--config.scaled.weight: the config has no field scaled' (the section needed a config file)."""
  proc = _main(plugin_package, tmp_path / 'run', f'--config.method={PACKAGE}.method', '--config.scaled.weight=3')
  assert proc.returncode == 0, proc.stderr[-3000:]
  record = json.loads((tmp_path / 'run' / 'config.json').read_text())
  assert record['method'] == f'{PACKAGE}.method' and record['scaled'] == {'weight': 3.0}
  assert '--config.scaled.weight=3.0' in record['overrides']
  # A path that does not import, with an override of the section it would bring: one line naming the path.
  proc = _main(plugin_package, tmp_path / 'bad', f'--config.method={PACKAGE}.nothing', '--config.scaled.weight=3')
  lines = [line for line in proc.stderr.splitlines() if line.strip()]
  assert proc.returncode == 2 and lines[0] == (
      f"error: config.method: cannot import '{PACKAGE}.nothing': no module named '{PACKAGE}.nothing', and "
      f"'{PACKAGE}' has no attribute 'nothing'"), proc.stderr[-2000:]
  proc = _main(plugin_package, tmp_path / 'bad', f'--config.method={PACKAGE}.section_without_defaults')
  assert proc.returncode == 1 and proc.stderr.strip() == (
      f"error: config.method: '{PACKAGE}.section_without_defaults' reads the new section 'fresh' but does not provide "
      'default_config() (its defaults; see implicit_jax/plugins.py)'), proc.stderr[-2000:]
  assert not (tmp_path / 'bad').exists()


# --- What predict asks of a task (implicit_jax/predict.py) -----------------------------------------------------

def _run(task: str, **data):
  """What ``predict.read`` reads of a trained run (its config and task): no training needed for its checks."""
  config = config_lib.base_config(task, 'feedforward')
  config.data.update(data)
  return types.SimpleNamespace(config=config, task=tasks.get_task(config))


def test_a_npy_for_a_task_with_more_inputs_than_x_names_the_missing_hook(tmp_path):
  """Before: 'predict: no 'scale' in the inputs', blaming the file, from deep in the model's checks."""
  np.save(tmp_path / 'x.npy', np.zeros((2, 8), np.float32))
  with pytest.raises(ValueError) as error:
    predict.read(_run(f'{PACKAGE}.multiclass', variant='two_inputs'), str(tmp_path / 'x.npy'))
  assert str(error.value) == (f"{tmp_path / 'x.npy'}: task '{PACKAGE}.multiclass' reads the inputs scale, x, and a "
                              '.npy gives x alone: its module provides no npy_inputs(run, path, x) to make them from '
                              'it (see implicit_jax/plugins.py)')
  inputs, context = predict.read(_run(f'{PACKAGE}.multiclass'), str(tmp_path / 'x.npy'))  # x alone: no hook needed
  assert set(inputs) == {'x'} and inputs['x'].shape == (2, 8) and context is None


def test_a_file_or_format_the_task_does_not_read_is_named_with_the_task(tmp_path):
  rows = tmp_path / 'rows.txt'
  rows.write_text('0,1\n')
  run = _run(f'{PACKAGE}.multiclass')
  with pytest.raises(ValueError, match=rf"^{rows}: task '{PACKAGE}\.multiclass' reads no input files \(its module "
                                       r'provides no read_inputs\(run, path\); see implicit_jax/plugins\.py\)'):
    predict.read(run, str(rows))
  with pytest.raises(ValueError, match=rf"^--format=conll: task '{PACKAGE}\.multiclass' names no file formats"):
    predict.read(run, str(rows), 'conll')
  with pytest.raises(ValueError, match=rf"^--format=conll: task '{PACKAGE}\.formats' reads the formats rows, "
                                       r'columns \(or auto\)$'):
    predict.read(_run(f'{PACKAGE}.formats'), str(rows), 'conll')
  assert tasks.family('tagging').FORMATS == ('conll', 'text')  # the built-in task names its formats the same way


def test_predict_reads_a_plugins_own_formats_and_writes_its_lines(tmp_path):
  """A trained run of the fixture task with every hook: the formats it names reach its reader, and its lines are
  the output; the same examples as a .npy give the same classes."""
  config = config_lib.base_config(f'{PACKAGE}.formats', 'feedforward')
  config.batch_size = config.eval_batch_size = 16
  config.num_epochs = 1
  train.train_and_evaluate(config, str(tmp_path / 'run'))
  x = np.asarray(tasks.get_task(config).splits['test']['x'][:3])
  np.savetxt(tmp_path / 'rows.txt', x, delimiter=',')
  np.savetxt(tmp_path / 'columns.txt', x.T, delimiter=',')
  np.save(tmp_path / 'x.npy', x)
  _, from_npy = predict.predict_file(str(tmp_path / 'run'), str(tmp_path / 'x.npy'))
  classes = [line.split(': class ')[1] for line in from_npy]
  assert from_npy == [f'None: class {k}' for k in classes]  # no reader ran: no context
  for name, fmt in (('rows', 'auto'), ('rows', 'rows'), ('columns', 'columns')):
    pred, lines = predict.predict_file(str(tmp_path / 'run'), str(tmp_path / f'{name}.txt'), input_format=fmt)
    assert lines == [f'{fmt}: class {k}' for k in classes], (name, fmt)
    assert pred.shape == (3, 10)
