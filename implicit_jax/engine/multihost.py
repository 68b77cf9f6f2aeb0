"""The processes of a multi-host run (``--distributed``): joining them, and checking that they run the same thing.

* ``initialize``: ``jax.distributed.initialize`` with a bounded wait. JAX's coordination service cannot tell a
  process that never starts from one given another's ``--process_id``: the rest wait for the missing index, and
  when JAX's own timeout passes it aborts the process with a C++ stack trace. Here the wait ends after
  ``timeout`` seconds in one line saying what every process needs; and a process 0 whose coordinator address is
  already served (another process 0, or a stale run on the port) is refused before it joins.
* ``agree``: every process hands in the facts its run depends on (the resolved config, the workdir, the
  data's fingerprint); all of them receive everyone's, so when they differ every process raises the same
  ``Disagreement`` naming the differing fields and the processes holding each value, and they all stop at once,
  before anything is written. Without the check a different flag trains a silently wrong run (process 0 records
  its own config), and a different seed, epoch count or workdir fails late, or hangs in a collective that only
  some processes reach.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import threading

import jax
import numpy as np
from jax.experimental import multihost_utils

from implicit_jax.engine import config as config_lib, workdir as workdir_lib

# A wait this long for the other processes is announced (one line), so that a stuck start is not silent.
_NOTE_AFTER = 30  # seconds
# JAX's own timeout is set later than ours, so that ours, with its message, ends the wait.
_JAX_MARGIN = 30  # seconds


class Disagreement(ValueError):
  """The processes of one run were started with different settings or data."""


def _served(address: str) -> bool:
  """Whether something already accepts connections at ``host:port``."""
  host, _, port = address.rpartition(':')
  try:
    with socket.create_connection((host.strip('[]'), int(port)), timeout=2):
      return True
  except (OSError, ValueError):
    return False


def initialize(address: str | None, num_processes: int | None, process_id: int | None, heartbeat_timeout: int,
               timeout: int) -> None:
  """``jax.distributed.initialize``, ended with one line on stderr and exit status 1 when the processes have not
  all joined within ``timeout`` seconds."""
  address = address or os.environ.get('JAX_COORDINATOR_ADDRESS')
  if process_id == 0 and address and _served(address):
    # gRPC binds its port shared (SO_REUSEPORT): a second coordinator would start beside the first, and the
    # processes would be split between the two at random.
    raise ValueError(f'--coordinator_address {address} is already in use, before this process (--process_id=0) '
                     'started the run\'s coordinator there: another process was given --process_id=0, or another '
                     'program holds the port. Give each process its own --process_id, or another port')
  who = f'process {process_id} of {num_processes}' if process_id is not None else 'this process'
  joined = threading.Event()
  watch = threading.Thread(target=_watch, args=(joined, who, address, num_processes, timeout), daemon=True)
  watch.start()
  try:
    jax.distributed.initialize(address, num_processes, process_id, initialization_timeout=timeout + _JAX_MARGIN,
                               heartbeat_timeout_seconds=heartbeat_timeout)
  finally:
    joined.set()


def _watch(joined: threading.Event, who: str, address: str | None, num_processes: int | None, timeout: int):
  """Runs beside ``jax.distributed.initialize`` (which releases the GIL while it waits) and ends the process
  when the wait is over."""
  where = f'at {address}' if address else 'at the coordinator of the cluster environment'
  note = _NOTE_AFTER if timeout > _NOTE_AFTER else 0
  if note and not joined.wait(note):
    print(f'{who}: waiting for every process of the run to join {where} (at most --initialization_timeout='
          f'{timeout} s)', file=sys.stderr, flush=True)
  if joined.wait(timeout - note):
    return
  count = f'all {num_processes}' if num_processes else 'every process'
  last = f' (0 to {num_processes - 1})' if num_processes else ''
  print(f'error: {who}: the processes of the run did not all join {where} within {timeout} s '
        f'(--initialization_timeout): start {count}, each with its own --process_id{last} and the same '
        '--coordinator_address and --num_processes', file=sys.stderr, flush=True)
  os._exit(1)  # pylint: disable=protected-access  # JAX's wait holds the main thread; nothing else ends it


def _gather(blob: bytes) -> list[bytes]:
  """Every process's ``blob``, in process order (a collective: every process must call it)."""
  sizes = multihost_utils.process_allgather(np.array([len(blob)], np.int32))[:, 0]
  padded = np.zeros(int(sizes.max()), np.uint8)  # process_allgather needs one shape on every process
  padded[:len(blob)] = np.frombuffer(blob, np.uint8)
  rows = multihost_utils.process_allgather(padded)
  return [bytes(row[:size]) for row, size in zip(rows, sizes)]


def agree(facts: dict, fix: str) -> None:
  """Raises ``Disagreement`` in every process when the processes' ``facts`` (``{name: JSON value}``) differ,
  naming each differing fact and which processes hold which value, then ``fix``. Nothing for one process."""
  if jax.process_count() == 1:
    return
  facts = {name: json.loads(json.dumps(value)) for name, value in facts.items()}  # tuples compare as lists
  everyone = [json.loads(blob) for blob in _gather(json.dumps(facts, sort_keys=True).encode())]
  differ = [name for name in sorted(set().union(*everyone))
            if any(other.get(name, '(none)') != everyone[0].get(name, '(none)') for other in everyone)]
  if not differ:
    return
  shown = ', '.join(f'{name} ({_holders([other.get(name, "(none)") for other in everyone])})'
                    for name in differ[:5])
  more = f' (+{len(differ) - 5} more)' if len(differ) > 5 else ''
  raise Disagreement(f'the processes of this run disagree: {shown}{more}; {fix}')


def _holders(values: list) -> str:
  """``process 0: 0.01, process 1: 0.5``; with many processes, ``processes 0, 2, 3: 0.01, process 1: 0.5``."""
  groups = {}
  for index, value in enumerate(values):
    groups.setdefault(json.dumps(value), []).append(index)
  return ', '.join(f'process{"es" if len(ids) > 1 else ""} {", ".join(map(str, ids[:8]))}'
                   f'{"..." if len(ids) > 8 else ""}: {_short(json.loads(value))}' for value, ids in groups.items())


def _short(value) -> str:
  """A string whole (a path differs anywhere, often at its end); anything else at most 80 characters."""
  if isinstance(value, str):
    return value
  text = json.dumps(value)
  return text if len(text) <= 80 else text[:77] + '...'


# A failed collective that means a lost process: the transport's errors (Gloo's socket, the coordination service
# unavailable), and JAX's coordination client on a missed heartbeat.
_TRANSPORT_LOST = ('Gloo', 'Connection reset', 'Connection closed', 'UNAVAILABLE')
_JAX_LOST = _TRANSPORT_LOST + ('heartbeat',)


def lost_peer(error: BaseException) -> bool:
  """Whether ``error`` is a collective that failed because another process of the run is gone: JAX reports it as a
  JaxRuntimeError, Orbax's own collectives (a checkpoint's, when the other process dies during a save) as a
  ValueError."""
  if jax.process_count() == 1:
    return False
  if isinstance(error, jax.errors.JaxRuntimeError):
    return any(s in str(error) for s in _JAX_LOST)
  # Orbax's: the transport's words only, not 'heartbeat', which a settings error may name (--heartbeat_timeout)
  return isinstance(error, ValueError) and any(s in str(error) for s in _TRANSPORT_LOST)


# Where a config's values came from, not what they are: hosts may name one file by different paths.
_PROVENANCE = ('config_file', 'overrides')


def sync(name: str) -> None:
  """Waits until every process of a multi-host run reaches the point called ``name`` (nothing for one process)."""
  if jax.process_count() > 1:
    multihost_utils.sync_global_devices(name)


def agree_on_command(config, workdir: str) -> None:
  """The resolved config and the workdir, compared before either is used: a process whose config differs could
  fail alone while loading its data, and leave the others waiting for it."""
  if jax.process_count() == 1:
    return
  fields = config_lib.flatten(config_lib.config_json(config))
  facts = {f'config.{name}': value for name, value in fields.items() if name not in _PROVENANCE}
  agree({'--workdir': os.path.abspath(workdir), **facts},
        'give every process the same command (config, overrides and --workdir)')


def agree_on_data(task) -> dict | None:
  """The data as read: the same command reads other data where hosts hold other copies of a file. Returns the
  data's fingerprint (``workdir.fingerprint``), which the workdir's data record reuses, or None in a run of one
  process, which computes none here."""
  if jax.process_count() == 1:
    return None  # the digests cost a pass over the data
  fingerprint = workdir_lib.fingerprint(task)
  files = ', '.join(workdir_lib.data_files(task.info)) or "the task's data"
  agree({f'data {name}': value for name, value in workdir_lib.by_array(fingerprint).items()},
        f'every host must read the same data ({files}): copy it from one host to the others')
  return fingerprint
