"""Guards of a training workdir: one trainer at a time, the same data on resume, paths that can be written.

* ``Lock``: an exclusive ``flock`` on ``workdir/lock``, held by the trainer for the whole run. The kernel drops it
  when the process dies (kill -9 included), so a crashed run never leaves a stale lock; a second trainer is
  refused with the holder's process id. Readers (``evaluate``, ``predict``, ``load_trained``) take no lock: they
  open checkpoints read-only. Only process 0 of a multi-host run takes it; on network file systems ``flock`` may
  lock only within one host, so there the guard is per host.
* ``check_data``: ``workdir/data.json`` records a fingerprint of every split array the run trains and selects
  on; a resumed run whose data differs (a file changed at the same path, other split settings) is refused,
  naming the task's files.
* ``prepare``: the workdir exists and is a writable folder, or one line says why not.
"""

from __future__ import annotations

import errno
import hashlib
import os
import socket

import numpy as np

try:
  import fcntl
except ImportError:  # not POSIX: no lock (the project targets Linux and macOS)
  fcntl = None


class WorkdirBusy(ValueError):
  """Another trainer holds the workdir."""


def prepare(workdir: str) -> None:
  """Creates ``workdir``; raises OSError with one clear line when it cannot be a writable folder."""
  if os.path.exists(workdir) and not os.path.isdir(workdir):
    raise NotADirectoryError(errno.ENOTDIR, '--workdir names an existing file, not a folder', workdir)
  try:
    os.makedirs(workdir, exist_ok=True)
  except OSError as e:
    raise OSError(e.errno, f'cannot create the workdir ({e.strerror})', workdir) from None
  if not os.access(workdir, os.W_OK | os.X_OK):
    raise PermissionError(errno.EACCES, 'the workdir is not writable', workdir)


class Lock:
  """``with Lock(workdir):`` holds the workdir's training lock (no-op where ``flock`` does not exist)."""

  def __init__(self, workdir: str):
    self.path = os.path.join(workdir, 'lock')
    self._fd = None

  def __enter__(self) -> 'Lock':
    if fcntl is None:
      return self
    fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
      fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
      holder = os.read(fd, 200).decode(errors='replace').strip() or 'unknown'
      os.close(fd)
      raise WorkdirBusy(f'{os.path.dirname(self.path)} is in use by another training run (process {holder}); '
                        'wait for it to end, or give another --workdir') from None
    os.ftruncate(fd, 0)
    os.write(fd, f'{os.getpid()} on {socket.gethostname()}\n'.encode())
    self._fd = fd
    return self

  def __exit__(self, *exc) -> None:
    if self._fd is not None:
      os.close(self._fd)  # closing the descriptor releases the flock
      self._fd = None


def fingerprint(task) -> dict:
  """``{split: {array: sha256 prefix}}`` of the task's splits: the bytes, dtype and shape of every array."""
  out = {}
  for split, arrays in task.splits.items():
    out[split] = {}
    for key, value in sorted(arrays.items()):
      value = np.ascontiguousarray(value)
      h = hashlib.sha256(f'{value.dtype.str}{value.shape}'.encode())
      h.update(value.data)
      out[split][key] = h.hexdigest()[:16]
  return out


def check_data(workdir: str, task, resuming: bool, write: bool = True) -> None:
  """Records the data's fingerprint for a new run; for a resumed one, refuses data that differs from the
  recorded fingerprint. A run recorded before fingerprints existed gets one now (nothing to compare)."""
  from implicit_jax.engine import checkpoints, config as config_lib  # pylint: disable=import-outside-toplevel
  path = os.path.join(workdir, 'data.json')
  current = {'fingerprint': fingerprint(task), 'files': list(task.info.get('files', []))}
  if resuming and os.path.exists(path):
    stored = checkpoints.read_json(path)
    if not isinstance(stored.get('fingerprint'), dict):
      raise ValueError(f'{path}: unreadable data record (no fingerprint); move it away to resume without the '
                       'check')
    old, new = config_lib.flatten(stored['fingerprint']), config_lib.flatten(current['fingerprint'])
    changed = [name for name in sorted(set(old) | set(new)) if old.get(name) != new.get(name)]
    if changed:
      files = ', '.join(current['files'] or stored.get('files', [])) or 'the data settings in config.json'
      raise ValueError(f'workdir {workdir} was trained on other data: {", ".join(changed[:6])} differ from the '
                       f'run\'s record ({path}); the data read now comes from {files}. Restore that data or '
                       'start a new workdir')
    return
  if write:
    checkpoints.write_json(path, current)
