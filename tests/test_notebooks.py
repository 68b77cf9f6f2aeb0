"""The notebooks: committed without outputs, in sync with notebooks/build_notebooks.py, and executing headless on
the tiny config in a fresh environment: the repository installed as a user installs it (a non-editable
``pip install``), no PYTHONPATH, the notebooks' own folder as working directory."""

import json
import os
import subprocess
import sys
import sysconfig

import nbformat
import pytest

from tests.conftest import ROOT

NOTEBOOKS = ['quickstart.ipynb', 'energy_analysis.ipynb']

RUNNER = r'''
import json, sys
import nbclient, nbformat
out = {}
for name in sys.argv[1:]:
  nb = nbformat.read(name, as_version=4)
  nb.cells.append(nbformat.v4.new_code_cell('import implicit_jax, sys; print(implicit_jax.__file__, sys.executable)'))
  nbclient.NotebookClient(nb, timeout=600, kernel_name='python3', resources={'metadata': {'path': '.'}}).execute()
  outputs = [o for cell in nb.cells if cell.cell_type == 'code' for o in cell.outputs]
  out[name] = {'errors': [o.get('evalue', '') for o in outputs if o.output_type == 'error'],
               'figures': sum('image/png' in o.get('data', {}) for o in outputs
                              if o.output_type in ('display_data', 'execute_result')),
               'where': nb.cells[-1].outputs[0]['text'].split()}
print(json.dumps(out))
'''


@pytest.mark.parametrize('name', NOTEBOOKS)
def test_notebook_is_stripped_and_built_from_its_source(name):
  import importlib.util  # pylint: disable=import-outside-toplevel
  spec = importlib.util.spec_from_file_location('build_notebooks', ROOT / 'notebooks' / 'build_notebooks.py')
  build = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(build)
  committed = nbformat.read(ROOT / 'notebooks' / name, as_version=4)
  for cell in committed.cells:
    if cell.cell_type == 'code':
      assert cell.outputs == [] and cell.execution_count is None, f'{name}: outputs not stripped'
  assert committed == build.notebook(build.NOTEBOOKS[name]), f'{name}: run python notebooks/build_notebooks.py'


def fresh_environment(path):
  """A new virtual environment holding a non-editable install of the repository. Its dependencies come from
  the test's own environment through a path entry (its .pth files, the editable install's among them, are not
  read), so nothing of this checkout is importable but what ``pip install`` put there."""
  subprocess.run([sys.executable, '-m', 'venv', '--without-pip', str(path)], check=True, timeout=120)
  python = path / 'bin' / 'python'
  site = subprocess.run([str(python), '-c', 'import sysconfig; print(sysconfig.get_paths()["purelib"])'],
                        capture_output=True, text=True, check=True).stdout.strip()
  with open(os.path.join(site, 'test_dependencies.pth'), 'w') as f:
    f.write(sysconfig.get_paths()['purelib'] + '\n')
  install = subprocess.run([sys.executable, '-m', 'pip', 'install', '-q', '--no-deps', '--target', site, str(ROOT)],
                           capture_output=True, text=True, timeout=600)
  assert install.returncode == 0, install.stderr[-3000:]
  return python, site


@pytest.mark.e2e
def test_notebooks_execute_in_a_fresh_environment_from_a_pip_install(tmp_path):
  python, site = fresh_environment(tmp_path / 'env')
  env = {k: v for k, v in os.environ.items() if k not in ('PYTHONPATH', 'VIRTUAL_ENV')}
  env.update(IMPLICIT_JAX_NOTEBOOK_CONFIG='tiny', TMPDIR=str(tmp_path), JAX_PLATFORMS='cpu')
  proc = subprocess.run([str(python), '-c', RUNNER, *NOTEBOOKS], cwd=ROOT / 'notebooks', env=env,
                        capture_output=True, text=True, timeout=900)
  assert proc.returncode == 0, proc.stderr[-3000:]
  out = json.loads(proc.stdout.strip().splitlines()[-1])
  for name in NOTEBOOKS:
    assert out[name]['errors'] == [], (name, out[name])
    assert out[name]['figures'] >= 1, f'{name}: no figure was displayed'
    package, executable = out[name]['where']
    assert package.startswith(site) and executable == str(python), out[name]  # the installed copy, this env
