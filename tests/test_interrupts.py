"""Ctrl-C under the command lines' handler (implicit_jax/engine/interrupts.py): raised, but never inside an XLA
compile, and never lost where Python drops exceptions (a gc callback, a weakref callback, a ``__del__``)."""

import contextlib
import gc
import os
import signal
import sys
import textwrap
import threading
import time
import traceback
import weakref

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from implicit_jax.engine import interrupts


@contextlib.contextmanager
def _python_handler():
  """Python's own SIGINT handler, as a user's command has: a pytest-xdist worker may inherit SIGINT ignored, and
  ``handled()`` leaves any other handler alone."""
  previous = signal.signal(signal.SIGINT, signal.default_int_handler)
  try:
    yield
  finally:
    signal.signal(signal.SIGINT, previous)


def _wait(seconds=5.0):
  """Plain Python for ``seconds``: a pending interrupt is raised here."""
  deadline = time.perf_counter() + seconds
  while time.perf_counter() < deadline:
    time.sleep(0.01)


def test_ctrl_c_during_an_xla_compile_is_raised_once_the_compile_has_ended():
  """Ctrl-C while jax waited for XLA's compile raised KeyboardInterrupt inside the wait (backend_compile_and_load);
  the compile went on in XLA's threads and crashed the process at its exit (issue 65). Under ``handled()`` the
  interrupt comes once the compile has returned: no frame of the KeyboardInterrupt's traceback is the wait."""
  def long(x):  # a few hundred ops: a compile of a second or so, long after the signal
    for i in range(300):
      x = jnp.sin(x) * (i + 1.0) + jnp.cos(x[::-1])
    return x

  # another constant each run: the suite's compilation cache would skip the compile
  lowered = jax.jit(long).lower(jnp.full(64, np.float32(np.random.default_rng().random())))
  with _python_handler(), pytest.raises(KeyboardInterrupt) as caught:
    with interrupts.handled():
      threading.Timer(0.05, os.kill, (os.getpid(), signal.SIGINT)).start()
      lowered.compile()
      _wait()
  frames = [f'{frame.filename}:{frame.name}' for frame in traceback.extract_tb(caught.tb)]
  assert not [f for f in frames if '/jax/' in f or 'backend_compile_and_load' in f], frames


def test_ctrl_c_inside_a_bare_except_of_jax_is_raised_once_out_of_jax_not_swallowed():
  """jax's Python code has bare ``except:`` clauses (one around the executable's layouts, right after each compile):
  a KeyboardInterrupt raised inside one vanished, and a tune ran on to its end after Ctrl-C. Here a function of a
  module named as jax's swallows whatever its callee raises; the interrupt must come once out of it."""
  space = {'__name__': 'jax._src.core'}
  exec(textwrap.dedent("""
      def guarded(callee):
        try:
          callee()
        except:
          return 'swallowed'
        return 'returned'
      """), space)  # pylint: disable=exec-used
  with _python_handler(), pytest.raises(KeyboardInterrupt):
    with interrupts.handled():
      outcome = space['guarded'](lambda: signal.raise_signal(signal.SIGINT))
      _wait()
  assert outcome == 'returned'


@pytest.mark.parametrize('where', ['gc_callback', 'weakref_callback', 'del'])
def test_ctrl_c_where_python_drops_exceptions_is_raised_after_not_lost(where):
  """KeyboardInterrupt raised in a garbage-collector callback (jax has one), a weakref callback or a ``__del__`` was
  printed as 'Exception ignored' and dropped: the Ctrl-C was lost and the command went on. Under ``handled()`` it
  is raised again once out, and nothing is printed."""
  sent = []

  def interrupt(*_):
    if not sent:
      sent.append(where)
      signal.raise_signal(signal.SIGINT)  # Python's handler runs here, at once

  class Dropped:
    def __del__(self):
      interrupt()

  class Referent:
    pass

  dropped, callbacks, kept = [], list(gc.callbacks), []
  hook, sys.unraisablehook = sys.unraisablehook, dropped.append
  try:
    with _python_handler(), pytest.raises(KeyboardInterrupt):
      with interrupts.handled():
        if where == 'gc_callback':
          gc.callbacks.append(interrupt)
          gc.collect()
        elif where == 'weakref_callback':
          referent = Referent()
          kept.append(weakref.ref(referent, interrupt))  # kept: a weakref collected first calls nothing
          del referent
        else:
          Dropped()
        _wait()
  finally:
    sys.unraisablehook = hook
    gc.callbacks[:] = callbacks
  assert sent == [where] and not dropped, dropped


def test_a_ctrl_c_made_pending_again_while_its_deferral_runs_is_deferred_again_not_lost(monkeypatch):
  """Under load the helper can make the interrupt pending while the main thread is still in the unraisable hook's
  deferral: raised there, inside ``sys.unraisablehook``, the KeyboardInterrupt was dropped for good (a timer per
  deferral then; one failure of this file, not reproduced, in about 20 runs beside a busy machine fits it). A first
  ask to the helper that takes five of its intervals makes it so here: the interrupt must still come."""
  slowed = []

  class SlowFirstWrite:
    def __getattr__(self, name):
      return getattr(os, name)

    @staticmethod
    def write(fd, data):
      written = os.write(fd, data)
      if not slowed:
        slowed.append(fd)
        time.sleep(5 * interrupts.AGAIN_SECONDS)  # the helper makes the signal pending meanwhile
      return written

  class Dropped:
    def __del__(self):
      signal.raise_signal(signal.SIGINT)

  monkeypatch.setattr(interrupts, 'os', SlowFirstWrite())
  dropped = []
  monkeypatch.setattr(sys, 'unraisablehook', dropped.append)
  with _python_handler(), pytest.raises(KeyboardInterrupt):
    with interrupts.handled():
      Dropped()
      _wait()
  assert slowed and not dropped, dropped


def test_a_ctrl_c_still_deferred_when_the_block_ends_is_raised_within_it_and_once():
  """A Ctrl-C dropped at the very end of the block is raised as the block ends, inside it (where the command's guard
  prints its one line), and only once: nothing arrives after the block."""
  class Dropped:
    def __del__(self):
      signal.raise_signal(signal.SIGINT)

  raised = []
  with _python_handler():
    try:
      with interrupts.handled():
        Dropped()
    except KeyboardInterrupt:
      raised.append('within')
    try:
      _wait(10 * interrupts.AGAIN_SECONDS)
    except KeyboardInterrupt:
      raised.append('after')
  assert raised == ['within']


def test_a_command_started_with_ctrl_c_ignored_keeps_ignoring_it():
  """A command started in the background inherits SIGINT ignored: ``handled()`` installs nothing there."""
  previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
  try:
    with interrupts.handled():
      assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
  finally:
    signal.signal(signal.SIGINT, previous)
