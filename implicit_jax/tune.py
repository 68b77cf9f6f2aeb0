r"""Tunes a multi-label run on its own dev split, within a wall-clock budget: an Optuna study, one command.

  python -m implicit_jax.tune --config=configs/custom.py --config.data.train_file=mine.arff \
      --workdir=/tmp/implicit_jax/mine-tuned --budget_minutes=30 [--config.method=feedforward]
      [--ray [--parallel=N] | --address=HOST:PORT --parallel=N] [--storage=URL] [--max_trials=N]

The study (``optuna``: a TPE sampler seeded by ``config.seed``, a median pruner) searches ``SPACE[config.method]``
below, its first trial the config as given ("default"). Each trial is a run of ``implicit_jax.runner`` in
``WORKDIR/trials/NAME/`` (its record ``NAME.json``, its log ``NAME.log``): one after the other in this process, or
``--parallel`` at once as Ray tasks (``--ray``: on this machine; ``--address``: a Ray cluster). A trial reports its
dev F1 @0.5 after each epoch; the pruner stops one whose curve sits under the median of the finished trials' at the
same epoch. The budget is wall-clock time from the tune's first start, every process that worked on it counted (a
killed one too, ``clock.json``): no trial starts that the slowest first epoch so far says cannot show an epoch before
the deadline, and a trial is stopped at the end of an epoch when the next would pass it (``MARGIN_SECONDS`` kept for
the end). A file whose dev split is small (under ``CV_BELOW`` rows) is tuned by ``CV_FOLDS``-fold cross-validation on
its training rows instead: each trial trains once per fold, ``data.dev_fold`` = 0, 1, ..., ``CV_FOLDS`` - 1 with
``data.dev_fraction`` = 1 / ``CV_FOLDS`` and the config's ``data.split_seed`` (``splits.kfold_split``: the folds' dev
rows are disjoint and cover the training rows, so each is scored once; the test rows are no fold's), and scores the
mean of their dev F1.

The choice is the finished trial of best score (dev F1 @0.5 of its selected epoch, the metric every multi-label run
selects its epoch on, or its mean over the folds; test is never read for it; the default wins a tie), its run copied
to ``WORKDIR/chosen/`` for ``evaluate`` and ``predict``: the run on the config's own dev split, or under
cross-validation the trial's fold-0 run (trained on the other folds, its dev fold 0: not retrained on all rows).
``WORKDIR/trials.md`` tables every trial. The study lives in ``WORKDIR/study.db`` (SQLite, whose transactions
survive a SIGKILL) or in ``--storage``'s database: killed at any moment, the same command resumes: finished trials
are kept, the trial cut short is made again with its settings, resuming its runs from their checkpoints.
"""

from __future__ import annotations

import contextlib
import datetime
import hashlib
import json
import math
import os
import shutil
import sys
import threading
import time

from absl import app, flags, logging
from ml_collections import config_flags

from implicit_jax import runner
from implicit_jax.engine import checkpoints, cli, config as config_lib, workdir as workdir_lib

FLAGS = flags.FLAGS
cli.define_config_flag('The config to tune (e.g. configs/custom.py), or a run record (.json) whose recipe it '
                       'tunes, with its --config.* overrides: trial "default".')
flags.DEFINE_string('workdir', None,
                    'Folder of the tune: tune.json, study.db, clock.json, trials.md, trials/, chosen/.')
flags.DEFINE_float('budget_minutes', 30.0, 'Wall-clock budget of the whole tune, every start of it counted.',
                   lower_bound=0.0)
# inf and nan pass the bound (a NaN compares false): refused here, before anything runs
flags.register_validator('budget_minutes', math.isfinite, message='--budget_minutes must be a finite number of minutes')
flags.DEFINE_string('storage', '', 'The study\'s database URL (e.g. postgresql://host/db, reachable by every Ray '
                    'node); default sqlite:///WORKDIR/study.db.')
flags.DEFINE_integer('max_trials', 0, 'Stop after this many trials (0: as many as the budget holds).', lower_bound=0)
flags.DEFINE_integer('parallel', 1, 'Trials at once, as Ray tasks (more than 1 needs Ray: --ray or --address).',
                     lower_bound=1)
flags.DEFINE_bool('ray', False, 'Run the trials as Ray tasks on this machine (the extra: pip install -e \'.[scale]\').')
flags.DEFINE_string('address', None, 'A Ray cluster to run the trials on (host:port, ray://host:port or auto); '
                    'WORKDIR must then be on storage every node sees, and --storage a database they reach.')
flags.DEFINE_float('cpus_per_run', 1.0, 'CPUs each trial holds on Ray.')
flags.DEFINE_float('gpus_per_run', None, 'Each trial\'s share of a GPU on Ray (default: one where there are GPUs).')
flags.mark_flags_as_required(['config', 'workdir'])

PLAN = 'tune.json'
CLOCK = 'clock.json'
# The search space, per method: (config field, kind, choices or (low, high)). Kinds: 'log' (log-uniform float),
# 'float' (uniform), 'int' ((low, high, step)), 'width' (each hidden layer of the inference net this wide: the
# depth stays the config's) and 'choice'. A range is widened, and a choice list extended, to hold the config's own
# value (trial "default" is always the config as given). Epochs stay modest so that small budgets hold trials.
SPACE = {
    'feedforward': [  # MBCE
        ('optimizer.learning_rate', 'log', (3e-4, 1e-2)),
        ('model.dropout', 'float', (0.0, 0.6)),
        ('model.inference_hidden', 'width', (64, 150, 256, 400)),
        ('num_epochs', 'int', (10, 40, 10)),
    ],
    'implicit': [  # implicit CD (or the config's primary loss)
        ('optimizer.learning_rate', 'log', (1e-4, 3e-3)),
        ('model.dropout', 'float', (0.0, 0.6)),
        ('model.inference_hidden', 'width', (64, 150, 256)),
        ('implicit.inner_optimizer.learning_rate', 'log', (1e-4, 3e-3)),  # the inner rate
        ('implicit.solver.reuse', 'choice', ('none', 'r2h', 'r3h')),  # how often the implicit term is solved
        ('implicit.aux_lambda', 'log', (0.3, 3.0)),  # the energy's weight in L_aux = CE + lambda * E
        ('num_epochs', 'int', (10, 80, 10)),
    ],
}
# A dev split of fewer rows than this is too noisy to choose on alone: CV_FOLDS-fold cross-validation instead.
CV_BELOW = 60
# Three folds, for the budget. A trial costs about (CV_FOLDS - 1) * N row-epochs (N training rows): 2N at three
# folds, 4N at five, against 2.7N for the three 90% hold-outs before; docs/tune/budget.md's genbase tune (46 dev rows)
# made 4 trials in 10 minutes at 2.7N, so five folds would leave two or three, hardly a search. Every training row is
# scored once whatever the number of folds; three train each run on 2/3 of the rows (five on 4/5), which biases every
# trial's score alike and matters less for ranking the trials than their number.
CV_FOLDS = 3
# The median pruner: no pruning before this many trials finished, nor before this epoch of a trial's run (on each
# fold: epoch e of fold k is reported as step k * FOLD_STEPS + e).
PRUNE_AFTER_TRIALS = 2
PRUNE_AFTER_EPOCHS = 3
FOLD_STEPS = 1000
# Seconds kept at the end of the budget for what follows the last trial (the copy of chosen/, the table).
MARGIN_SECONDS = 15.0
# How often the running tune notes the time it has spent (clock.json): what a SIGKILL can lose of it.
HEARTBEAT_SECONDS = 2.0


def space_of(config) -> list:
  """``SPACE[config.method]``, refusing a config the tuner cannot tune."""
  if config.task != 'mlc' or config.method not in SPACE:
    raise ValueError(f'config.task={config.task!r}, config.method={config.method!r}: the tuner knows the settings '
                     f'of multi-label runs (task mlc) with method {" or ".join(map(repr, SPACE))}')
  return SPACE[config.method]


def _get(config, key):
  value = config
  for part in key.split('.'):
    value = value[part]
  return value


def default_params(config) -> dict:
  """The config's own values as the study's parameters (trial "default")."""
  params = {}
  for key, kind, _ in space_of(config):
    value = _get(config, key)
    params[key] = int(value[0]) if kind == 'width' else value
  return params


def suggest(trial, config) -> dict:
  """The parameters ``trial`` takes from the space (each range holding the config's own value)."""
  own = default_params(config)
  params = {}
  for key, kind, bounds in space_of(config):
    if kind in ('log', 'float'):
      low, high = min(bounds[0], own[key]), max(bounds[1], own[key])
      params[key] = trial.suggest_float(key, low, high, log=kind == 'log')
    elif kind == 'int':
      low, high, step = bounds
      values = sorted({*range(low, high + 1, step), own[key]})
      params[key] = trial.suggest_categorical(key, values)
    else:
      params[key] = trial.suggest_categorical(key, list(dict.fromkeys([*bounds, own[key]])))
  return params


def overrides_of(config, params: dict) -> dict:
  """Config overrides of a trial's parameters (a width becomes the inference net's tuple, of the config's depth)."""
  out = {}
  for key, kind, _ in space_of(config):
    value = params[key]
    out[key] = (int(value),) * len(_get(config, key)) if kind == 'width' else value
  return out


def _name(params: dict, default: bool) -> str:
  """A trial's folder: 'default', or a digest of its parameters (a trial made again after a kill finds its runs)."""
  if default:
    return 'default'
  return 't' + hashlib.sha1(json.dumps(params, sort_keys=True).encode()).hexdigest()[:10]


def _shown(arg: str) -> str:
  """A command-line word as the table shows it: the workdir as WORKDIR."""
  return '--workdir=WORKDIR' if arg.startswith('--workdir=') else arg


def _minutes(seconds: float) -> str:
  return f'{seconds / 60:.1f} min'


# What a tune stopped before its record was written leaves.
_STARTED = {'lock', f'{PLAN}.tmp', 'study.db', 'study.db-journal'}


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


def fold_config(config, fold: int, folds: int):
  """``config`` on fold ``fold`` of ``folds``-fold cross-validation (``data.dev_fold``, ``data.dev_fraction``)."""
  run = config.copy_and_resolve_references()
  run.data.dev_fold, run.data.dev_fraction = fold, 1.0 / folds
  return run


def _folds(config) -> tuple[int, str]:
  """(folds per trial, why): reads the data (a file with a degenerate label set is refused here, before the
  workdir is touched) and counts its dev rows; a small dev split is cross-validated, each fold's data read here."""
  parts = config_lib.check(config)
  task = parts.make_task(config)
  from implicit_jax.engine import data  # pylint: disable=import-outside-toplevel  (jax: once the config is known)
  dev = data.num_examples(task.splits['dev'])
  if dev >= CV_BELOW:
    return 1, f'{dev} dev rows: one dev split'
  why = f'{dev} dev rows, under {CV_BELOW}'
  for fold in range(CV_FOLDS):  # each fold's splits checked before the workdir is touched (a dev fold of no label)
    try:
      parts.make_task(fold_config(config, fold, CV_FOLDS))
    except ValueError as e:
      raise ValueError(f'{why}: the tune cross-validates on {CV_FOLDS} folds (data.dev_fold), and fold {fold}: '
                       f'{cli.one_line(e)}') from None
  return CV_FOLDS, (f'{why}: {CV_FOLDS}-fold cross-validation on the training rows, each trial scoring the mean '
                    f'dev F1 of its {CV_FOLDS} runs (data.dev_fold 0 to {CV_FOLDS - 1}); chosen/ is fold 0\'s run')


def _open_plan(config, workdir, budget_minutes, argv, storage, folds) -> dict:
  """The tune's record (``tune.json``): made on the first call, read back and checked on the next."""
  path = os.path.join(workdir, PLAN)
  recorded = config_lib.flatten(config_lib.recorded(config))
  recorded.pop('overrides', None)
  if os.path.exists(path):
    plan = checkpoints.read_json(path)
    if not isinstance(plan, dict) or 'config' not in plan or 'study' not in plan:
      raise ValueError(f'{path}: not the record of a tune (or of one made before the tuner was an Optuna study: '
                       'give a new workdir)')
    # a field the plan lacks, added to the code since (data.dev_fold), at its default: the config the plan records
    defaults = config_lib.flatten(config_lib.recorded(config_lib.base_config(config.task, config.method)))
    old = {**{k: defaults[k] for k in set(recorded) - set(plan['config']) if k in defaults}, **plan['config']}
    if old != recorded:
      differ = sorted((k for k in set(old) | set(recorded) if old.get(k) != recorded.get(k)),
                      key=lambda k: (k.count('.'), k))  # 'method' before the fields of its section
      raise ValueError(f'--workdir {workdir} holds a tune of another config ({", ".join(differ[:5])} differ); give '
                       'the command that started it to resume it, or a new workdir')
    if plan.get('folds', 1) > 1 and plan.get('cv') != 'kfold':
      raise ValueError(f'--workdir {workdir} holds a tune whose trials were scored on {plan["folds"]} seeded dev '
                       'hold-outs, made before the tuner cross-validated in disjoint folds: give a new workdir')
    plan['budget_minutes'] = budget_minutes
    return plan
  digest = hashlib.sha1(json.dumps(recorded, sort_keys=True, default=str).encode()).hexdigest()[:12]
  plan = {'config': recorded, 'config_file': config.config_file, 'method': config.method, 'argv': argv,
          'budget_minutes': budget_minutes, 'started': datetime.datetime.now().isoformat(timespec='seconds'),
          'study': f'tune-{config.method}-{digest}', 'storage': storage or 'sqlite:///WORKDIR/study.db',
          'seed': int(config.seed), 'folds': folds[0], 'folds_note': folds[1],
          **({'cv': 'kfold'} if folds[0] > 1 else {})}
  checkpoints.write_json(path, plan)
  return plan


class Clock:
  """The tune's wall-clock time across its starts: ``clock.json`` lists each start's [first, last] moment, the
  last noted every HEARTBEAT_SECONDS by a thread (and at the end), so that a killed start counts up to its last
  note."""

  def __init__(self, workdir: str):
    self.path = os.path.join(workdir, CLOCK)
    starts = checkpoints.read_json(self.path)['starts'] if os.path.exists(self.path) else []
    self.before = sum(last - first for first, last in starts)
    self.starts, self.start = starts, time.time()
    self.starts.append([self.start, self.start])
    self._stop = threading.Event()
    self._note()
    self._thread = threading.Thread(target=self._beat, daemon=True)
    self._thread.start()

  def _note(self):
    self.starts[-1][1] = time.time()
    checkpoints.write_json(self.path, {'starts': self.starts})

  def _beat(self):
    while not self._stop.wait(HEARTBEAT_SECONDS):
      with contextlib.suppress(OSError):
        self._note()

  def elapsed(self) -> float:
    return self.before + time.time() - self.start

  def close(self):
    self._stop.set()
    self._thread.join()
    self._note()


class EpochReport:
  """The hook a trial's run calls after each epoch (``train_and_evaluate``'s ``on_epoch``), in this process or a Ray
  worker: reports the dev F1 @0.5 to the study (step ``fold * FOLD_STEPS + epoch``), stops the run where the pruner
  says so, or where the next epoch would pass the tune's ``deadline`` (seconds since the epoch, time.time()). A stopped
  run raises ``optuna.TrialPruned``, after noting why on the trial (user attribute ``stopped``)."""

  def __init__(self, storage: str, study: str, trial_id: int, deadline: float, num_epochs: int, fold: int = 0):
    self.storage, self.study, self.trial_id = storage, study, trial_id
    self.deadline, self.num_epochs, self.fold = deadline, num_epochs, fold
    self.created, self.last = time.time(), None

  def __getstate__(self):
    return {**self.__dict__, '_cached': None}

  def _trial(self):
    import optuna  # pylint: disable=import-outside-toplevel
    if self.__dict__.get('_cached') is None:
      optuna.logging.set_verbosity(optuna.logging.WARNING)
      study = optuna.load_study(study_name=self.study, storage=self.storage, pruner=pruner())
      self.__dict__['_cached'] = optuna.trial.Trial(study, self.trial_id)
    return self.__dict__['_cached']

  def __call__(self, epoch: int, metrics: dict) -> None:
    import optuna  # pylint: disable=import-outside-toplevel
    now = time.time()
    spent, self.last = (now - self.last if self.last is not None else None), now
    trial = self._trial()
    if self.fold == 0 and spent is None:  # the time a trial takes to show its first epoch: the budget's estimate
      trial.set_user_attr('first_epoch_seconds', now - self.created)
    # epoch e of fold k is step k * FOLD_STEPS + e: compared with the finished trials' on the same fold
    trial.report(float(metrics['f1']), self.fold * FOLD_STEPS + epoch)
    if epoch >= PRUNE_AFTER_EPOCHS and trial.should_prune():
      where = f'epoch {epoch}' + (f' of fold {self.fold}' if self.fold else '')
      trial.set_user_attr('stopped', f'pruned at {where}')
      raise optuna.TrialPruned(f'pruned at {where}')
    # the next epoch is assumed to take what the last did (after the first, whose time holds the compile: then only
    # a deadline already passed stops the run)
    if epoch < self.num_epochs and (now > self.deadline or (spent is not None and now + 1.2 * spent > self.deadline)):
      trial.set_user_attr('stopped', f'the budget, at epoch {epoch}')
      raise optuna.TrialPruned(f'stopped by the budget at epoch {epoch}')


def pruner():
  """The median pruner: a trial's dev F1 at an epoch under the median of the finished trials' at that epoch stops
  it, from epoch PRUNE_AFTER_EPOCHS on, once PRUNE_AFTER_TRIALS trials have finished."""
  import optuna  # pylint: disable=import-outside-toplevel
  return optuna.pruners.MedianPruner(n_startup_trials=PRUNE_AFTER_TRIALS, n_warmup_steps=PRUNE_AFTER_EPOCHS)


def _study(plan, workdir, storage):
  import optuna  # pylint: disable=import-outside-toplevel
  optuna.logging.set_verbosity(optuna.logging.WARNING)
  url = storage or f'sqlite:///{os.path.abspath(os.path.join(workdir, "study.db"))}'
  study = optuna.create_study(storage=url, study_name=plan['study'], direction='maximize', load_if_exists=True,
                              pruner=pruner())
  return study, url


def _recover(study, workdir) -> int:
  """Trials this workdir's tune left running (killed with it: it holds the lock now) are marked killed, failed, and
  their settings enqueued to be made again (their runs resume from their checkpoints). Returns how many."""
  from optuna.trial import TrialState  # pylint: disable=import-outside-toplevel
  killed = 0
  for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
    if t.user_attrs.get('workdir') != os.path.abspath(workdir):
      continue  # another tune's, sharing the database
    study._storage.set_trial_user_attr(t._trial_id, 'killed', True)  # pylint: disable=protected-access
    study.tell(t.number, state=TrialState.FAIL)
    study.enqueue_trial(t.params, user_attrs={'default': t.user_attrs.get('default', False), 'again': t.number})
    killed += 1
  return killed


def _ask(study, plan, config, workdir):
  """The next trial: the sampler seeded by the tune's seed and the number of trials before it, kills aside, so that
  a resumed tune asks what an undisturbed one would have asked after the same results."""
  import optuna  # pylint: disable=import-outside-toplevel
  made = sum(1 for t in study.get_trials(deepcopy=False) if not t.user_attrs.get('killed'))
  study.sampler = optuna.samplers.TPESampler(seed=plan['seed'] + made, n_startup_trials=5)
  trial = study.ask()
  params = suggest(trial, config)
  default = bool(trial.user_attrs.get('default'))
  trial.set_user_attr('workdir', os.path.abspath(workdir))
  trial.set_user_attr('name', _name(params, default))
  return trial, params


def _runs(plan, config, workdir, url, trial, params, deadline) -> list:
  """The runs of a trial: one on the config's dev split, or one per fold (``data.dev_fold`` = 0, 1, ..., folder
  NAME for fold 0, NAME-foldK for the others)."""
  name = trial.user_attrs['name']
  runs = []
  folds = plan['folds']
  for fold in range(folds):
    run = fold_config(config, fold, folds) if folds > 1 else config.copy_and_resolve_references()
    run.update_from_flattened_dict(overrides_of(config, params))
    folder = os.path.join(workdir, 'trials', name if fold == 0 else f'{name}-fold{fold}')
    hook = EpochReport(url, plan['study'], trial._trial_id, deadline, run.num_epochs,  # pylint: disable=protected-access
                       fold=fold)
    runs.append(runner.Run(os.path.basename(folder), run, f'{folder}.json', folder, on_epoch=hook))
  return runs


def _train(runs, ray_options, log_path):
  """Trains ``runs`` through the runner (as Ray tasks with ``ray_options``), its lines in ``log_path``; returns the
  error that stopped a run (the first), or None. Ctrl-C goes through."""
  with open(log_path, 'a') as log, contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
    try:
      if ray_options is None:
        for run in runs:
          runner.run_all([run])
      else:
        runner.run_all(runs, ray=ray_options)
    except Exception as e:  # pylint: disable=broad-except  (sorted out by the caller from the records)
      return e
  return None


def _tell(study, trial, runs, error) -> str:
  """The trial's end in the study, from its runs' records: complete (its score, the mean dev F1 of its runs; its
  ``result`` the first run's figures, fold 0's under cross-validation),
  pruned or stopped by the budget (the hook said so), or failed (diverged). Returns a line saying which."""
  import optuna  # pylint: disable=import-outside-toplevel
  from optuna.trial import TrialState  # pylint: disable=import-outside-toplevel
  records = [runner.read_json(r.record) if r.record.exists() else None for r in runs]
  if all(r is not None for r in records):
    keys = ('best_epoch', 'dev_f1', 'dev_f1_tuned', 'test_f1', 'test_f1_tuned', 'train_seconds')
    trial.set_user_attr('result', {k: records[0][k] for k in keys})
    trial.set_user_attr('fold_dev_f1', [r['dev_f1'] for r in records])
    score = sum(r['dev_f1'] for r in records) / len(records)
    study.tell(trial, score)
    return f'dev F1 @0.5 {100 * score:.2f}'
  stopped = study._storage.get_trial(trial._trial_id).user_attrs.get('stopped')  # pylint: disable=protected-access
  if stopped or isinstance(error, optuna.TrialPruned):
    study.tell(trial, state=TrialState.PRUNED)
    return stopped or 'pruned'
  if error is not None and not isinstance(error, FloatingPointError):
    study.tell(trial, state=TrialState.FAIL)
    raise error
  trial.set_user_attr('diverged', cli.one_line(error) if error is not None else 'no record')
  study.tell(trial, state=TrialState.FAIL)
  return f'diverged: {cli.one_line(error)[:300] if error is not None else "no record"}'


def _expected_first_epoch(study) -> float:
  """The longest time a trial took to its first epoch's end, of those that noted it (0 before any did)."""
  return max([t.user_attrs.get('first_epoch_seconds', 0.0) for t in study.get_trials(deepcopy=False)] or [0.0])


def _complete(study) -> list:
  from optuna.trial import TrialState  # pylint: disable=import-outside-toplevel
  return [t for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
          if t.user_attrs.get('result') is not None]


def _keep_chosen(study, plan, workdir):
  """The finished trial of best score (the first of equal scores: the default, trial 0, wins a tie), its run on the
  config's own dev split (under cross-validation its fold-0 run) copied to ``WORKDIR/chosen`` (atomically: a copy cut
  short is made again)."""
  done = _complete(study)
  if not done:
    raise FloatingPointError(f'no trial of the tune in {workdir} finished within the budget ({len(study.trials)} '
                             'started; trials.md says how each ended): give a larger --budget_minutes, or lower '
                             'config.optimizer.learning_rate if they diverged')
  chosen = max(done, key=lambda t: (t.value, -t.number))
  name = chosen.user_attrs['name']
  target = os.path.join(workdir, 'chosen')
  if plan.get('chosen') != name or not os.path.isdir(target):
    tmp = f'{target}.tmp'
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(os.path.join(workdir, 'trials', name), tmp, ignore=shutil.ignore_patterns('lock'))
    shutil.rmtree(target, ignore_errors=True)
    os.replace(tmp, target)
    plan['chosen'] = name
    checkpoints.write_json(os.path.join(workdir, PLAN), plan)
  return chosen


def _short(key: str, params: dict) -> str:
  """A parameter's name in the table: its last part, or its last two where another parameter ends alike (the outer
  and the inner learning rate)."""
  last = key.split('.')[-1]
  alike = sum(k.split('.')[-1] == last for k in params)
  return last if alike == 1 else '.'.join(key.split('.')[-2:])


def _table(study, plan, chosen, elapsed, workdir) -> str:
  from optuna.trial import TrialState  # pylint: disable=import-outside-toplevel
  cv = plan['folds'] > 1
  lines = [f'# Tune of {plan["config_file"] or "a config"} ({plan["method"]})', '',
           f'Made by `python -m implicit_jax.tune {" ".join(_shown(a) for a in plan["argv"])}` (started '
           f'{plan["started"]}; budget {plan["budget_minutes"]:g} min; {plan["folds_note"]}). Dev F1 @0.5 selects the '
           'epoch and the trial' + (' (the mean over the folds: "score"; the other figures are fold 0\'s)' if cv
                                    else '')
           + '; the test figures are listed, never used.', '',
           '| trial | name | state | ' + ('score | ' if cv else '') + 'best epoch | dev @0.5 | dev tuned | test @0.5 | '
           'test tuned | settings |',
           '|---|---|---|' + ('---|' if cv else '') + '---|---|---|---|---|---|']
  counts = {}
  for t in study.get_trials(deepcopy=False):
    if t.user_attrs.get('workdir') not in (None, os.path.abspath(workdir)):
      continue
    name = t.user_attrs.get('name', '?')
    shown = ', '.join(f'{_short(k, t.params)}={v:.3g}' if isinstance(v, float) else f'{_short(k, t.params)}={v}'
                      for k, v in t.params.items())
    r = t.user_attrs.get('result')
    if t.state == TrialState.COMPLETE and r is not None:
      state = 'finished' + (' (chosen)' if t.number == chosen.number else '')
      counts['finished'] = counts.get('finished', 0) + 1
      figures = ((f'{100 * t.value:.2f} | ' if cv else '') + f'{r["best_epoch"]} | {100 * r["dev_f1"]:.2f} | '
                 f'{100 * r["dev_f1_tuned"]:.2f} | {100 * r["test_f1"]:.2f} | {100 * r["test_f1_tuned"]:.2f}')
    else:
      if t.user_attrs.get('killed'):
        state = f'killed with the tune (made again as trial {t.number + 1} or later)'
        counts['killed'] = counts.get('killed', 0) + 1
      elif t.state == TrialState.PRUNED:
        state = t.user_attrs.get('stopped', 'pruned')
        key = 'stopped by the budget' if 'budget' in state else 'pruned'
        counts[key] = counts.get(key, 0) + 1
      else:
        state = f'diverged: {t.user_attrs.get("diverged", t.state.name)[:200]}'
        counts['diverged'] = counts.get('diverged', 0) + 1
      figures = ' | '.join([''] * (6 if cv else 5))
    label = 'default' if t.user_attrs.get('default') else name
    lines.append(f'| {t.number} | {label} | {state} | {figures} | {shown} |')
  lines += ['', f'{sum(counts.values())} trials: ' + ', '.join(f'{v} {k}' for k, v in sorted(counts.items()))
            + f'; {_minutes(elapsed)} in all, every start of the tune counted, of the {plan["budget_minutes"]:g} min '
            'budget.']
  return '\n'.join(lines) + '\n'


def ray_options(use_ray: bool, address, parallel: int, cpus_per_run: float = 1.0, gpus_per_run=None):
  """``runner.run_all``'s Ray options, or None (one trial after the other here): Ray is used when asked for
  (``use_ray``, ``address``, or ``parallel`` > 1), refused in one line where it is not installed."""
  from implicit_jax import ray_runs  # pylint: disable=import-outside-toplevel  (no Ray import here)
  if not (use_ray or address or parallel > 1):
    return None
  if not ray_runs.installed():
    raise ValueError(f'--parallel={parallel}, --ray or --address run the trials on Ray, which is not installed here: '
                     f'{ray_runs.EXTRA} (or leave them out: one trial after the other)')
  return ray_runs.RayOptions(address=address, cpus_per_run=cpus_per_run, gpus_per_run=gpus_per_run)


def tune(config, workdir: str, budget_minutes: float, argv=(), storage: str = '', max_trials: int = 0,
         parallel: int = 1, ray=None) -> dict:
  """Runs (or resumes) the tune in ``workdir``; returns its record (``tune.json``) with ``chosen`` set, and
  ``trials`` (per trial: number, name, state, score, params). ``ray``: ``ray_runs.RayOptions`` or None."""
  space_of(config)  # a config the tuner cannot tune is refused before the data is read or the workdir touched
  folds = _folds(config)  # checks the config (config_lib.check) and reads the data
  _prepare(workdir)
  with workdir_lib.Lock(workdir):
    plan = _open_plan(config, workdir, budget_minutes, list(argv), storage, folds)
    clock = Clock(workdir)
    try:
      return _tune(config, workdir, plan, clock, storage, max_trials, parallel, ray)
    finally:
      clock.close()


def _tune(config, workdir, plan, clock, storage, max_trials, parallel, ray):
  budget = plan['budget_minutes'] * 60
  deadline = clock.start + budget - clock.before - MARGIN_SECONDS
  study, url = _study(plan, workdir, storage)
  again = _recover(study, workdir)
  if not study.trials:
    study.enqueue_trial(default_params(config), user_attrs={'default': True})
  ours = lambda: [t for t in study.get_trials(deepcopy=False) if t.user_attrs.get('workdir') == os.path.abspath(workdir)
                  and not t.user_attrs.get('killed')]
  print(f'tune: {"resuming" if clock.before else "starting"} {plan["study"]} ({config.method}, '
        f'{plan["folds_note"]}): {len(ours())} trials made, {_minutes(clock.before)} used of '
        f'{plan["budget_minutes"]:g} min' + (f'; {again} cut short by a kill, made again' if again else ''),
        flush=True)
  os.makedirs(os.path.join(workdir, 'trials'), exist_ok=True)
  with (_ray_session(ray) if ray is not None else contextlib.nullcontext()):
    while not max_trials or len(ours()) < max_trials:
      now = time.time()
      expected = _expected_first_epoch(study)
      if now + expected > deadline or (expected == 0 and now > deadline):
        print(f'tune: the budget is spent ({_minutes(clock.elapsed())}; a trial needs about '
              f'{expected:.0f} s to its first epoch)', flush=True)
        break
      count = parallel if not max_trials else min(parallel, max_trials - len(ours()))
      batch = [_ask(study, plan, config, workdir) for _ in range(count)]
      jobs = [(trial, _runs(plan, config, workdir, url, trial, params, deadline)) for trial, params in batch]
      for trial, _ in batch:
        log = os.path.join(workdir, 'trials', f'{trial.user_attrs["name"]}.log')
        print(f'tune: trial {trial.number} {trial.user_attrs["name"]} ({_minutes(clock.elapsed())} of '
              f'{plan["budget_minutes"]:g} min used; its log: {log})', flush=True)
      error = _train([r for _, runs in jobs for r in runs], ray,
                     os.path.join(workdir, 'trials', f'{batch[0][0].user_attrs["name"]}.log'))
      for trial, runs in jobs:
        said = _tell(study, trial, runs, error)
        print(f'tune: trial {trial.number} {trial.user_attrs["name"]}: {said}', flush=True)
  chosen = _keep_chosen(study, plan, workdir)
  elapsed = clock.elapsed()
  # atomically, as every file of the workdir: a tune killed while writing it keeps the table of its last round
  workdir_lib.write_text(os.path.join(workdir, 'trials.md'), _table(study, plan, chosen, elapsed, workdir))
  plan['trials'] = [{'number': t.number, 'name': t.user_attrs.get('name'), 'default': bool(t.user_attrs.get('default')),
                     'state': t.state.name, 'killed': bool(t.user_attrs.get('killed')), 'score': t.value,
                     'stopped': t.user_attrs.get('stopped'), 'params': t.params, 'result': t.user_attrs.get('result')}
                    for t in study.get_trials(deepcopy=False)
                    if t.user_attrs.get('workdir') == os.path.abspath(workdir)]
  plan['elapsed_seconds'] = elapsed
  checkpoints.write_json(os.path.join(workdir, PLAN), plan)
  default = next((t for t in _complete(study) if t.user_attrs.get('default')), None)
  print(f'tune: chosen trial {chosen.number} {chosen.user_attrs["name"]}: score (dev F1 @0.5) {100 * chosen.value:.2f}'
        + (f' (the config as given: {100 * default.value:.2f})' if default else '')
        + f'; {len(plan["trials"])} trials in {_minutes(elapsed)}; the run: {os.path.join(workdir, "chosen")} '
        f'(python -m implicit_jax.evaluate --workdir={os.path.join(workdir, "chosen")}); table: '
        f'{os.path.join(workdir, "trials.md")}', flush=True)
  return plan


@contextlib.contextmanager
def _ray_session(options):
  from implicit_jax import ray_runs  # pylint: disable=import-outside-toplevel
  with ray_runs.session(options):
    yield


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f'unexpected arguments: {argv[1:]}')
  logging.set_verbosity(logging.WARNING)
  FLAGS.config.config_file = config_flags.get_config_filename(FLAGS['config'])
  FLAGS.config.overrides = cli.overrides(config_flags.get_override_values(FLAGS['config']))
  options = ray_options(FLAGS.ray, FLAGS.address, FLAGS.parallel, FLAGS.cpus_per_run, FLAGS.gpus_per_run)
  try:
    tune(FLAGS.config, FLAGS.workdir, FLAGS.budget_minutes, sys.argv[1:], storage=FLAGS.storage,
         max_trials=FLAGS.max_trials, parallel=FLAGS.parallel, ray=options)
  except KeyboardInterrupt:
    raise cli.Interrupted(f'{FLAGS.workdir} keeps the finished trials and the last checkpoint of the one cut short; '
                          'the same command resumes') from None


if __name__ == '__main__':
  cli.run(main)
