"""Shared test settings."""

import contextlib
import sys
from pathlib import Path

import jax
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # `tests` and `scripts` import from the repository root

from implicit_jax.engine import config as config_lib  # pylint: disable=wrong-import-position


def load_config(name: str):
  """``configs/<name>.py``'s config, loaded by path as ``python -m implicit_jax.main --config=...`` does."""
  return config_lib.from_file(ROOT / 'configs' / f'{name}.py')


@contextlib.contextmanager
def float64():
  """Gradient checks run in float64 so that 1e-6 agreements test the math, not round-off."""
  previous = jax.config.jax_enable_x64
  jax.config.update('jax_enable_x64', True)
  try:
    yield
  finally:
    jax.config.update('jax_enable_x64', previous)


@pytest.fixture
def x64():
  with float64():
    yield
