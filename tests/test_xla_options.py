"""The XLA options every step compiles with: applied on CPU, dropped when the installed XLA rejects them."""

import jax
import jax.numpy as jnp
import numpy as np

from implicit_jax.engine import xla_options


def test_cpu_options_are_accepted_and_change_nothing_numerically():
  opts = xla_options.compiler_options()
  assert jax.default_backend() != 'cpu' or opts == {'xla_cpu_experimental_ynn_fusion_type': ''}
  a = jax.random.normal(jax.random.key(0), (32, 150))
  b = jax.random.normal(jax.random.key(1), (150, 150))
  f = lambda a, b: jax.nn.softplus(a @ b).sum(0)
  np.testing.assert_allclose(xla_options.jit(f)(a, b), jax.jit(f)(a, b), rtol=1e-5)


def test_unknown_options_are_dropped(monkeypatch):
  monkeypatch.setattr(xla_options, '_CPU_OPTIONS', {'xla_cpu_no_such_option_anywhere': True})
  xla_options.compiler_options.cache_clear()
  try:
    if jax.default_backend() == 'cpu':
      assert xla_options.compiler_options() is None
    assert float(xla_options.jit(lambda x: x + 1)(jnp.ones(()))) == 2.0
  finally:
    xla_options.compiler_options.cache_clear()
