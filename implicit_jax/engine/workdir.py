"""Guards of a training workdir: one trainer at a time, the same data on resume, paths that can be written.

* ``Lock``: an exclusive ``flock`` on the workdir folder itself, held by the trainer for the whole run; deleting a
  file cannot release it. The kernel drops it when the process dies (kill -9 included), so a crashed run never
  leaves a stale lock; a second trainer is refused with the holder's process id (``workdir/lock`` records it).
  Readers (``evaluate``, ``predict``, ``load_trained``) take no lock: they open checkpoints read-only. Only
  process 0 of a multi-host run takes it; on network file systems ``flock`` may lock only within one host, so
  there the guard is per host.
* ``check_data``: ``workdir/data.json`` records a fingerprint of every split array the run trains and selects
  on; a resumed run whose data differs (a file changed at the same path, other split settings) is refused,
  naming the task's files; ``evaluate`` refuses it too (``check_unchanged``). The record also holds the task's
  column names and preprocessing (``Task.names``, ``Task.preprocess``): ``predict`` prepares a new file with the
  run's own (``recorded_inputs``), not with statistics refitted on the training files as they are later.
* ``prepare``: the workdir exists and is a writable folder that holds nothing but a run's files, or one line
  says why not (a folder of the user's own files, ``/``, is refused before anything is written).
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import re
import socket
import sys
from typing import Any

import numpy as np

try:
  import fcntl
except ImportError:  # not POSIX: no lock (the project targets Linux and macOS)
  fcntl = None


class WorkdirBusy(ValueError):
  """Another trainer holds the workdir."""


def os_errno(error: Exception) -> int | None:
  """The OS error number behind ``error``: an OSError's, or the ``os_error_code='28'`` that tensorstore (Orbax's
  array writer) puts in the ValueError it raises for a failed write."""
  code = getattr(error, 'errno', None)
  if isinstance(code, int):
    return code
  found = re.search(r"os_error_code='(\d+)'", str(error))
  return int(found.group(1)) if found else None


def os_reason(error: Exception) -> str:
  """What failed, in words a user can act on: ``No space left on device (errno 28)``; without an OS error number,
  the error's first line."""
  code = os_errno(error)
  if code is not None:
    strerror = getattr(error, 'strerror', None) if isinstance(error, OSError) else None
    return f'{strerror or os.strerror(code)} (errno {code})'
  lines = str(error).strip().splitlines()
  return f'{type(error).__name__}: {lines[0][:200] if lines else ""}'


def disk_error(what: str, error: Exception, then: str = '') -> OSError:
  """An OSError whose whole message is ``what: reason[; then]`` (the path, the cause and what to do, on one line),
  keeping the error number."""
  out = OSError(f'{what}: {os_reason(error)}' + (f'; {then}' if then else ''))
  out.errno = os_errno(error)
  return out


def _is_record(path: str, keys: tuple[str, ...]) -> bool:
  """Whether ``path`` is a JSON object holding ``keys``: a file a run of this project wrote."""
  try:
    with open(path) as f:
      record = json.load(f)
  except (OSError, ValueError):
    return False
  return isinstance(record, dict) and all(k in record for k in keys)


def _is_lock_record(path: str) -> bool:
  """Whether ``path`` is empty or holds ``Lock``'s record (``<pid> on <host>``): what a start killed before its
  config record was written leaves."""
  try:
    with open(path) as f:
      text = f.read(300)
  except (OSError, UnicodeDecodeError):
    return False
  return not text or re.fullmatch(r'\d+ on \S+\n', text) is not None


def _empty_folder(workdir: str, name: str) -> bool:
  path = os.path.join(workdir, name)
  return os.path.isdir(path) and not os.listdir(path)


def foreign_files(workdir: str) -> list[str]:
  """The entries of an existing ``workdir`` that a run of this project did not write: the run's JSON files that
  are not a run's records (a user's own config.json, metrics.json or data.json); and, without a run's config
  record, everything but what a start leaves before it writes one (its lock record, empty checkpoint folders): a
  run writes config.json right after taking its lock, so a metrics.jsonl, a checkpoint folder with files in it
  or a lock file of another form without it are someone else's, which a run would replace."""
  entries = sorted(os.listdir(workdir))
  own = {'config.json': ('method', 'seed', 'batch_size'), 'metrics.json': ('method', 'config'),
         'data.json': ('fingerprint',)}
  foreign = [name for name, keys in own.items()
             if name in entries and not _is_record(os.path.join(workdir, name), keys)]
  if 'config.json' not in entries or 'config.json' in foreign:
    # What a start stopped before its config record was written leaves: its lock record, the record's temporary
    # (written atomically), and the checkpoint folders, still empty.
    started = {'config.json.tmp'} | ({'lock'} if _is_lock_record(os.path.join(workdir, 'lock')) else set())
    started |= {name for name in ('checkpoints', 'best') if name in entries and _empty_folder(workdir, name)}
    foreign += [name for name in entries if name not in started]
  return sorted(set(foreign))


def prepare(workdir: str) -> None:
  """Creates ``workdir``; raises OSError with one clear line when it cannot be a writable folder, and ValueError
  when it holds files a run of this project did not write (they are left untouched; ``/`` is such a folder)."""
  if os.path.exists(workdir) and not os.path.isdir(workdir):
    raise NotADirectoryError(errno.ENOTDIR, '--workdir names an existing file, not a folder', workdir)
  if os.path.isdir(workdir):
    foreign = foreign_files(workdir)
    if foreign:
      shown = ', '.join(foreign[:5]) + (f' (+{len(foreign) - 5} more)' if len(foreign) > 5 else '')
      raise ValueError(f'--workdir {workdir} holds files a training run did not write ({shown}); nothing was '
                       'changed: give a new or empty folder')
  try:
    os.makedirs(workdir, exist_ok=True)
  except OSError as e:
    raise OSError(e.errno, f'cannot create the workdir ({e.strerror})', workdir) from None
  if not os.access(workdir, os.W_OK | os.X_OK):
    raise PermissionError(errno.EACCES, 'the workdir is not writable', workdir)


class Lock:
  """``with Lock(workdir):`` holds the workdir's training lock (no-op where ``flock`` does not exist).

  The lock is an exclusive ``flock`` on the workdir folder itself, not on a file in it: a file can be deleted (a
  ``lock`` left in a finished workdir looks stale), and a second trainer would then lock a new file of the same
  name beside the first. ``workdir/lock`` only records the holder (process id and host) for the refusal's message;
  it is removed when the run ends."""

  def __init__(self, workdir: str):
    self.workdir = workdir
    self.path = os.path.join(workdir, 'lock')
    self._fd = None
    self._record = None

  def __enter__(self) -> 'Lock':
    if fcntl is None:
      return self
    fd = os.open(self.workdir, os.O_RDONLY)  # a folder opens read-only, which is all flock needs
    try:
      fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
      os.close(fd)
      raise WorkdirBusy(f'{self.workdir} is in use by another training run (process {self._holder()}); wait for '
                        'it to end, or give another --workdir') from None
    except BaseException:
      os.close(fd)
      raise
    self._fd = fd
    record = f'{os.getpid()} on {socket.gethostname()}\n'
    try:
      with open(self.path, 'w') as f:
        f.write(record)
    except OSError as e:
      with contextlib.suppress(OSError):
        os.remove(self.path)  # a full disk leaves it empty: not a record
      self.__exit__()
      raise disk_error(f'cannot write {self.path}', e) from None
    self._record = record
    return self

  def _holder(self) -> str:
    """The holder's process id, from the kernel's lock table where there is one (Linux), with its host from the
    record file; what the record says where the kernel does not tell; else 'unknown'."""
    try:
      with open(self.path) as f:
        recorded = f.read(200).strip()
    except OSError:
      recorded = ''
    pid = None
    try:
      st = os.stat(self.workdir)
      key = f'{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}'
      with open('/proc/locks') as f:
        for line in f:
          fields = line.split()
          # "1: FLOCK  ADVISORY  WRITE 1234 fe:00:5678 0 EOF"; waiters are marked "->" and hold nothing
          if len(fields) > 5 and fields[1] == 'FLOCK' and fields[5] == key and fields[4] != '0':
            pid = fields[4]
            break
    except OSError:
      pass
    if pid is None:
      return recorded or 'unknown'
    return recorded if recorded.split(' ', 1)[0] == pid else pid

  def __exit__(self, *exc) -> None:
    if self._fd is None:
      return
    try:
      with open(self.path) as f:
        if f.read(200) == self._record:  # removed before the lock is released: a next holder's is its own
          os.remove(self.path)
    except OSError:
      pass  # gone already, or unreadable: it is only a record
    os.close(self._fd)  # closing the descriptor releases the flock
    self._fd = self._record = None


def digest(value) -> str:
  """A sha256 prefix of an array's bytes, dtype and shape."""
  value = np.ascontiguousarray(value)
  h = hashlib.sha256(f'{value.dtype.str}{value.shape}'.encode())
  h.update(value.data)
  return h.hexdigest()[:16]


def write_json(path: str, obj: Any) -> None:
  """Writes JSON atomically (``write_text``)."""
  write_text(path, json.dumps(obj, indent=2))  # a value JSON cannot hold fails here, before any file is touched


def write_text(path: str, text: str) -> None:
  """Writes ``text`` atomically (temporary file, then rename). A write that fails (a full disk) leaves no temporary
  file and raises an OSError naming ``path``."""
  tmp = f'{path}.tmp'
  try:
    with open(tmp, 'w') as f:
      f.write(text)
    os.replace(tmp, path)
  except OSError as e:
    with contextlib.suppress(OSError):
      os.remove(tmp)
    raise disk_error(f'cannot write {path}', e) from None


def read_json(path: str) -> Any:
  """A JSON file of the workdir; a damaged one is named in a one-line ValueError."""
  try:
    with open(path) as f:
      return json.load(f)
  except ValueError as e:
    raise ValueError(f'{path}: not valid JSON ({e})') from None


def fingerprint(task) -> dict:
  """``{split: {array: digest}}`` of the task's splits: the bytes, dtype and shape of every array."""
  return {split: {key: digest(value) for key, value in sorted(arrays.items())}
          for split, arrays in task.splits.items()}


def by_array(fingerprint: dict) -> dict:
  """``{'train.x': digest, ...}``: a fingerprint's digests under the names the refusals give."""
  return {f'{split}.{key}': value for split, arrays in fingerprint.items() for key, value in arrays.items()}


def _changed(stored: dict, current: dict) -> list[str]:
  """The split arrays (``'train.x'``, ...) whose fingerprint ``current`` differs from the record ``stored``."""
  old, new = by_array(stored['fingerprint']), by_array(current)
  order = {'train': 0, 'dev': 1, 'test': 2}  # splits in the order a user thinks of them
  names = sorted(set(old) | set(new), key=lambda n: (order.get(n.split('.')[0], 3), n))
  return [name for name in names if old.get(name) != new.get(name)]


def data_files(info: dict) -> list[str]:
  """The files (or folder) a task read its data from, as its ``info`` names them: ``files``, or one ``file``
  (Cora), or a ``folder`` (the horse images)."""
  if info.get('files'):
    return [str(f) for f in info['files']]
  return [str(info[key]) for key in ('file', 'folder') if info.get(key)][:1]


def _read_record(workdir: str) -> tuple[str, dict | None]:
  path = os.path.join(workdir, 'data.json')
  if not os.path.exists(path):
    return path, None
  stored = read_json(path)
  digests = stored.get('fingerprint') if isinstance(stored, dict) else None
  if not isinstance(digests, dict) or not all(isinstance(arrays, dict) for arrays in digests.values()):
    raise ValueError(f'{path}: unreadable data record (no fingerprint); move it away to go on without the '
                     'check')
  return path, stored


def check_data(workdir: str, task, resuming: bool, write: bool = True, digests: dict | None = None) -> None:
  """Records the data's fingerprint, column names and preprocessing for a new run; for a resumed one, refuses data
  that differs from the recorded fingerprint. A run recorded before fingerprints existed gets one now (nothing to
  compare), and one recorded before names and preprocessing were gets them (its data is the run's). ``digests``:
  the fingerprint when the caller has computed it already (a multi-host run's processes compare it first)."""
  current = {'fingerprint': digests or fingerprint(task), 'files': data_files(task.info), 'names': task.names,
             'preprocess': task.preprocess}
  path, stored = _read_record(workdir) if resuming else (os.path.join(workdir, 'data.json'), None)
  if stored is not None:
    changed = _changed(stored, current['fingerprint'])  # hashed once: a pass over the data
    if changed:
      files = ', '.join(current['files'] or stored.get('files', [])) or 'the data settings in config.json'
      raise ValueError(f'workdir {workdir} was trained on other data: {", ".join(changed[:6])} differ from the '
                       f'run\'s record ({path}); the data read now comes from {files}. Restore that data or '
                       'start a new workdir')
    if 'preprocess' in stored or not write:
      return
  if write:
    write_json(path, current)


def check_unchanged(workdir: str, task) -> None:
  """For a reader (``evaluate``): refuses data whose fingerprint differs from the run's record, in one line naming
  the splits that differ (a data file changed or reshuffled, other split settings): scoring it would score rows the
  run may have trained on. A run without a record is not checked."""
  path, stored = _read_record(workdir)
  if stored is None:
    return
  changed = _changed(stored, fingerprint(task))
  if changed:
    splits = list(dict.fromkeys(name.split('.')[0] for name in changed))
    files = ', '.join(data_files(task.info) or stored.get('files', [])) or 'the data settings in config.json'
    raise ValueError(f'workdir {workdir} was trained on other data: the {", ".join(splits)} split'
                     f'{"s" if len(splits) > 1 else ""} read now from {files} differ from the run\'s record '
                     f'({path}: {", ".join(changed[:6])}). Restore the run\'s data to evaluate it')


def recorded_inputs(workdir: str, task) -> tuple[dict, dict]:
  """``(names, preprocess)`` of the run's training data, as ``data.json`` recorded them at its start: what
  ``predict`` applies to a new file. A run recorded before they were gets the task's own, read from today's data,
  if that data is the run's (same fingerprint); if it is not, a one-line ValueError; with no record at all, a
  warning."""
  path, stored = _read_record(workdir)
  if stored is not None and 'preprocess' in stored:
    return stored.get('names') or {}, stored['preprocess']
  changed = _changed(stored, fingerprint(task)) if stored is not None else []
  if stored is None:
    print(f'warning: {workdir} has no data record ({path}): new inputs are prepared from the training data as it '
          'is now, which may differ from the run\'s', file=sys.stderr, flush=True)
  elif changed:
    raise ValueError(f'workdir {workdir}: the training data changed since the run ({", ".join(changed[:6])} differ '
                     f'from {path}), and the run is older than the record of its preprocessing: restore the '
                     'run\'s data to predict with it')
  return task.names, task.preprocess
