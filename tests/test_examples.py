"""The example task and method outside the package (examples/digits), used as its README says: trained (the method
with its own section by --config.method= alone), evaluated and asked for predictions from a .npy and from the task's
own file format on the command line, its folder on PYTHONPATH and nothing of implicit_jax/ changed for it."""

import ast
import importlib
import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from tests.conftest import ROOT

EXAMPLE = ROOT / 'examples' / 'digits'
# Tiny sizes: one epoch of 8 steps, small networks, a 1-step inner problem (the config's own solver).
TINY = ['--config.num_epochs=1', '--config.data.num_train=256', '--config.model.hidden=(16,)',
        '--config.model.energy_hidden=(16,)', '--config.model.energy_dim=16', '--config.eval_batch_size=128']


def command_line_env() -> dict:
  """The user's environment: the example's folder on PYTHONPATH, relative to the repository root they run from."""
  path = [os.path.relpath(EXAMPLE, ROOT)] + [p for p in os.environ.get('PYTHONPATH', '').split(os.pathsep) if p]
  return dict(os.environ, JAX_PLATFORMS='cpu', PYTHONPATH=os.pathsep.join(path))


def run(*args, env):
  proc = subprocess.run([sys.executable, '-m', *args], cwd=ROOT, capture_output=True, text=True, timeout=300,
                        env=env)
  assert proc.returncode == 0, proc.stderr[-3000:]
  return proc


def optdigits(path, x, y):
  """``x`` (grey levels 0-16, [N, 64]) written in the layout of UCI's optdigits files, the class ``y`` last."""
  path.write_text(''.join(','.join(map(str, [*row.astype(int), c])) + '\n' for row, c in zip(x, y)))


@pytest.mark.e2e
def test_digits_trains_with_three_methods_then_evaluates_and_predicts_from_the_command_line(tmp_path):
  env = command_line_env()
  # feedforward and implicit are built in; smoothed is the example's method, its own section set by the command line
  methods = {'feedforward': [], 'implicit': [], 'smoothed': ['--config.smoothed.amount=0.2']}
  workdirs = {m: tmp_path / m for m in methods}
  # The trainings side by side: several processes, as several users would start them.
  procs = {m: subprocess.Popen([sys.executable, '-m', 'implicit_jax.main', '--config=examples/digits/config.py',
                                f'--workdir={w}', f'--config.method={m}', *methods[m], *TINY], cwd=ROOT, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
           for m, w in workdirs.items()}
  for method, proc in procs.items():
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, f'{method}: {err[-3000:]}'
    assert re.search(r'test accuracy 0\.\d+ \(best dev epoch 1\)', out), out[-500:]
    record = json.loads((workdirs[method] / 'config.json').read_text())
    assert record['task'] == 'digits' and record['method'] == method  # the import path, resolved again below
  assert json.loads((workdirs['smoothed'] / 'config.json').read_text())['smoothed'] == {'amount': 0.2}
  workdir = workdirs['implicit']
  metrics = json.loads((workdir / 'metrics.json').read_text())
  assert metrics['task'] == 'digits' and 0.0 <= metrics['test_accuracy'] <= 1.0

  from sklearn.datasets import load_digits  # pylint: disable=import-outside-toplevel
  x, y = load_digits(return_X_y=True)
  np.save(tmp_path / 'x.npy', x[:7] / 16.0)
  optdigits(tmp_path / 'digits.csv', x[:7], y[:7])
  evaluated = subprocess.Popen([sys.executable, '-m', 'implicit_jax.evaluate', f'--workdir={workdir}', '--json'],
                               cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
  from_npy = run('implicit_jax.predict', f'--workdir={workdir}', f'--input={tmp_path / "x.npy"}', env=env)
  from_csv = run('implicit_jax.predict', f'--workdir={workdir}', f'--input={tmp_path / "digits.csv"}', env=env)
  out, err = evaluated.communicate(timeout=300)
  assert evaluated.returncode == 0, err[-3000:]
  assert json.loads(out)['test'] == {'num_examples': 360, 'accuracy': metrics['test_accuracy']}
  lines = from_npy.stdout.splitlines()
  assert len(lines) == 7 and all(line in [str(c) for c in range(10)] for line in lines), from_npy.stdout
  assert from_csv.stdout == from_npy.stdout  # the task's own format: the same images, the same classes
  # The task names no formats of its own: --format is refused naming it, in one line.
  proc = subprocess.run([sys.executable, '-m', 'implicit_jax.predict', f'--workdir={workdir}',
                         f'--input={tmp_path / "digits.csv"}', '--format=conll'], cwd=ROOT, env=env,
                        capture_output=True, text=True, timeout=300)
  assert proc.returncode == 1 and proc.stderr.strip() == (
      "error: --format=conll: task 'digits' names no file formats (its module defines no FORMATS; see "
      'implicit_jax/plugins.py): leave --format out'), proc.stderr[-2000:]


def test_the_digits_reader_names_a_bad_line(tmp_path, monkeypatch):
  monkeypatch.syspath_prepend(str(EXAMPLE))
  digits = importlib.import_module('digits')
  path = tmp_path / 'digits.csv'
  optdigits(path, np.arange(128).reshape(2, 64) % 17, [3, 4])
  inputs, context = digits.read_inputs(None, str(path))
  assert inputs['x'].shape == (2, 64) and inputs['x'].dtype == np.float32 and inputs['x'].max() == 1.0
  assert context is None
  for text, message in (('1,2,3\n', ':1: an image is 64 grey levels 0-16'),
                        ('\n' + ','.join(['17'] * 64) + '\n', ':2: an image is 64 grey levels'),
                        ('\n\n', ': no images')):
    path.write_text(text)
    with pytest.raises(ValueError, match=re.escape(f'{path}{message}')):
      digits.read_inputs(None, str(path))


@pytest.mark.e2e
def test_without_the_folder_on_pythonpath_the_run_is_refused_in_one_line(tmp_path):
  """What the same commands say when the task module cannot be found: one line naming config.task."""
  proc = subprocess.run([sys.executable, '-m', 'implicit_jax.main', '--config=examples/digits/config.py',
                         f'--workdir={tmp_path}'], cwd=ROOT, capture_output=True, text=True, timeout=300,
                        env=dict(os.environ, JAX_PLATFORMS='cpu'))
  assert proc.returncode == 2, proc.stderr[-2000:]
  assert "config.task: unknown task 'digits'" in proc.stderr and 'is its folder on PYTHONPATH' in proc.stderr
  assert 'Traceback' not in proc.stderr


def code_lines(path) -> int:
  """Lines of Python that are neither blank, comments nor the module docstring: the README's count."""
  source = path.read_text()
  first = ast.parse(source).body[0]
  docstring = range(first.lineno, first.end_lineno + 1) if isinstance(first, ast.Expr) else range(0)
  return sum(1 for i, line in enumerate(source.splitlines(), 1)
             if line.strip() and not line.strip().startswith('#') and i not in docstring)


def test_the_readme_counts_the_lines_it_claims():
  readme = (EXAMPLE / 'README.md').read_text()
  task, method = (int(n) for n in re.search(r'# Add your own task in (\d+) lines, and a method in (\d+)',
                                            readme).groups())
  config = int(re.search(r'A (\d+)-line config', readme).group(1))
  assert (task, method, config) == tuple(code_lines(EXAMPLE / f) for f in ('digits.py', 'smoothed.py', 'config.py'))
  assert 'sys.path' not in ''.join((EXAMPLE / f).read_text() for f in ('digits.py', 'smoothed.py', 'config.py'))
