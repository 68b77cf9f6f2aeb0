"""``jit``: ``jax.jit`` with the XLA options this project compiles every step and predictor with.

On CPU, XLA (jax 0.10) hands dot-and-elementwise fusions to YNNPACK by default. On the small matrices of these
models (batch 32, widths 150) its fusions cost more than XLA's own dots: the bibtex implicit step used about
10% less CPU time without them (6 interleaved epochs, benchmarks/epoch.py measures it). Options that the
installed XLA does not know are dropped, so a newer jax costs speed, not a crash. Other backends get no options.

No cap on the instruction set (``xla_cpu_max_isa``) is among them, though the same seed rounds differently on
another kind of CPU: XLA reads that cap from XLA_FLAGS alone (as a compiler option it changes nothing), and no cap
made the main job repeat its committed record on another kind (benchmarks/cpu_pin.py, docs/usage.md "Rerunning a
record").
"""

import functools

import jax
import jax.numpy as jnp

_CPU_OPTIONS = {'xla_cpu_experimental_ynn_fusion_type': ''}  # '' = no op kind is fused into YNNPACK


@functools.cache
def compiler_options() -> dict | None:
  """The options for the default backend, or None when there are none (or the installed XLA rejects them)."""
  if jax.default_backend() != 'cpu':
    return None
  try:
    jax.block_until_ready(jax.jit(lambda a: a @ a, compiler_options=_CPU_OPTIONS)(jnp.ones((2, 2))))
  except jax.errors.JaxRuntimeError:  # 'No such compile option' from an XLA that renamed or removed it
    return None
  return dict(_CPU_OPTIONS)


def jit(fn, **kwargs):
  """``jax.jit(fn, **kwargs)`` compiled with ``compiler_options()``."""
  return jax.jit(fn, compiler_options=compiler_options(), **kwargs)
