"""Recomputes the figures of run records from the records alone, with the gold labels read from the data directory.

  python scripts/rescore.py docs/tagging/runs/pos-bilstm-seed0.json --data_dir=../shared/data
  python scripts/rescore.py docs/tagging/runs/*.json --data_dir=../shared/data   # a table's records
  python scripts/rescore.py /tmp/implicit_jax/run/metrics.json                   # a workdir's result, the same form

A record written since predictions were kept (``predictions``: implicit_jax/engine/predictions.py) holds the dev
and test decisions of its best (dev-selected) epoch, those its figures were computed from. For each record: its
config rebuilds the task (reading the data from ``--data_dir`` where the record's config names a data_dir; the
bundled bibtex and generated tasks need none); the gold arrays of dev and test are checked against the digests
the record holds (same rows in the same order, or the record is not rescored); the decisions are turned back into
predictions (``Evaluator.relaxed``) and scored by the task's own evaluator: the dev metrics of the best epoch
(against the history row of that epoch) and every final figure (``Evaluator.final``: the calibration chosen on dev
and the test scores under it; NER's conlleval and strict chunk F1, multi-label F1 at 0.5 and at the tuned
threshold, mean IoU, ...). Prints recorded against rescored, one line per figure. Records made before predictions
were kept are listed as such.

Exit status 1 when a figure differs by more than ``--tolerance``, when gold data differs from the record's, or when
no record given could be rescored; 0 otherwise.
"""

import argparse
import json
import math
import os
import sys
from pathlib import Path

from implicit_jax import tasks
from implicit_jax.engine import config as config_lib, predictions
from implicit_jax.experiments import records

_TASKS = {}  # the task of each (task, data, model, seed): a table's records share a few datasets


class NotRescorable(Exception):
  """The record cannot be rescored: no predictions, or gold data other than the run's."""


def task_of(config):
  key = json.dumps({k: config_lib.config_json(config.get(k)) for k in ('task', 'data', 'model', 'seed')},
                   sort_keys=True)
  if key not in _TASKS:
    _TASKS[key] = tasks.get_task(config)
  return _TASKS[key]


def figures(record: dict, data_dir: str | None = None) -> list[tuple[str, object, object]]:
  """``[(name, recorded, rescored)]`` of every figure the record's decisions determine; NotRescorable when it
  keeps no predictions or the data read now is not the run's."""
  block = record.get('predictions')
  if not block:
    raise NotRescorable(f'no predictions (recorded {str(record.get("date", "before they were kept"))[:10]}, '
                        'before records kept them): rerun it to rescore')
  config = config_lib.load(record['config'])
  if data_dir and config.get('data') is not None and config.data.get('data_dir'):
    config.data.data_dir = data_dir  # the record's folder may have moved; the gold digests say if it is the same
  task = task_of(config)
  differ = predictions.gold_differences(block, task.splits)
  if differ:
    source = ', '.join(task.info.get('files', [])) or "the config's data settings"
    raise NotRescorable(f'the gold arrays read now ({", ".join(differ)}) differ from the run\'s; data read from '
                        f'{source}')
  decisions = predictions.unpack(block)
  evaluator = task.evaluator
  dev, test = task.splits['dev'], task.splits['test']
  dev_pred = evaluator.relaxed(decisions['dev'], dev)
  test_pred = evaluator.relaxed(decisions['test'], test)
  out = []
  best = [h for h in records.history(record) if h.get('epoch') == record['best_epoch']]
  for key, value in evaluator.metrics(dev_pred, dev).items():
    if best and f'dev_{key}' in best[0]:
      out.append((f'dev_{key} (epoch {record["best_epoch"]})', best[0][f'dev_{key}'], value))
    elif f'dev_{key}' in record:
      out.append((f'dev_{key}', record[f'dev_{key}'], value))
  final = evaluator.final(dev_pred, dev, test_pred, test)
  kept_for = block['test'].get('calibration')
  if kept_for:  # test decisions were kept for the recorded calibration only: another one cannot be scored from them
    out.append(('test decisions kept for', kept_for, evaluator.calibration_of(final)))
  rescored = config_lib.flatten(final)
  recorded = config_lib.flatten({k: record[k] for k in record if k not in ('config', 'task_info', 'predictions')})
  for key, value in rescored.items():
    out.append((key, recorded.get(key, 'not recorded'), value))
  return out


def matches(recorded, rescored, tolerance: float) -> bool:
  if isinstance(recorded, (int, float)) and isinstance(rescored, (int, float)):
    if math.isnan(recorded) or math.isnan(rescored):
      return math.isnan(recorded) and math.isnan(rescored)
    return abs(recorded - rescored) <= tolerance
  return recorded == rescored


def shown(value) -> str:
  return f'{value:.10g}' if isinstance(value, float) else str(value)


def rescore(path: Path, data_dir: str | None, tolerance: float) -> bool | None:
  """Prints the record's figures, recorded against rescored: True if all match, False if one does not, None when
  the record keeps no predictions."""
  record = records.load(path)
  head = f'{path}: {record.get("task")}, {record.get("method")}, seed {record.get("seed")}, best epoch ' \
         f'{record.get("best_epoch")}'
  try:
    rows = figures(record, data_dir)
  except NotRescorable as e:
    print(f'{head}: not rescored: {e}')
    return None if not record.get('predictions') else False
  ok = [matches(a, b, tolerance) for _, a, b in rows]
  print(f'{head}; gold of dev and test as the record\'s')
  width = max(len(name) for name, _, _ in rows)
  print(f'  {"figure":{width}}  {"recorded":>16}  {"rescored":>16}')
  for (name, a, b), good in zip(rows, ok):
    print(f'  {name:{width}}  {shown(a):>16}  {shown(b):>16}  {"ok" if good else "MISMATCH"}')
  print(f'  => {sum(ok)} of {len(ok)} figures match (tolerance {tolerance:g})')
  return all(ok)


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument('records', nargs='+', help='run records (docs/*/runs/*.json) or workdir metrics.json files')
  parser.add_argument('--data_dir', default=os.environ.get(tasks.DATA_DIR_ENV),
                      help='the data folder, for records whose config names one (default $IMPLICIT_JAX_DATA_DIR, '
                           'else the recorded one)')
  parser.add_argument('--tolerance', type=float, default=1e-6, help='largest |recorded - rescored| of a figure')
  args = parser.parse_args(argv)
  results = [rescore(Path(p), args.data_dir, args.tolerance) for p in args.records]
  done = [r for r in results if r is not None]
  skipped = len(results) - len(done)
  print(f'{len(done)} record(s) rescored, {sum(done)} matching; {skipped} without predictions')
  return 0 if done and all(done) else 1


if __name__ == '__main__':
  sys.exit(main())
