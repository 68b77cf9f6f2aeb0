"""Recomputes the figures of run records from the records alone, with the gold labels read from the data directory.

  python -m experiments.rescore docs/tagging/runs/pos-bilstm-seed0.json --data_dir=../shared/data
  python -m experiments.rescore docs/tagging/runs/*.json --data_dir=../shared/data   # a table's records
  python -m experiments.rescore /tmp/implicit_jax/run/metrics.json                   # a workdir's result, the same form

A record holds the dev and test decisions of its best epoch (``predictions``). Its config rebuilds the task (the data
from ``--data_dir``), whose dev and test gold must match the record's digests; the decisions, turned back into
predictions (``Evaluator.relaxed``), are scored by the task's own evaluator: the best epoch's dev metrics and every
final figure (``Evaluator.final``), printed beside the recorded ones. Word vectors are not read
(``model.embeddings='random'``): they set the initial weights and the inputs' vocabulary, never the gold labels or
the evaluator, so a record whose vectors file this machine lacks is rescored all the same.

A record that cannot be read or rescored gives one line, its path and the cause. The last line counts the records
rescored (and matching), without predictions, and failing. Exit status 1 when a figure differs by more than
``--tolerance``, when gold data differs from the record's, when a record fails, or when none could be rescored.
"""
import argparse
import json
import math
import os
import sys
from pathlib import Path

from implicit_jax import tasks
from implicit_jax.engine import cli, config as config_lib, predictions
from experiments import records

_TASKS = {}  # the task of each (task, data, model, seed): a table's records share a few datasets


class NotRescorable(Exception):
  """The record cannot be rescored: no predictions, or gold data other than the run's."""


class BadRecord(ValueError):
  """The record cannot be read or rescored: the message says why."""


def predicted(record: dict, data_dir: str | None = None):
  """``(task, {'dev': relaxed, 'test': relaxed})``: the record's task rebuilt, its gold checked against the record's
  digests, and the recorded decisions as predictions its evaluator scores as the run did; NotRescorable when it
  keeps no predictions or the data read now is not the run's, BadRecord when the decisions cannot be read back."""
  block = record.get('predictions')
  if not block:
    when = f'recorded {str(record["date"])[:10]}, before records kept them' if record.get('date') else \
        'made before records kept them'
    raise NotRescorable(f'no predictions ({when}): rerun it to rescore')
  if not isinstance(record.get('config'), dict):
    raise BadRecord('the record holds predictions but no config to rebuild its task from')
  config = config_lib.load(record['config'])
  model = config.get('model')
  if model is not None and model.get('embeddings', 'random') != 'random':  # word vectors are not read (module doc)
    model.embeddings = 'random'
    if 'embeddings_path' in model:
      model.embeddings_path = ''
  if data_dir and config.get('data') is not None and config.data.get('data_dir'):
    config.data.data_dir = data_dir  # the record's folder may have moved; the gold digests say if it is the same
  key = json.dumps({k: config_lib.config_json(config.get(k)) for k in ('task', 'data', 'model', 'seed')},
                   sort_keys=True)
  if key not in _TASKS:
    _TASKS[key] = tasks.get_task(config)
  task = _TASKS[key]
  differ = predictions.gold_differences(block, task.splits)
  if differ:
    source = ', '.join(task.info.get('files', [])) or "the config's data settings"
    raise NotRescorable(f'the gold arrays read now ({", ".join(differ)}) differ from the run\'s; data read from '
                        f'{source}')
  try:
    decisions = predictions.unpack(block)
  except Exception as e:  # pylint: disable=broad-except  # base64, xz, dtype or shape: said in one line
    raise BadRecord(f'the recorded decisions cannot be decoded: {cause(e)}') from e
  relaxed = {}
  for name in ('dev', 'test'):
    try:
      relaxed[name] = task.evaluator.relaxed(decisions[name], task.splits[name])
    except Exception as e:  # pylint: disable=broad-except
      raise BadRecord(f'the recorded {name} decisions do not fit the {name} split: {cause(e)}') from e
  return task, relaxed


def figures(record: dict, data_dir: str | None = None) -> list[tuple[str, object, object]]:
  """``[(name, recorded, rescored)]`` of every figure the record's decisions determine."""
  task, relaxed = predicted(record, data_dir)
  evaluator, dev, test = task.evaluator, task.splits['dev'], task.splits['test']
  out = []
  best = [h for h in records.history(record) if h.get('epoch') == record['best_epoch']]
  for key, value in evaluator.metrics(relaxed['dev'], dev).items():
    if best and f'dev_{key}' in best[0]:
      out.append((f'dev_{key} (epoch {record["best_epoch"]})', best[0][f'dev_{key}'], value))
    elif f'dev_{key}' in record:
      out.append((f'dev_{key}', record[f'dev_{key}'], value))
  final = evaluator.final(relaxed['dev'], dev, relaxed['test'], test)
  kept_for = record['predictions']['test'].get('calibration')
  if kept_for:  # test decisions were kept for the recorded calibration only: another one cannot be scored from them
    out.append(('test decisions kept for', kept_for, evaluator.calibration_of(final)))
  recorded = config_lib.flatten({k: record[k] for k in record if k not in ('config', 'task_info', 'predictions')})
  return out + [(key, recorded.get(key, 'not recorded'), value) for key, value in config_lib.flatten(final).items()]


def matches(recorded, rescored, tolerance: float) -> bool:
  if isinstance(recorded, (int, float)) and isinstance(rescored, (int, float)):
    if math.isnan(recorded) or math.isnan(rescored):
      return math.isnan(recorded) and math.isnan(rescored)
    return abs(recorded - rescored) <= tolerance
  return recorded == rescored


MATCH, MISMATCH, NO_PREDICTIONS, FAILED = 'match', 'mismatch', 'no predictions', 'failed'


def cause(error: Exception) -> str:
  """``error`` in one line."""
  if isinstance(error, BadRecord):
    return ' '.join(str(error).split())
  if isinstance(error, json.JSONDecodeError):
    return f'not valid JSON (truncated?): {error}'
  if isinstance(error, FileNotFoundError) and error.filename and not str(error).startswith(str(error.filename)):
    return f'no such file: {error.filename}'
  name = type(error).__name__
  if name == 'Error':  # binascii.Error, ...: the module says which
    name = f'{type(error).__module__}.{name}'
  text = cli.one_line(error) if str(error).strip() else ''
  return f'{name}: {text}' if text else name


def _read(path: Path) -> dict:
  """The run record at ``path``; BadRecord for JSON that is not one (a run's config.json among them)."""
  try:
    record = records.load(path)
  except json.JSONDecodeError:
    raise  # cause() says it in one line
  except ValueError as e:  # JSON that is not an object; the line names the path already
    raise BadRecord(str(e).removeprefix(f'{path}: ')) from e
  if 'task' not in record and 'config' not in record:
    if records.portable(str(record.get('command', ''))).startswith('python -m experiments.compare_sklearn'):
      raise NotRescorable('a scikit-learn comparison record (experiments/compare_sklearn.py), which keeps figures, '
                          'not predictions')
    raise BadRecord('not a run record (an object with neither a task nor a config)')
  if 'config' not in record and 'best_epoch' not in record and 'num_epochs' in record:
    metrics = path.parent / 'metrics.json'
    instead = (f'give {metrics}, the run\'s record' if metrics.is_file() else
               "give the run's metrics.json, its record once it has finished, or a committed one (docs/*/runs/*.json)")
    raise BadRecord(f"a run's config (what the run was given), not a run record: {instead}")
  return record


def rescore(path: Path, data_dir: str | None, tolerance: float) -> str:
  """Prints the record's figures, recorded against rescored; returns ``MATCH``, ``MISMATCH``, ``NO_PREDICTIONS`` or
  ``FAILED`` (one line printed: it cannot be read or rescored)."""
  head, record = str(path), {}
  try:
    record = _read(path)
    head = f'{path}: {record.get("task")}, {record.get("method")}, seed {record.get("seed")}, best epoch ' \
           f'{record.get("best_epoch")}'
    rows = figures(record, data_dir)
    if not rows:
      raise BadRecord('no figure to compare')
  except NotRescorable as e:
    print(f'{head}: not rescored: {e}')
    return NO_PREDICTIONS if not record.get('predictions') else FAILED
  except Exception as e:  # pylint: disable=broad-except  # a bad record is reported in a line, the next one taken
    print(f'{head}: failed: {cause(e)}')
    return FAILED
  ok = [matches(a, b, tolerance) for _, a, b in rows]
  print(f'{head}; gold of dev and test as the record\'s')
  width = max(len(name) for name, _, _ in rows)
  print(f'  {"figure":{width}}  {"recorded":>16}  {"rescored":>16}')
  for (name, a, b), good in zip(rows, ok):
    a, b = (f'{v:.10g}' if isinstance(v, float) else str(v) for v in (a, b))
    print(f'  {name:{width}}  {a:>16}  {b:>16}  {"ok" if good else "MISMATCH"}')
  print(f'  => {sum(ok)} of {len(ok)} figures match (tolerance {tolerance:g})')
  return MATCH if all(ok) else MISMATCH


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument('records', nargs='+', help='run records (docs/*/runs/*.json) or workdir metrics.json files')
  parser.add_argument('--data_dir', default=os.environ.get(tasks.DATA_DIR_ENV),
                      help='the data folder, for records whose config names one (default $IMPLICIT_JAX_DATA_DIR, '
                           'else the recorded one)')
  parser.add_argument('--tolerance', type=float, default=1e-6, help='largest |recorded - rescored| of a figure')
  args = parser.parse_args(argv)
  if args.data_dir and not os.path.isdir(args.data_dir):
    raise NotADirectoryError(f'--data_dir {args.data_dir}: not a folder (the folder holding the datasets\' folders)')
  results = [rescore(Path(p), args.data_dir, args.tolerance) for p in args.records]
  count = {kind: results.count(kind) for kind in (MATCH, MISMATCH, NO_PREDICTIONS, FAILED)}
  print(f'{count[MATCH] + count[MISMATCH]} record(s) rescored, {count[MATCH]} matching; {count[NO_PREDICTIONS]} '
        f'without predictions; {count[FAILED]} failing')
  return 0 if count[MATCH] and not (count[MISMATCH] or count[FAILED]) else 1


if __name__ == '__main__':
  sys.exit(cli.guarded(main))
