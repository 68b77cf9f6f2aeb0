"""Ctrl-C for the command lines: KeyboardInterrupt, but never where it crashes the process or is lost.

Python raises KeyboardInterrupt wherever the main thread is when SIGINT arrives. Two kinds of place cannot take it:

* an XLA compile (jax 0.10): jax waits for it in C++, checking for signals; interrupted, it stops waiting while the
  compile goes on in XLA's threads, and at exit the backend's client frees its devices before it joins those
  threads, so a compile still running then dies on a freed device: 'Fatal Python error: Segmentation fault', exit
  139, after the command's own 'interrupted' line. A tune compiles in every probe run and trial, which is why its
  Ctrl-C crashed so often (3 of 6 tries at random moments; every try inside an implicit CD step's compile);
* the places whose exceptions Python drops: a garbage-collector callback (jax's runs on every collection), a weakref
  callback, a ``__del__``. There the KeyboardInterrupt is printed ('Exception ignored in ...', a traceback) and
  lost, and the command goes on as if no Ctrl-C came.

``handled()`` defers the first (its handler raises nothing while the main thread is in a compile) and catches the
second (``sys.unraisablehook`` takes the KeyboardInterrupt Python drops); either way the interrupt is made pending
again a moment later, until it is raised where it can be. A timer thread makes it pending: made pending from the
handler itself, Python would call the handler again inside itself, without end. A Ctrl-C during a compile takes
effect when the compile ends (seconds); one Ctrl-C is one KeyboardInterrupt (each deferral starts one timer, which
makes the signal pending once, which calls the handler once).
"""

from __future__ import annotations

import _thread
import contextlib
import signal
import sys
import threading

# (module, function) of the Python frame from which jax calls XLA's compile, and waits for it.
_COMPILES = {('jax._src.compiler', 'backend_compile_and_load')}
AGAIN_SECONDS = 0.02
_timers: set = set()  # deferrals in flight


def in_compile(frame) -> bool:
  """Whether ``frame`` (the main thread's, where a signal found it) runs inside jax's wait for an XLA compile."""
  while frame is not None:
    if (frame.f_globals.get('__name__'), frame.f_code.co_name) in _COMPILES:
      return True
    frame = frame.f_back
  return False


def _again(signum=signal.SIGINT) -> None:
  """The interrupt pending again in ``AGAIN_SECONDS``."""
  timer = threading.Timer(AGAIN_SECONDS, _pending, (signum,))
  timer.daemon = True
  _timers.add(timer)
  timer.start()


def _pending(signum) -> None:
  _thread.interrupt_main(signum)
  _timers.discard(threading.current_thread())


def _on_sigint(signum, frame):
  if in_compile(frame):
    _again(signum)
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

  def hook(unraisable):
    if active[0] and isinstance(unraisable.exc_value, KeyboardInterrupt):
      _again()  # dropped where Python cannot raise it: raised again a moment later
    else:
      previous_hook(unraisable)

  signal.signal(signal.SIGINT, _on_sigint)
  sys.unraisablehook = hook
  try:
    yield
  finally:
    try:
      for timer in list(_timers):  # a Ctrl-C still deferred is raised here, within the block, not after it
        timer.join()
    finally:
      active[0] = False
      if sys.unraisablehook is hook:  # else a hook set since (checkpoints.py's) calls this one, which passes all on
        sys.unraisablehook = previous_hook
      signal.signal(signal.SIGINT, signal.default_int_handler)
