"""python -m implicit_jax.tune: trials within a budget on the run's dev split, the choice, and resuming a tune that
was killed (implicit_jax/tune.py)."""

import json
import os
from pathlib import Path

import pytest

from implicit_jax import tune as tune_lib
from implicit_jax.engine import config as config_lib, train

# Every test here trains whole runs (the tuner's probe and trials): the e2e suite (setup.cfg), after the fast one.
pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = str(ROOT / 'tests' / 'fixtures' / 'mlc' / 'scaled.arff')


def _config(**overrides):
  config = config_lib.from_file(ROOT / 'configs' / 'custom.py')
  config.update_from_flattened_dict({'data.train_file': FIXTURE, 'method': 'feedforward', 'num_epochs': 3,
                                     'log_every': 1000, **overrides})
  return config


TWO_TRIALS = [{'model.dropout': 0.0}, {'optimizer.learning_rate': 3e-3}]


@pytest.fixture
def two_trials(monkeypatch):
  """The tuner's grid cut to two trials beside the config, so that a test trains a handful of small runs."""
  monkeypatch.setitem(tune_lib.TRIALS, 'feedforward', TWO_TRIALS)


class Calls:
  """Counts train_and_evaluate's calls; raises KeyboardInterrupt (a kill) instead of the call numbered ``stop``,
  after reading the tune's record as a kill -9 at that moment would leave it (no handler runs on SIGKILL)."""

  def __init__(self, stop=None):
    self.count, self.stop, self.real, self.on_disk = 0, stop, train.train_and_evaluate, None

  def __call__(self, config, workdir):
    self.count += 1
    if self.count == self.stop:
      self.on_disk = json.loads((Path(workdir).parents[1] / 'tune.json').read_text())
      raise KeyboardInterrupt
    return self.real(config, workdir)


@pytest.fixture(scope='module')
def straight(tmp_path_factory):
  """A tune of two trials run through, its training calls counted (shared: the tests below read it)."""
  workdir = tmp_path_factory.mktemp('straight')
  calls = Calls()
  with pytest.MonkeyPatch.context() as patch:
    patch.setitem(tune_lib.TRIALS, 'feedforward', TWO_TRIALS)
    patch.setattr(train, 'train_and_evaluate', calls)
    plan = tune_lib.tune(_config(), str(workdir), budget_minutes=30)
  return plan, workdir, calls.count


def test_a_tune_runs_its_trials_writes_the_table_and_keeps_the_best_on_dev(straight):
  plan, workdir, calls = straight
  assert calls == 3 + 3  # the probe's three runs, then the config and its two trials
  assert [n for n, _ in plan['trials']] == ['default', 'dropout0', 'learning_rate0.003']
  results = plan['results']
  assert set(results) == {'default', 'dropout0', 'learning_rate0.003'}
  best = max(r['dev_f1'] for r in results.values())
  assert results[plan['chosen']]['dev_f1'] == best >= results['default']['dev_f1']
  # the chosen trial's run, whole, where evaluate and predict read it
  chosen = json.loads((workdir / 'chosen' / 'metrics.json').read_text())
  assert chosen['dev_f1'] == results[plan['chosen']]['dev_f1']
  table = (workdir / 'trials.md').read_text()
  assert table.count('\n| ') == 1 + 3 and f'| {plan["chosen"]} (chosen) |' in table
  recorded = json.loads((workdir / 'tune.json').read_text())
  assert recorded['chosen'] == plan['chosen'] and recorded['elapsed_seconds'] > 0


def test_each_trial_is_a_runner_record_which_a_tune_killed_before_noting_it_reads_back(straight, tmp_path,
                                                                                      monkeypatch, two_trials):
  """The trials run through implicit_jax.runner: each leaves its record beside its folder (NN-name.json). A tune
  killed after a trial's record was written but before tune.json noted it reads the record back on the rerun instead
  of training the trial again."""
  import shutil  # pylint: disable=import-outside-toplevel
  plan, workdir, _ = straight
  for i, (name, _) in enumerate(plan['trials']):
    record = json.loads((workdir / 'trials' / f'{i:02d}-{name}.json').read_text())
    assert record['dev_f1'] == plan['results'][name]['dev_f1']
  copy = tmp_path / 'copy'
  shutil.copytree(workdir, copy)
  on_disk = json.loads((copy / 'tune.json').read_text())
  del on_disk['results']['learning_rate0.003']  # as a kill between the trial's record and tune.json leaves it
  (copy / 'tune.json').write_text(json.dumps(on_disk))
  calls = Calls()
  monkeypatch.setattr(train, 'train_and_evaluate', calls)
  resumed = tune_lib.tune(_config(), str(copy), budget_minutes=30)
  assert calls.count == 0
  assert resumed['results']['learning_rate0.003']['dev_f1'] == plan['results']['learning_rate0.003']['dev_f1']


def test_a_tune_killed_between_trials_resumes_without_repeating_work(tmp_path, two_trials, monkeypatch, straight):
  straight = straight[0]
  # killed as the second trial starts (calls: the probe's three, default, then the kill)
  killer = Calls(stop=5)
  monkeypatch.setattr(train, 'train_and_evaluate', killer)
  with pytest.raises(KeyboardInterrupt):
    tune_lib.tune(_config(), str(tmp_path / 'killed'), budget_minutes=30)
  assert list(killer.on_disk['results']) == ['default']  # on disk before the next trial starts
  assert list(json.loads((tmp_path / 'killed' / 'tune.json').read_text())['results']) == ['default']
  calls = Calls()
  monkeypatch.setattr(train, 'train_and_evaluate', calls)
  resumed = tune_lib.tune(_config(), str(tmp_path / 'killed'), budget_minutes=30)
  assert calls.count == 2  # no probe, no finished trial again: the two trials left
  for name, result in straight['results'].items():
    for key in ('best_epoch', 'dev_f1', 'dev_f1_tuned', 'test_f1'):
      assert resumed['results'][name][key] == result[key], (name, key)
  assert resumed['chosen'] == straight['chosen']


def test_the_budget_decides_how_many_trials_run_and_one_that_fits_none_is_refused(tmp_path, two_trials,
                                                                                   monkeypatch):
  # a probe that says a trial takes 100 s here and took 10 s, and trials that do take 100 s on the tuner's clock:
  # 4 minutes hold the probe and two trials
  monkeypatch.setattr(tune_lib, '_probe', lambda config, workdir: {
      'one_epoch_seconds': 40.0, 'epoch_seconds': 30.0, 'probe_seconds': 10.0, 'trial_seconds': 100.0})
  clock = {'now': 0.0}
  monkeypatch.setattr(tune_lib.time, 'perf_counter', lambda: clock['now'])
  real = train.train_and_evaluate

  def trial(config, workdir):
    clock['now'] += 100.0
    return real(config, workdir)
  monkeypatch.setattr(train, 'train_and_evaluate', trial)
  plan = tune_lib.tune(_config(), str(tmp_path / 'four'), budget_minutes=4)
  assert list(plan['results']) == ['default', 'dropout0']
  assert plan['elapsed_seconds'] == 210.0
  assert plan['skipped']['learning_rate0.003'].startswith('budget (3.5 min used')
  assert 'not run: budget' in (tmp_path / 'four' / 'trials.md').read_text()
  # the same tune given more time runs the trial the budget left out
  plan = tune_lib.tune(_config(), str(tmp_path / 'four'), budget_minutes=6)
  assert list(plan['results']) == ['default', 'dropout0', 'learning_rate0.003'] and not plan['skipped']
  with pytest.raises(ValueError, match=r'--budget_minutes=1: one trial takes about 1.7 min here .* give at least 2'):
    tune_lib.tune(_config(), str(tmp_path / 'one'), budget_minutes=1)


def test_a_trial_that_diverges_is_recorded_and_the_tune_goes_on(tmp_path, two_trials, monkeypatch):
  monkeypatch.setattr(tune_lib, '_probe', lambda config, workdir: {
      'one_epoch_seconds': 1.0, 'epoch_seconds': 1.0, 'probe_seconds': 3.0, 'trial_seconds': 3.0})
  real = train.train_and_evaluate

  def trial(config, workdir):
    if config.model.dropout == 0.0:
      raise FloatingPointError('step 12: loss is nan')
    return real(config, workdir)
  monkeypatch.setattr(train, 'train_and_evaluate', trial)
  plan = tune_lib.tune(_config(), str(tmp_path / 'tune'), budget_minutes=30)
  assert plan['failed'] == {'dropout0': 'step 12: loss is nan'}
  assert set(plan['results']) == {'default', 'learning_rate0.003'}
  table = (tmp_path / 'tune' / 'trials.md').read_text()
  assert '| dropout0 | model.dropout=0.0 | diverged: step 12: loss is nan |' in table
  monkeypatch.setattr(train, 'train_and_evaluate', lambda config, workdir: (_ for _ in ()).throw(
      FloatingPointError('step 3: loss is nan')))
  with pytest.raises(FloatingPointError, match=r'every trial of the tune in .* diverged \(3; trials.md says how\)'):
    tune_lib.tune(_config(), str(tmp_path / 'all'), budget_minutes=30)


def test_a_tune_refuses_another_config_in_its_workdir_a_foreign_folder_and_a_task_it_cannot_tune(tmp_path, two_trials,
                                                                                                straight):
  with pytest.raises(ValueError, match=r"holds a tune of another config \(method, "):
    tune_lib.tune(_config(method='implicit'), str(straight[1]), budget_minutes=30)
  (tmp_path / 'mine').mkdir()
  (tmp_path / 'mine' / 'notes.txt').write_text('mine')
  with pytest.raises(ValueError, match=r'holds files a tune did not write \(notes.txt\); nothing was changed'):
    tune_lib.tune(_config(), str(tmp_path / 'mine'), budget_minutes=30)
  assert os.listdir(tmp_path / 'mine') == ['notes.txt']
  tagging = config_lib.from_file(ROOT / 'configs' / 'tiny_tagging.py')
  with pytest.raises(ValueError, match=r"config.task='tagging'.*the tuner knows the settings of multi-label runs"):
    tune_lib.tune(tagging, str(tmp_path / 'tagging'), budget_minutes=30)
  assert not (tmp_path / 'tagging').exists()


@pytest.mark.parametrize('budget', ['inf', 'nan'])
def test_a_budget_that_is_not_a_finite_number_is_refused_naming_the_flag_before_the_probe(tmp_path, budget):
  """--budget_minutes=inf or nan passed the flag's lower bound, and the tune failed after its probe with 'cannot
  convert float NaN to integer', no flag named: now one line naming the flag, status 2, nothing written."""
  import subprocess  # pylint: disable=import-outside-toplevel
  import sys  # pylint: disable=import-outside-toplevel
  workdir = tmp_path / 'tune'
  done = subprocess.run([sys.executable, '-m', 'implicit_jax.tune', '--config=configs/custom.py',
                         f'--config.data.train_file={FIXTURE}', f'--workdir={workdir}', f'--budget_minutes={budget}'],
                        cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
  assert done.returncode == 2, done.stderr
  assert done.stderr.splitlines()[0] == (f'error: flag --budget_minutes={budget}: --budget_minutes must be a finite '
                                         'number of minutes')
  assert not workdir.exists()
