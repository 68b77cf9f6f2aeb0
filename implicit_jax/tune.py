r"""Tunes a multi-label run on its own dev split, within a stated time budget: one command.

  python -m implicit_jax.tune --config=configs/custom.py --config.data.train_file=mine.arff \
      --workdir=/tmp/implicit_jax/mine-tuned --budget_minutes=30 [--config.method=feedforward]

The trials are the given config ("default", first) and then the settings that the grid over every shipped
multi-label dataset showed to matter for its method (``TRIALS`` below, docs/custom_defaults.md), most
promising first. Before the first trial a probe trains the config (1, 1 and 3 epochs) and says what a trial
costs here and how many fit the budget; a trial starts only when the estimate says it ends inside it. Each trial
is a run of ``implicit_jax.runner`` in ``WORKDIR/trials/NN-name/``, its result in ``NN-name.json``; the choice is the
trial of best dev F1 @0.5 (the metric every multi-label run selects its epoch on; test is never read for it), copied
to ``WORKDIR/chosen/`` for ``evaluate`` and ``predict``. ``WORKDIR/trials.md`` tables every trial. Killed at any
moment, the same command resumes: finished trials are kept, the interrupted one resumes from its checkpoint.
"""

import contextlib
import datetime
import math
import os
import shutil
import sys
import time

from absl import app, flags, logging
from ml_collections import config_flags

from implicit_jax import runner
from implicit_jax.engine import checkpoints, cli, config as config_lib, train, workdir as workdir_lib

FLAGS = flags.FLAGS
cli.define_config_flag('The config to tune (e.g. configs/custom.py), or a run record (.json) whose recipe it '
                       'tunes, with its --config.* overrides: trial "default".')
flags.DEFINE_string('workdir', None, 'Folder of the tune: tune.json, trials.md, trials/, chosen/.')
flags.DEFINE_float('budget_minutes', 30.0, 'Wall-clock budget of the whole tune, probe included.', lower_bound=0.0)
# inf and nan pass the bound (a NaN compares false): refused here, before the probe, not after it as a cast's error
flags.register_validator('budget_minutes', math.isfinite, message='--budget_minutes must be a finite number of minutes')
flags.mark_flags_as_required(['config', 'workdir'])

PLAN = 'tune.json'
# Per method, the trials after the config itself, most promising first (so that a small budget runs those), in the
# order of their mean regret on dev across the shipped multi-label datasets (docs/custom_defaults.md,
# experiments/custom_defaults.py; tests/test_custom_defaults.py checks the order): dropout and the learning rate for
# MBCE; dropout for implicit CD, whose solver stays the config's (the fused GCR pass costs about half of normal_cg's
# 11 HVPs, and which of the two is ahead depends on the dropout).
TRIALS = {
    'feedforward': [{'model.dropout': d, 'optimizer.learning_rate': lr}
                    for d, lr in ((0.0, 3e-3), (0.2, 3e-3), (0.0, 1e-3), (0.2, 1e-3), (0.5, 3e-3), (0.5, 1e-3))],
    'implicit': [{'model.dropout': d} for d in (0.2, 0.5, 0.0)],
}


def trials_of(config) -> list[tuple[str, dict]]:
  """(name, overrides) of each trial: the config itself, then ``TRIALS[config.method]`` in its order, less the
  trials that would repeat the config's own values."""
  if config.task != 'mlc' or config.method not in TRIALS:
    raise ValueError(f'config.task={config.task!r}, config.method={config.method!r}: the tuner knows the settings '
                     f'of multi-label runs (task mlc) with method {" or ".join(map(repr, TRIALS))}')
  flat = config_lib.flatten(config.to_dict())
  out = [('default', {})]
  for overrides in TRIALS[config.method]:
    if any(flat[k] != v for k, v in overrides.items()):
      out.append(('-'.join(f'{k.split(".")[-1]}{v:g}' if isinstance(v, float) else f'{k.split(".")[-1]}{v}'
                           for k, v in overrides.items()), overrides))
  return out


def _quietly(config, workdir, log_path):
  """``train_and_evaluate`` with its progress lines in ``log_path`` (appended: a resumed trial keeps both parts)."""
  with open(log_path, 'a') as log, contextlib.redirect_stdout(log):
    return train.train_and_evaluate(config, workdir)


def _trial_run(config, workdir, log_path) -> dict:
  """One trial through the runner (``implicit_jax.runner``): trained in ``workdir`` (a trial cut short resumes there),
  its result written to ``workdir.json``, which a later call reads instead of training again (a tune killed between
  the record and tune.json loses nothing). What the runner says goes to the trial's log (``log_path``)."""
  run = runner.Run(os.path.basename(workdir), config, f'{workdir}.json', workdir)
  with open(log_path, 'a') as log, contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
    outcome, = runner.run_all([run])
  return outcome.result if outcome.result is not None else runner.read_json(run.record)


def _probe(config, workdir) -> dict:
  """Seconds of one trial here, from three short runs of the config. The first, of one epoch, warms what a process
  does once (reading and parsing the data, tracing shared functions); the next two, of one and three epochs, each
  pay what every trial pays (building and compiling its programs, the test split) and differ by two epochs: a trial
  of E epochs costs the one-epoch run plus E - 1 epochs."""
  walls = []
  for name, epochs in (('warmup', 1), ('epochs1', 1), ('epochs3', 3)):
    probe = config.copy_and_resolve_references()
    probe.num_epochs = epochs
    folder = os.path.join(workdir, 'probe', name)
    shutil.rmtree(folder, ignore_errors=True)  # a probe cut short is made again: its timing would be partial
    os.makedirs(os.path.dirname(folder), exist_ok=True)
    start = time.perf_counter()
    _quietly(probe, folder, f'{folder}.log')
    walls.append(time.perf_counter() - start)
  epoch = max(walls[2] - walls[1], 0.0) / 2
  return {'warmup_seconds': walls[0], 'one_epoch_seconds': walls[1], 'three_epoch_seconds': walls[2],
          'epoch_seconds': epoch, 'probe_seconds': sum(walls),
          'trial_seconds': walls[1] + (config.num_epochs - 1) * epoch}


def _minutes(seconds: float) -> str:
  return f'{seconds / 60:.1f} min'


def _shown(arg: str) -> str:
  """A command-line word as the table shows it: the workdir as WORKDIR (the table lives in it, and a copy of the
  table names no folder of the machine that made it)."""
  return '--workdir=WORKDIR' if arg.startswith('--workdir=') else arg


def _table(plan, chosen) -> str:
  lines = [f'# Tune of {plan["config_file"] or "a config"} ({plan["method"]})', '',
           f'Made by `python -m implicit_jax.tune {" ".join(_shown(a) for a in plan["argv"])}` (started '
           f'{plan["started"]}; budget '
           f'{plan["budget_minutes"]:g} min, probe estimate {_minutes(plan["estimate"]["trial_seconds"])} a '
           'trial). Dev F1 @0.5 selects the epoch and the trial; the test figures are listed, never used.', '',
           '| trial | overrides | best epoch | dev @0.5 | dev tuned | test @0.5 | test tuned | seconds |',
           '|---|---|---|---|---|---|---|---|']
  for name, overrides in plan['trials']:
    shown = ', '.join(f'{k}={v}' for k, v in overrides.items()) or '(the config as given)'
    r = plan['results'].get(name)
    mark = ' (chosen)' if name == chosen else ''
    if name in plan['failed']:
      lines.append(f'| {name} | {shown} | diverged: {plan["failed"][name][:200]} | | | | | |')
    elif r is None:
      lines.append(f'| {name} | {shown} | not run: {plan["skipped"].get(name, "not reached")} | | | | | |')
    else:
      lines.append(f'| {name}{mark} | {shown} | {r["best_epoch"]} | {100 * r["dev_f1"]:.2f} | '
                   f'{100 * r["dev_f1_tuned"]:.2f} | {100 * r["test_f1"]:.2f} | {100 * r["test_f1_tuned"]:.2f} | '
                   f'{r["seconds"]:.0f} |')
  lines += ['', f'{len(plan["results"])} trials run, {len(plan["failed"])} diverged, {len(plan["skipped"])} left out '
            f'by the budget; {_minutes(plan["elapsed_seconds"])} in all, the probe included, of the '
            f'{plan["budget_minutes"]:g} min budget.']
  return '\n'.join(lines) + '\n'


# What a tune stopped before its record was written leaves: the probe's runs and the lock record.
_STARTED = {'probe', 'lock', f'{PLAN}.tmp'}


def _prepare(workdir: str) -> None:
  """Creates ``workdir``; refuses a file, and a folder holding what a tune did not write (left untouched)."""
  if os.path.exists(workdir) and not os.path.isdir(workdir):
    raise NotADirectoryError(f'--workdir {workdir} names an existing file, not a folder')
  if os.path.isdir(workdir) and not os.path.exists(os.path.join(workdir, PLAN)):
    foreign = sorted(set(os.listdir(workdir)) - _STARTED)
    if foreign:
      raise ValueError(f'--workdir {workdir} holds files a tune did not write ({", ".join(foreign[:5])}); nothing '
                       'was changed: give a new or empty folder')
  os.makedirs(workdir, exist_ok=True)


def _open_plan(config, trials, workdir, budget_minutes, argv) -> dict:
  """The tune's record: made (with the probe) on the first call, read back and checked on the next. Another
  budget on a later call is allowed: the trials it left out are reconsidered."""
  path = os.path.join(workdir, PLAN)
  recorded = config_lib.flatten(config_lib.recorded(config))
  recorded.pop('overrides', None)
  if os.path.exists(path):
    plan = checkpoints.read_json(path)
    if not isinstance(plan, dict) or 'config' not in plan:
      raise ValueError(f'{path}: not the record of a tune')
    if plan['config'] != recorded:
      differ = sorted((k for k in set(plan['config']) | set(recorded) if plan['config'].get(k) != recorded.get(k)),
                      key=lambda k: (k.count('.'), k))  # 'method' before the fields of its section
      raise ValueError(f'--workdir {workdir} holds a tune of another config ({", ".join(differ[:5])} differ); give '
                       'the command that started it to resume it, or a new workdir')
    plan['budget_minutes'], plan['skipped'] = budget_minutes, {}
    print(f'tune: resuming {path}: {len(plan["results"])} of {len(plan["trials"])} trials done, '
          f'{_minutes(plan["elapsed_seconds"])} used of {budget_minutes:g} min', flush=True)
    return plan
  print(f'tune: probing the cost of a trial ({config.method}, {config.num_epochs} epochs): runs of 1, 1 and 3 '
        'epochs ...', flush=True)
  estimate = _probe(config, workdir)
  fit = int((budget_minutes * 60 - estimate['probe_seconds']) // max(estimate['trial_seconds'], 1e-9))
  if fit < 1:
    raise ValueError(f'--budget_minutes={budget_minutes:g}: one trial takes about '
                     f'{_minutes(estimate["trial_seconds"])} here (probe: {estimate["one_epoch_seconds"]:.0f} s for '
                     f'one epoch, {estimate["epoch_seconds"]:.0f} s an epoch more), the probe took '
                     f'{_minutes(estimate["probe_seconds"])}: give at least '
                     f'{math.ceil((estimate["probe_seconds"] + estimate["trial_seconds"]) / 60)}')
  plan = {'config': recorded, 'config_file': config.config_file, 'method': config.method, 'argv': argv,
          'budget_minutes': budget_minutes, 'started': datetime.datetime.now().isoformat(timespec='seconds'),
          'estimate': estimate, 'trials': trials, 'results': {}, 'skipped': {}, 'failed': {},
          'elapsed_seconds': estimate['probe_seconds']}
  checkpoints.write_json(path, plan)
  run = min(fit, len(trials))
  total = estimate['probe_seconds'] + run * estimate['trial_seconds']
  print(f'tune: {len(trials)} trials planned, {run} fit the budget of {budget_minutes:g} min: about '
        f'{_minutes(estimate["trial_seconds"])} a trial here, {_minutes(total)} in all', flush=True)
  return plan


def _run_trial(plan, i, config, workdir) -> None:
  """Trains trial ``i`` (resuming its folder) and records its result, or its divergence, in ``plan``."""
  name, overrides = plan['trials'][i]
  folder = os.path.join(workdir, 'trials', f'{i:02d}-{name}')
  trial = config.copy_and_resolve_references()
  trial.update_from_flattened_dict(overrides)
  print(f'tune: trial {i + 1}/{len(plan["trials"])} {name} ({_minutes(plan["elapsed_seconds"])} of '
        f'{plan["budget_minutes"]:g} used; its log: {folder}.log)', flush=True)
  os.makedirs(os.path.dirname(folder), exist_ok=True)
  start = time.perf_counter()
  try:
    result = _trial_run(trial, folder, f'{folder}.log')
  except FloatingPointError as e:  # this trial's settings diverged (a NaN, a loss past config.divergence): the next
    plan['failed'][name] = cli.one_line(e)  # may not, and the same settings would diverge again on a resume
    print(f'tune: trial {name} diverged: {plan["failed"][name][:300]}', flush=True)
    return
  finally:  # the time of a trial cut short counts too
    plan['elapsed_seconds'] += time.perf_counter() - start
    checkpoints.write_json(os.path.join(workdir, PLAN), plan)
  plan['results'][name] = {k: result[k] for k in ('best_epoch', 'dev_f1', 'dev_f1_tuned', 'test_f1', 'test_f1_tuned')}
  plan['results'][name]['seconds'] = time.perf_counter() - start  # wall: data, compile, evaluation, as budgeted
  checkpoints.write_json(os.path.join(workdir, PLAN), plan)  # a kill from here on keeps the trial done
  best = max(plan['results'].values(), key=lambda r: r['dev_f1'])
  print(f'tune: trial {name}: dev F1 @0.5 {100 * result["dev_f1"]:.2f} (epoch {result["best_epoch"]}); best so far '
        f'{100 * best["dev_f1"]:.2f}', flush=True)


def _keep_chosen(plan, workdir) -> str:
  """The trial of best dev F1 @0.5 (the first of equal scores: the config as given wins a tie), its run copied to
  ``WORKDIR/chosen`` (atomically: a copy cut short is made again)."""
  if not plan['results']:
    raise FloatingPointError(f'every trial of the tune in {workdir} diverged ({len(plan["failed"])}; trials.md says '
                             'how): lower config.optimizer.learning_rate and tune again in a new workdir')
  chosen = max(plan['results'], key=lambda n: plan['results'][n]['dev_f1'])
  index = [n for n, _ in plan['trials']].index(chosen)
  target = os.path.join(workdir, 'chosen')
  if plan.get('chosen') != chosen or not os.path.isdir(target):
    tmp = f'{target}.tmp'
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(os.path.join(workdir, 'trials', f'{index:02d}-{chosen}'), tmp,
                    ignore=shutil.ignore_patterns('lock'))
    shutil.rmtree(target, ignore_errors=True)
    os.replace(tmp, target)
    plan['chosen'] = chosen
    checkpoints.write_json(os.path.join(workdir, PLAN), plan)
  return chosen


def tune(config, workdir: str, budget_minutes: float, argv=()) -> dict:
  """Runs (or resumes) the tune in ``workdir``; returns its record (``tune.json``) with ``chosen`` set."""
  trials = trials_of(config)  # a config the tuner cannot tune is refused before the workdir is touched
  config_lib.check(config)
  _prepare(workdir)
  with workdir_lib.Lock(workdir):
    plan = _open_plan(config, trials, workdir, budget_minutes, list(argv))
    for i, (name, _) in enumerate(plan['trials']):
      if name in plan['results'] or name in plan['failed']:
        continue
      expected = max([plan['estimate']['trial_seconds'], *(r['seconds'] for r in plan['results'].values())])
      if plan['elapsed_seconds'] + expected > budget_minutes * 60:
        plan['skipped'][name] = f'budget ({_minutes(plan["elapsed_seconds"])} used, a trial about {_minutes(expected)})'
        continue
      _run_trial(plan, i, config, workdir)
    checkpoints.write_json(os.path.join(workdir, PLAN), plan)
    chosen = _keep_chosen(plan, workdir)
  with open(os.path.join(workdir, 'trials.md'), 'w') as f:
    f.write(_table(plan, chosen))
  r, default, target = plan['results'][chosen], plan['results'].get('default'), os.path.join(workdir, 'chosen')
  print(f'tune: chosen {chosen}: dev F1 @0.5 {100 * r["dev_f1"]:.2f}'
        + (f' (the config as given: {100 * default["dev_f1"]:.2f})' if default else '')
        + f'; {len(plan["results"])} trials in {_minutes(plan["elapsed_seconds"])}; the run: {target} '
        f'(python -m implicit_jax.evaluate --workdir={target}); table: {os.path.join(workdir, "trials.md")}',
        flush=True)
  return plan


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f'unexpected arguments: {argv[1:]}')
  logging.set_verbosity(logging.WARNING)
  FLAGS.config.config_file = config_flags.get_config_filename(FLAGS['config'])
  FLAGS.config.overrides = cli.overrides(config_flags.get_override_values(FLAGS['config']))
  try:
    tune(FLAGS.config, FLAGS.workdir, FLAGS.budget_minutes, sys.argv[1:])
  except KeyboardInterrupt:
    raise cli.Interrupted(f'{FLAGS.workdir} keeps the finished trials and the last checkpoint of the one cut short; '
                          'the same command resumes') from None


if __name__ == '__main__':
  cli.run(main)
