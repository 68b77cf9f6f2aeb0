"""Shared test settings."""

import atexit
import os
import shutil
import sys
import tempfile
from pathlib import Path

# One compilation cache for the whole session, subprocesses included: many tests compile the same programs (the
# tiny config's steps and predictors), and a cache hit skips XLA's compile, the bulk of their time. It changes no
# result (the same executable runs) and no trace count (jit still traces). Fresh per session unless the caller
# points JAX_COMPILATION_CACHE_DIR elsewhere.
if 'JAX_COMPILATION_CACHE_DIR' not in os.environ:
  os.environ['JAX_COMPILATION_CACHE_DIR'] = tempfile.mkdtemp(prefix='implicit_jax_tests_xla_')
  atexit.register(shutil.rmtree, os.environ['JAX_COMPILATION_CACHE_DIR'], True)
os.environ.setdefault('JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS', '0.3')
os.environ.setdefault('JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES', '0')
# XLA's cheapest code generation: the tests' programs are tiny and run a few steps, so compiling them is most of the
# suite's time, and this cuts it by about 40%. Float results can differ from the default level's in the last bits;
# a test that compares with numbers made at the default level (tests/fixtures) clears FULL_OPT_ENV's flags for the
# process it runs. IMPLICIT_JAX_TEST_FULL_OPT=1 keeps XLA's defaults for the whole suite.
FAST_XLA = '--xla_backend_optimization_level=0 --xla_llvm_disable_expensive_passes=true'
if os.environ.get('IMPLICIT_JAX_TEST_FULL_OPT') != '1':
  os.environ['XLA_FLAGS'] = f'{os.environ.get("XLA_FLAGS", "")} {FAST_XLA}'.strip()


def full_opt_env(**extra) -> dict:
  """This process's environment with XLA's default optimisation (for a subprocess whose numbers are compared with
  numbers made at that level), plus ``extra``."""
  env = dict(os.environ, **extra)
  env['XLA_FLAGS'] = env.get('XLA_FLAGS', '').replace(FAST_XLA, '').strip()
  return env

import pytest  # pylint: disable=wrong-import-position

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # `tests` and `scripts` import from the repository root

from implicit_jax.engine import config as config_lib  # pylint: disable=wrong-import-position
from implicit_jax.testing import float64  # pylint: disable=wrong-import-position,unused-import  # the tests' import


def load_config(name: str):
  """``configs/<name>.py``'s config, loaded by path as ``python -m implicit_jax.main --config=...`` does."""
  return config_lib.from_file(ROOT / 'configs' / f'{name}.py')


@pytest.fixture
def x64():
  with float64():
    yield


@pytest.fixture(scope='session')
def tiny_run(tmp_path_factory):
  """``configs/tiny.py`` as it is (the implicit method, 2 epochs) trained once per session and worker, for the tests
  that read a finished run: ``(workdir, result)``. A test that changes the workdir changes a copy of it."""
  from implicit_jax.engine import train  # pylint: disable=import-outside-toplevel
  workdir = tmp_path_factory.mktemp('tiny_run')
  return workdir, train.train_and_evaluate(load_config('tiny'), str(workdir))


# The faults page (docs/faults.md): each fault case of tests/fault_cases.py records what it showed through the
# `fault` fixture, and `--faults-page=PATH` writes the table from those records at the end of the session.
def pytest_addoption(parser):
  parser.addoption('--faults-page', metavar='PATH', default=None,
                   help='write the table of bad input and faults (docs/faults.md) from the fault cases run: '
                        'pytest -m e2e tests/test_faults.py --faults-page=docs/faults.md')


def pytest_configure(config):
  if config.getoption('--faults-page') and not hasattr(config, 'workerinput'):  # xdist's workers report to it
    from tests import fault_cases  # pylint: disable=import-outside-toplevel
    config.pluginmanager.register(fault_cases.PageWriter(config, config.getoption('--faults-page')), 'faults_page')


@pytest.fixture
def fault(request, tmp_path_factory):
  """``with fault(key, code, stderr): <assertions>``: what fault case ``key`` showed, for the faults page
  (tests/fault_cases.py)."""
  from tests import fault_cases  # pylint: disable=import-outside-toplevel
  return fault_cases.Recorder(request.node, tmp_path_factory.getbasetemp(), ROOT)
