"""The notebooks: committed without outputs, in sync with notebooks/build_notebooks.py, and executing headless
on the tiny config."""

import os

import nbformat
import pytest

from tests.conftest import ROOT

NOTEBOOKS = ['quickstart.ipynb', 'energy_analysis.ipynb']


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


@pytest.mark.parametrize('name', NOTEBOOKS)
def test_notebook_executes_headless_on_the_tiny_config(name, tmp_path, monkeypatch):
  nbclient = pytest.importorskip('nbclient')
  monkeypatch.setenv('IMPLICIT_JAX_NOTEBOOK_CONFIG', 'tiny')
  monkeypatch.setenv('TMPDIR', str(tmp_path))  # the notebooks' workdir lives under tempfile.gettempdir()
  monkeypatch.setenv('JAX_PLATFORMS', 'cpu')
  monkeypatch.setenv('PYTHONPATH', os.pathsep.join([str(ROOT), os.environ.get('PYTHONPATH', '')]))
  nb = nbformat.read(ROOT / 'notebooks' / name, as_version=4)
  nbclient.NotebookClient(nb, timeout=600, kernel_name='python3',
                          resources={'metadata': {'path': str(ROOT)}}).execute()
  outputs = [o for cell in nb.cells if cell.cell_type == 'code' for o in cell.outputs]
  assert not [o for o in outputs if o.output_type == 'error']
  assert any(o.output_type in ('display_data', 'execute_result') and 'image/png' in o.get('data', {})
             for o in outputs), \
      f'{name}: no figure was displayed'
