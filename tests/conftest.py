"""Shared test settings."""

import contextlib
import sys
from pathlib import Path

import jax
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # `configs` is a top-level folder, importable from the repository root


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
