"""implicit_jax.runner: skip what is done, resume what was cut, supersede a record from its own recipe (the old
record moved only once the new one is written), the writer hook, verify, and errors that name the run."""

import json

import pytest

from conftest import load_config
from implicit_jax import runner
from implicit_jax.engine import checkpoints, config as config_lib, train


def _comparable(result):
  """A result but for its seconds and the config's provenance, which say how a run was made, not what it computed."""
  out = {k: v for k, v in result.items() if k != 'train_seconds'}
  out['config'] = {k: v for k, v in out['config'].items() if k not in ('config_file', 'overrides')}
  return out


def _tiny(epochs=4):
  config = load_config('tiny')
  config.num_epochs, config.checkpoint_every = epochs, 2  # 8 steps an epoch: a checkpoint every 2 steps
  return config


def _fake_training(monkeypatch, seen, **extra):
  """train_and_evaluate stood in for: records its (config, workdir) in ``seen`` and returns a small result."""
  def fake(config, workdir):
    seen.append((config, workdir))
    return {'test_f1': 0.5, 'seed': config.seed, 'predictions': {'test': 'p'}, **extra}
  monkeypatch.setattr(train, 'train_and_evaluate', fake)


def test_a_run_whose_record_exists_is_skipped_unbuilt_and_the_rest_trained_and_written(tmp_path, monkeypatch, capsys):
  seen = []
  _fake_training(monkeypatch, seen)
  (tmp_path / 'a.json').write_text('{"kept": 1}')

  def never():
    raise AssertionError('the config of a run whose record exists was built')
  runs = [runner.Run('a seed 0', never, tmp_path / 'a.json', str(tmp_path / 'wa')),
          runner.Run('b seed 0', _tiny, tmp_path / 'sub' / 'b.json', str(tmp_path / 'wb'))]
  outcomes = runner.run_all(runs)
  assert [o.status for o in outcomes] == ['done', 'trained']
  assert [w for _, w in seen] == [str(tmp_path / 'wb')]
  assert json.loads((tmp_path / 'a.json').read_text()) == {'kept': 1}
  assert json.loads((tmp_path / 'sub' / 'b.json').read_text())['test_f1'] == 0.5  # the default writer, its folder made
  assert not list((tmp_path / 'sub').glob('*.tmp'))
  out = capsys.readouterr().out
  assert '== b seed 0' in out and '== a seed 0' not in out
  assert [o.status for o in runner.run_all(runs)] == ['done', 'done'] and len(seen) == 1  # the same list again


def test_the_writer_hook_writes_each_record(tmp_path, monkeypatch):
  seen, written = [], []
  _fake_training(monkeypatch, seen)

  def writer(path, result):
    written.append((path, dict(result)))
    path.write_text(json.dumps(dict(result, stamped=True)))
  run = runner.Run('x', _tiny(), tmp_path / 'x.json', str(tmp_path / 'w'))
  runner.run_all([run], writer=writer)
  assert written == [(tmp_path / 'x.json', {'test_f1': 0.5, 'seed': 0, 'predictions': {'test': 'p'}})]
  assert json.loads((tmp_path / 'x.json').read_text())['stamped']


def test_an_error_names_the_run_and_leaves_no_record(tmp_path, monkeypatch, capsys):
  def fails(config, workdir):
    raise ValueError('data/x.arff: no such file')
  monkeypatch.setattr(train, 'train_and_evaluate', fails)
  with pytest.raises(ValueError, match='no such file') as error:
    runner.run_all([runner.Run('bibtex mbce seed 3', _tiny(), tmp_path / 'r.json', str(tmp_path / 'w'))])
  assert 'run bibtex mbce seed 3 failed (ValueError)' in capsys.readouterr().err
  assert any('bibtex mbce seed 3' in note for note in error.value.__notes__)
  assert not (tmp_path / 'r.json').exists()


def _unscored(path, seed=0, **values):
  """A record as those made before records kept predictions: the tiny config of ``seed``, no predictions."""
  config = _tiny(2)
  config.seed = seed
  record = {'config': config_lib.recorded(config), 'test_f1': 0.25, **values}
  path.write_text(json.dumps(record))
  return record


def test_supersede_reruns_a_record_without_predictions_from_itself_and_moves_it_only_after(tmp_path, monkeypatch):
  runs_dir, old_dir = tmp_path / 'runs', tmp_path / 'superseded'
  runs_dir.mkdir()
  out = runs_dir / 'x-seed0.json'
  old = _unscored(out, seed=7)
  kept = runs_dir / 'y-seed0.json'
  kept.write_text(json.dumps({'predictions': {'test': 'p'}}))
  absent = runs_dir / 'z-seed0.json'

  def row():  # today's row: a supersede reruns the record's own config, not this
    c = _tiny()
    c.seed = 99
    return c
  runs = [runner.Run(n, row, p, str(tmp_path / n)) for n, p in (('x', out), ('y', kept), ('z', absent))]

  def fails(config, workdir):
    raise KeyboardInterrupt
  monkeypatch.setattr(train, 'train_and_evaluate', fails)  # a rerun cut short: the old record stays where it was
  with pytest.raises(KeyboardInterrupt):
    runner.run_all(runs, supersede=old_dir)
  assert json.loads(out.read_text()) == old and not old_dir.exists()

  seen, states = [], []
  _fake_training(monkeypatch, seen)

  def writer(path, result):  # what lies where when the new record is written
    states.append((path, out.exists() and json.loads(out.read_text()) == old, (old_dir / out.name).exists()))
    runner.write_json(path, result)
  outcomes = runner.run_all(runs, writer=writer, supersede=old_dir)
  assert [o.status for o in outcomes] == ['superseded', 'kept', 'trained']  # an absent record trains from its row
  assert states[0] == (runner.staged(out), True, False)  # the old record in place until the new one is written
  config, workdir = seen[0]
  assert config.seed == 7 and workdir == str(tmp_path / 'x')  # its own recipe, in its run's workdir
  assert config.config_file == str(old_dir / out.name)  # the new record names the old one, where it went
  assert json.loads((old_dir / out.name).read_text()) == old
  assert json.loads(out.read_text())['predictions'] and not runner.staged(out).exists()
  assert seen[1][0].seed == 99

  # Cut between writing the new record and moving the old one: the same call finishes the move, training nothing.
  (old_dir / out.name).replace(out)
  runner.write_json(runner.staged(out), {'predictions': {'test': 'new'}})
  assert runner.run_all(runs[:1], supersede=old_dir)[0].status == 'superseded' and len(seen) == 2
  assert json.loads(out.read_text())['predictions'] == {'test': 'new'} and json.loads(
      (old_dir / out.name).read_text()) == old
  # The new record removed since: rerun from the replaced one. Two replaced records of one run: refused.
  out.unlink()
  assert runner.run_all(runs[:1], supersede=old_dir)[0].status == 'superseded' and len(seen) == 3
  _unscored(out)
  with pytest.raises(SystemExit, match='already holds a replaced record'):
    runner.run_all(runs[:1], supersede=old_dir)


def test_verify_reruns_a_record_from_its_recipe_in_a_fresh_workdir_and_writes_nothing(tmp_path, monkeypatch):
  seen = []
  _fake_training(monkeypatch, seen, dev_f1=0.4)
  out = tmp_path / 'x.json'
  _unscored(out, test_f1=0.5, dev_f1=0.3, seed=5)
  before = out.read_text()
  workdir = tmp_path / 'verify'
  workdir.mkdir()
  (workdir / 'stale').write_text('')
  recipes = []

  def recipe(path):
    recipes.append(path)
    return config_lib.from_record(path)
  runs = [runner.Run('x', _tiny, out, str(workdir)), runner.Run('y', _tiny, tmp_path / 'y.json', str(tmp_path / 'y'))]
  outcomes = runner.run_all(runs, verify=('test_f1', 'dev_f1'), recipe=recipe, writer=None)
  assert [o.status for o in outcomes] == ['verified', 'missing']
  assert recipes == [out] and seen[0][0].seed == 5 and not (workdir / 'stale').exists()
  assert outcomes[0].values == {'test_f1': (0.5, 0.5), 'dev_f1': (0.3, 0.4)} and not outcomes[0].identical
  assert out.read_text() == before and not (tmp_path / 'y.json').exists()
  with pytest.raises(ValueError, match='choose one'):
    runner.run_all(runs, verify=('test_f1',), supersede=tmp_path / 'old')


def test_a_run_cut_after_its_first_checkpoint_resumes_to_the_uncut_runs_record_which_verifies(tmp_path, monkeypatch,
                                                                                                 capsys):
  """configs/tiny.py, Ctrl-C right after its first checkpoint: the same call resumes it from its workdir, and its
  record holds exactly the metrics, history and training log of an uncut run; verify reruns that record to the bit."""
  save = checkpoints.Checkpointer.save

  def save_then_cut(self, state, loop):
    save(self, state, loop)
    raise KeyboardInterrupt
  cut = runner.Run('tiny cut', _tiny, tmp_path / 'cut.json', str(tmp_path / 'cut'))
  monkeypatch.setattr(checkpoints.Checkpointer, 'save', save_then_cut)
  with pytest.raises(KeyboardInterrupt):
    runner.run_all([cut])
  assert 'run tiny cut cut short' in capsys.readouterr().err
  assert not cut.record.exists() and checkpoints.has_checkpoint(cut.workdir)
  monkeypatch.setattr(checkpoints.Checkpointer, 'save', save)
  [resumed] = runner.run_all([cut])
  assert 'resuming from step 2' in capsys.readouterr().out
  [uncut] = runner.run_all([runner.Run('tiny', _tiny, tmp_path / 'uncut.json', str(tmp_path / 'uncut'))])
  a, b = (json.loads(p.read_text()) for p in (cut.record, tmp_path / 'uncut.json'))
  assert a['steps'] == 32 and a['history'] and a['train_log']
  assert _comparable(a) == _comparable(b)
  [verified] = runner.run_all([runner.Run('tiny', None, tmp_path / 'uncut.json', str(tmp_path / 'verify'))],
                              verify=('test_f1', 'dev_f1', 'best_epoch'))
  assert verified.identical, verified.values
