"""The example task outside the package (examples/digits), used as its README says: trained, evaluated and asked for
predictions from the command line, its folder on PYTHONPATH and nothing of implicit_jax/ changed for it."""

import ast
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


@pytest.mark.e2e
def test_digits_trains_with_two_methods_then_evaluates_and_predicts_from_the_command_line(tmp_path):
  env = command_line_env()
  workdirs = {m: tmp_path / m for m in ('feedforward', 'implicit')}
  # The two trainings side by side: two processes, as two users would start them.
  procs = {m: subprocess.Popen([sys.executable, '-m', 'implicit_jax.main', '--config=examples/digits/config.py',
                                f'--workdir={w}', f'--config.method={m}', *TINY], cwd=ROOT, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
           for m, w in workdirs.items()}
  for method, proc in procs.items():
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, f'{method}: {err[-3000:]}'
    assert re.search(r'test accuracy 0\.\d+ \(best dev epoch 1\)', out), out[-500:]
    record = json.loads((workdirs[method] / 'config.json').read_text())
    assert record['task'] == 'digits' and record['method'] == method  # the import path, resolved again below
  workdir = workdirs['implicit']
  metrics = json.loads((workdir / 'metrics.json').read_text())
  assert metrics['task'] == 'digits' and 0.0 <= metrics['test_accuracy'] <= 1.0

  from sklearn.datasets import load_digits  # pylint: disable=import-outside-toplevel
  np.save(tmp_path / 'x.npy', load_digits().data[:7] / 16.0)
  evaluated = subprocess.Popen([sys.executable, '-m', 'implicit_jax.evaluate', f'--workdir={workdir}', '--json'],
                               cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
  predicted = run('implicit_jax.predict', f'--workdir={workdir}', f'--input={tmp_path / "x.npy"}', env=env)
  out, err = evaluated.communicate(timeout=300)
  assert evaluated.returncode == 0, err[-3000:]
  assert json.loads(out)['test'] == {'num_examples': 360, 'accuracy': metrics['test_accuracy']}
  lines = predicted.stdout.splitlines()
  assert len(lines) == 7 and all(line in [str(c) for c in range(10)] for line in lines), predicted.stdout


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
  task, config = (int(n) for n in re.search(r'# Add your own task in (\d+) lines.*?and a (\d+)-line config',
                                            readme, re.S).groups())
  assert (task, config) == (code_lines(EXAMPLE / 'digits.py'), code_lines(EXAMPLE / 'config.py'))
  assert 'sys.path' not in (EXAMPLE / 'digits.py').read_text() + (EXAMPLE / 'config.py').read_text()
