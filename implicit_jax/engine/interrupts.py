"""Ctrl-C for the command lines: KeyboardInterrupt, but never where it crashes the process or is lost.

Python raises KeyboardInterrupt wherever the main thread is when SIGINT arrives. Three kinds of place cannot take
it:

* an XLA compile (jax 0.10): jax waits for it in C++, checking for signals; interrupted, it stops waiting while the
  compile goes on in XLA's threads, and at exit the backend's client frees its devices before it joins those
  threads, so a compile still running then dies on a freed device: 'Fatal Python error: Segmentation fault', exit
  139, after the command's own 'interrupted' line. A tune compiles in every probe run and trial, which is why its
  Ctrl-C crashed so often (MBCE: 3 of 6 tries at random moments; implicit CD, whose step compiles for seconds: 4 of
  4 at random moments, and every try inside that compile);
* the rest of jax's Python code, and Orbax's, which swallow or convert exceptions in places: a bare ``except:``
  around the executable's layouts right after each compile (``pxla._get_layouts_from_executable``), around
  ``lax.broadcast_shapes``, around ``operator.index`` in ``core``; Orbax's array reads re-raise any exception as an
  ``Exception``. A KeyboardInterrupt raised in the first vanished and the command ran on to its end (4 of about 60
  tunes sent SIGINT inside a compile, the interrupt deferred from it raised just after it);
* the places whose exceptions Python drops: a garbage-collector callback (jax's runs on every collection), a weakref
  callback, a ``__del__``. There the KeyboardInterrupt is printed ('Exception ignored in ...', a traceback) and
  lost, and the command goes on as if no Ctrl-C came.

``handled()`` defers the first two (its handler raises nothing while a frame of jax's or Orbax's is on the main
thread's stack: jax calls back into the caller's code while it traces, and both return to it after each call, a
checkpoint's restore within a second) and catches the third (``sys.unraisablehook`` takes the KeyboardInterrupt
Python drops); either way a helper thread makes the interrupt pending again a moment later, until it is raised where
it can be. (Made pending from the handler itself, Python would
call the handler again inside itself, without end; the handler asks the helper through a pipe, which takes no lock:
a handler runs between any two bytecodes, a lock's holder's too.) A Ctrl-C during a compile, or any one call of
jax's or Orbax's, takes effect when it returns (seconds); one Ctrl-C is one KeyboardInterrupt (each deferral asks
once, each ask makes the signal pending once, which calls the handler once).
"""

from __future__ import annotations

import _thread
import contextlib
import os
import signal
import sys
import threading
import time
import types

# Where the handler defers: a frame of these packages' (jax's compile wait, their bare excepts), or of this module's
# own deferral (under load the helper can make the signal pending while the main thread is still in it: raised in
# the unraisable hook, the KeyboardInterrupt would be dropped again, for good).
_LIBRARIES = {'jax', 'jaxlib', 'orbax'}
_OWN = {(__name__, '_again'), (__name__, '_unraisable')}
AGAIN_SECONDS = 0.02
_asks = types.SimpleNamespace(pipe=None, asked=0, done=0)  # the helper's pipe; deferrals asked, made pending


def defers(frame) -> bool:
  """Whether ``frame`` (the main thread's, where a signal found it) or one it was called from is of jax, jaxlib or
  Orbax, or this module's deferral."""
  while frame is not None:
    module = frame.f_globals.get('__name__') or ''
    if module.partition('.')[0] in _LIBRARIES or (module, frame.f_code.co_name) in _OWN:
      return True
    frame = frame.f_back
  return False


def _again() -> None:
  """SIGINT pending again in ``AGAIN_SECONDS`` (the helper's work)."""
  _asks.asked += 1
  os.write(_asks.pipe, b'.')


def _helper(read_end: int) -> None:
  try:
    while os.read(read_end, 1):  # b'' once handled() closes the pipe
      time.sleep(AGAIN_SECONDS)
      _thread.interrupt_main(signal.SIGINT)
      _asks.done += 1
  finally:
    os.close(read_end)


def _on_sigint(signum, frame):
  del signum
  if defers(frame):
    _again()
    return
  raise KeyboardInterrupt


@contextlib.contextmanager
def handled():
  """Ctrl-C within the block as the module docstring says. Only where it would raise KeyboardInterrupt anyway
  (Python's own handler in place, the main thread): a command started with SIGINT ignored (in the background) goes
  on ignoring it, and a handler someone else put in place stays."""
  if (threading.current_thread() is not threading.main_thread()
      or signal.getsignal(signal.SIGINT) is not signal.default_int_handler):
    yield
    return
  previous_hook, active = sys.unraisablehook, [True]

  def _unraisable(unraisable):
    if active[0] and isinstance(unraisable.exc_value, KeyboardInterrupt):
      _again()  # dropped where Python cannot raise it: raised again a moment later
    else:
      previous_hook(unraisable)

  read_end, _asks.pipe = os.pipe()
  _asks.asked = _asks.done = 0
  threading.Thread(target=_helper, args=(read_end,), name='implicit_jax.interrupts', daemon=True).start()
  signal.signal(signal.SIGINT, _on_sigint)
  sys.unraisablehook = _unraisable
  try:
    yield
  finally:
    try:
      while _asks.done < _asks.asked:  # a Ctrl-C still deferred is raised here, within the block, not after it
        time.sleep(AGAIN_SECONDS / 4)
      time.sleep(0)  # the last one made pending (before it was counted) is raised by this call's check, not below
    finally:
      active[0] = False
      if sys.unraisablehook is _unraisable:  # else one set since (checkpoints.py's) calls this one: it passes all on
        sys.unraisablehook = previous_hook
      signal.signal(signal.SIGINT, signal.default_int_handler)
      os.close(_asks.pipe)
