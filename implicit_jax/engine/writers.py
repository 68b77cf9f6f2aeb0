"""Metric writers: TensorBoard event files and a JSON-lines log in the workdir, hyperparameters written once.

TensorBoard's own TF-free event-file writer serves the interface of ``clu.metric_writers`` (``write_scalars``,
``write_hparams``, ``flush``, ``close``); clu itself is not used, as its writer imports TensorFlow, which this
project does not depend on, and one writer in every environment keeps the event files the same.
``workdir/metrics.jsonl`` gets one line per write, the file notebooks and plots read.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time

from tensorboard.compat.proto import event_pb2, summary_pb2
from tensorboard.plugins.hparams import summary_v2
from tensorboard.summary.writer.event_file_writer import EventFileWriter

from implicit_jax.engine import workdir


def read_metrics(path: str) -> list[dict]:
  """The records of a ``metrics.jsonl``, each a JSON object with a ``step``. A torn last line (the process was
  killed while writing it) is dropped with a warning; a damaged line elsewhere is an error naming it."""
  with open(path, encoding='utf-8', errors='replace') as f:
    lines = f.read().split('\n')
  if lines and lines[-1] == '':
    lines.pop()
  records = []
  for i, line in enumerate(lines):
    try:
      record = json.loads(line)
      if not isinstance(record, dict) or 'step' not in record:
        raise ValueError('no "step"')
    except ValueError as e:
      if i == len(lines) - 1:
        print(f'warning: {path}:{i + 1}: dropped a torn last line ({len(line)} characters)', file=sys.stderr,
              flush=True)
        break
      raise ValueError(f'{path}:{i + 1}: not a metrics record ({e}); repair or delete the line') from None
    records.append(record)
  return records


class _TensorBoardWriter:
  """TensorBoard event files without TensorFlow (what clu's SummaryWriter writes, scalars and hparams)."""

  def __init__(self, logdir: str):
    self._writer = EventFileWriter(logdir)

  def write_scalars(self, step: int, scalars: dict) -> None:
    values = [summary_pb2.Summary.Value(tag=k, simple_value=float(v)) for k, v in scalars.items()]
    self._writer.add_event(event_pb2.Event(wall_time=time.time(), step=int(step),
                                           summary=summary_pb2.Summary(value=values)))

  def write_hparams(self, hparams: dict) -> None:
    self._writer.add_event(event_pb2.Event(wall_time=time.time(), step=0, summary=summary_v2.hparams_pb(hparams)))

  def flush(self) -> None:
    self._writer.flush()

  def close(self) -> None:
    self._writer.close()


class MetricWriter:
  """Writes scalars to TensorBoard (``workdir/tensorboard``) and ``workdir/metrics.jsonl``.

  ``resume_step``: a run resumed from a checkpoint at that step drops the JSON lines written after it (they are
  written again, identically, as the run repeats those steps). ``enabled=False`` (every process but the first of
  a multi-host run) writes nothing.
  """

  def __init__(self, workdir: str, resume_step: int | None = None, enabled: bool = True):
    self.enabled = enabled
    if not enabled:
      return
    self.jsonl = os.path.join(workdir, 'metrics.jsonl')
    if os.path.exists(self.jsonl):
      # Rewritten as write_scalars writes them, so the kept lines are the same text.
      kept = [] if resume_step is None else [r for r in read_metrics(self.jsonl) if r['step'] <= resume_step]
      with open(self.jsonl + '.tmp', 'w') as f:
        f.writelines(json.dumps(r) + '\n' for r in kept)
      os.replace(self.jsonl + '.tmp', self.jsonl)
    self._tb = _TensorBoardWriter(os.path.join(workdir, 'tensorboard'))
    self._file = open(self.jsonl, 'a')  # pylint: disable=consider-using-with

  def write_scalars(self, step: int, scalars: dict) -> None:
    if not self.enabled:
      return
    scalars = {k: float(v) for k, v in scalars.items()}
    self._tb.write_scalars(step, scalars)
    self._file.write(json.dumps({'step': int(step), **scalars}) + '\n')

  def write_hparams(self, hparams: dict) -> None:
    """Flattened config; values TensorBoard cannot show (lists) become strings."""
    if not self.enabled:
      return
    flat = {k: v if isinstance(v, (bool, int, float, str)) else str(v) for k, v in hparams.items()}
    self._tb.write_hparams(flat)

  def flush(self) -> None:
    if self.enabled:
      with self._naming_the_file():
        self._tb.flush()
        self._file.flush()

  def close(self) -> None:
    if self.enabled:
      with self._naming_the_file():
        self._tb.close()
        self._file.close()

  @contextlib.contextmanager
  def _naming_the_file(self):
    """A write that fails (a full disk) names the workdir's log files: the OS's own message names none."""
    try:
      yield
    except OSError as e:
      raise workdir.disk_error(f'cannot write {self.jsonl} or {os.path.dirname(self.jsonl)}/tensorboard', e) \
          from None
