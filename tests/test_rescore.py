"""Run records keep compact predictions, and experiments/rescore.py recomputes their figures from them alone."""

import json
import subprocess
import sys

import numpy as np
import pytest

from implicit_jax import tasks
from implicit_jax.engine import predictions
from experiments import records
from implicit_jax import runner
from experiments import rescore
from tests.conftest import ROOT, load_config
from tests.test_tagging_data import tagging_data
from tests.test_tagging_task import make_data_dir, tiny_config as tagging_fixture_config

# A committed NER record with fixed GloVe vectors, made where model.embeddings_path named a file of that machine
NER_FIXED = ROOT / 'docs' / 'tagging' / 'runs' / 'ner_fixed-bilstm-seed0.json'


def test_codec_round_trips_every_kind_of_array():
  rng = np.random.default_rng(0)
  for value in (rng.integers(0, 17, (5, 7)).astype(np.uint8), rng.random((3, 4, 5)) > 0.5,
                rng.random(9).astype(np.float32), np.zeros((0, 3), np.int32), np.array('<f4')):
    back = predictions.decode(json.loads(json.dumps(predictions.encode(value))))
    assert back.dtype == value.dtype and back.shape == value.shape and np.array_equal(back, value)


def test_multilabel_bins_keep_every_comparison_the_evaluator_makes():
  """Scores on and next to every cut, in float32: the relaxed scores agree with them at every grid threshold, in
  float64 (numpy scalars) and in float32 (Python floats), so F1 at 0.5 and tuned are the same."""
  from implicit_jax.tasks.mlc.evaluator import GRID, F1Evaluator  # pylint: disable=import-outside-toplevel
  ev = F1Evaluator()
  near = [np.nextafter(np.float32(t), np.float32(d)) for t in GRID for d in (-1, 1)]
  scores = np.array(near + [np.float32(t) for t in GRID] + [0.0, 1.0, 0.5], np.float32).reshape(-1, 1)
  gold = {'y': (np.arange(len(scores)) % 2).astype(np.float32).reshape(-1, 1)}
  back = ev.relaxed(ev.decisions(scores, gold), gold)
  assert back.dtype == np.float32
  for t in GRID:
    assert np.array_equal(back >= t, scores >= t) and np.array_equal(back >= float(t), scores >= float(t))
  assert ev.final(back, gold, back, gold) == ev.final(scores, gold, scores, gold)
  # a split scored under a tuned threshold keeps the comparisons at it and at 0.5 only
  for t in GRID:
    kept = ev.relaxed(ev.decisions(scores, gold, {'threshold': float(t)}), gold)
    for cut in (0.5, float(t)):
      assert np.array_equal(kept >= cut, scores >= cut)
      assert np.array_equal(kept >= np.float64(cut), scores >= np.float64(cut))


@pytest.fixture(scope='module')
def conll_dir(tmp_path_factory):
  return make_data_dir(tmp_path_factory.mktemp('rescore_data'))


def _config(kind, conll_dir):
  if kind == 'ner-fixture':
    config = tagging_fixture_config('conll2003', conll_dir)  # chunk F1, conlleval's and strict
    config.num_epochs = 2
    return config
  config = load_config(kind)
  config.method = 'feedforward'
  return config


def _alter(kind, block, task):
  """The record's predictions with one test decision changed so that it now disagrees with the gold one where it
  agreed (or agrees where it did not): every figure computed from it must move."""
  decisions = predictions.unpack(block)['test']
  gold = task.splits['test']
  key = {'tiny': 'bins', 'tiny_horses': 'masks'}.get(kind, 'tags')
  value = decisions[key].copy()
  if key == 'bins':  # one (example, label): a bin above 0.5's cut if it was below, bin 0 if it was above
    cut = int(np.searchsorted(decisions['cuts'], 0.5, side='right'))
    i, j = np.argwhere(gold['y'] > 0.5)[0]
    value[i, j] = 0 if value[i, j] >= cut else len(decisions['cuts'])
  elif key == 'masks':
    value[0, 0, 0] = ~value[0, 0, 0]
  else:
    real = gold['y'][gold['mask'] > 0]
    value[0] = real[0] if value[0] != real[0] else (real[0] + 1) % 3
  block['test']['decisions'][key] = predictions.encode(value)


@pytest.mark.parametrize('kind', ['tiny', *(pytest.param(k, marks=pytest.mark.e2e)
                                            for k in ('tiny_tagging', 'tiny_horses', 'ner-fixture'))])
def test_a_tiny_run_is_rescored_from_its_record(tmp_path, conll_dir, kind, capsys):
  """Trained and recorded as the reproduce scripts do (implicit_jax.runner with records.save: train_and_evaluate,
  records.stamp, records.write); every figure rescored from the record matches to 1e-6, and one altered test
  decision is a mismatch (exit status 1)."""
  config = _config(kind, conll_dir)
  out = tmp_path / 'run.json'
  runner.run_all([runner.Run('run', config, out, str(tmp_path / 'workdir'))], writer=records.save)
  record = records.load(out)
  assert set(record['predictions']) == {'format', 'dev', 'test'}
  rows = rescore.figures(record)
  names = [name for name, _, _ in rows]
  assert len(rows) >= 2 and any(n.startswith('test_') for n in names) and any(n.startswith('dev_') for n in names)
  for name, recorded, rescored in rows:
    assert recorded != 'not recorded', name
    assert rescore.matches(recorded, rescored, 1e-6), (name, recorded, rescored)
  if kind == 'tiny':  # test decisions kept at 0.5 and the dev-tuned threshold only
    assert ('test decisions kept for', {'threshold': record['threshold']}, {'threshold': record['threshold']}) in rows
  if kind == 'ner-fixture':
    assert {'test_f1', 'test_f1_conlleval', 'test_accuracy'} <= set(names)
  assert rescore.main([str(out)]) == 0
  assert 'MISMATCH' not in capsys.readouterr().out

  altered = json.loads(out.read_text())
  _alter(kind, altered['predictions'], tasks.get_task(config))
  bad = tmp_path / 'altered.json'
  bad.write_text(json.dumps(altered))
  assert rescore.main([str(bad)]) == 1
  assert 'MISMATCH' in capsys.readouterr().out


@pytest.mark.e2e
def test_other_gold_data_is_refused_and_old_records_are_listed(tmp_path, conll_dir, capsys):
  config = tagging_fixture_config('conll2003', conll_dir)
  out = tmp_path / 'run.json'
  runner.run_all([runner.Run('run', config, out, str(tmp_path / 'workdir'))], writer=records.save)
  # the same files with the test split's last sentence gone: the recorded gold digests catch it
  other = make_data_dir(tmp_path / 'other')
  testb = other / 'conll2003' / 'eng.testb'
  testb.write_text(testb.read_text().rstrip('\n').rsplit('\n\n', 1)[0] + '\n')
  assert rescore.main([str(out), f'--data_dir={other}']) == 1
  assert 'differ from the run\'s' in capsys.readouterr().out
  old = json.loads(out.read_text())
  del old['predictions']
  (tmp_path / 'old.json').write_text(json.dumps(old))
  assert rescore.main([str(tmp_path / 'old.json')]) == 1  # nothing could be rescored
  assert 'no predictions' in capsys.readouterr().out
  assert rescore.main([str(out), str(tmp_path / 'old.json')]) == 0


def test_a_fresh_result_without_predictions_is_not_stamped():
  with pytest.raises(ValueError, match='holds no predictions'):
    records.stamp({'task': 'x', 'test_f1': 0.5})


def test_a_record_whose_vectors_file_is_gone_is_rescored(tmp_path, capsys):
  """The word vectors are not read (they set the initial weights and the inputs' vocabulary, not the gold labels):
  a committed ner_fixed record, its embeddings_path pointed at a file that is nowhere, rescores to every figure;
  beside a missing record and corrupt decisions, each one line, the good record is still rescored."""
  root = tagging_data('conll2003')
  record = json.loads(NER_FIXED.read_text())
  assert record['predictions'] and record['config']['model']['embeddings'] == 'glove'
  record['config']['model']['embeddings_path'] = str(tmp_path / 'gone' / 'glove_ner.txt')
  moved = tmp_path / 'moved.json'
  moved.write_text(json.dumps(record))
  assert rescore.main([str(moved), f'--data_dir={root}']) == 0
  out = capsys.readouterr().out
  assert 'MISMATCH' not in out and '=> 20 of 20 figures match' in out
  assert out.splitlines()[-1] == '1 record(s) rescored, 1 matching; 0 without predictions; 0 failing'

  short = json.loads(moved.read_text())  # the test tags of the last sentence's tokens lost
  tags = short['predictions']['test']['decisions']['tags']
  tags.update(predictions.encode(predictions.decode(tags)[:-3]))
  (tmp_path / 'short.json').write_text(json.dumps(short))
  cut = json.loads(moved.read_text())  # the xz stream of the dev tags cut short
  cut['predictions']['dev']['decisions']['tags']['data'] = cut['predictions']['dev']['decisions']['tags']['data'][:40]
  (tmp_path / 'cut.json').write_text(json.dumps(cut))
  bad = [str(tmp_path / name) for name in ('missing.json', 'short.json', 'cut.json')]
  assert rescore.main([*bad, str(moved), f'--data_dir={root}']) == 1
  lines = capsys.readouterr().out.splitlines()
  assert lines[0] == f'{bad[0]}: failed: no such file: {bad[0]}'
  assert lines[1].startswith(f'{bad[1]}: conll2003, feedforward, seed 0, best epoch 9: failed: the recorded test '
                             'decisions do not fit the test split')
  assert lines[2].startswith(f'{bad[2]}: conll2003, feedforward, seed 0, best epoch 9: failed: the recorded '
                             'decisions cannot be decoded')
  assert lines[3].startswith(f'{moved}: ') and lines[-2] == '  => 20 of 20 figures match (tolerance 1e-06)'
  assert lines[-1] == '1 record(s) rescored, 1 matching; 0 without predictions; 3 failing'


def test_a_bad_record_is_one_line_and_exit_status_1(tmp_path, capsys):
  """A missing record and a truncated one (the first half of a committed record: no data is read) each give one
  line naming the record and the cause, no traceback, and exit status 1."""
  missing, truncated = tmp_path / 'missing.json', tmp_path / 'truncated.json'
  text = NER_FIXED.read_text()
  truncated.write_text(text[:len(text) // 2])
  with pytest.raises(json.JSONDecodeError) as invalid:
    json.loads(truncated.read_text())
  expected = {missing: f'{missing}: failed: no such file: {missing}',
              truncated: f'{truncated}: failed: not valid JSON (truncated?): {invalid.value}'}
  for path, line in expected.items():
    assert rescore.main([str(path)]) == 1
    assert capsys.readouterr().out.splitlines() == [
        line, '0 record(s) rescored, 0 matching; 0 without predictions; 1 failing']
  run = subprocess.run([sys.executable, '-m', 'experiments.rescore', str(missing), str(truncated)], cwd=ROOT,
                       capture_output=True, text=True, timeout=300, check=False)
  assert run.returncode == 1 and 'Traceback' not in run.stdout + run.stderr, run.stderr
  assert run.stdout.splitlines() == [*expected.values(),
                                     '0 record(s) rescored, 0 matching; 0 without predictions; 2 failing']


# One committed record per family that keeps predictions, with the data folder it reads (None: the bundled bibtex).
COMMITTED = {
    'multi-label (bibtex, 400 units)': ('docs/baselines/runs/bibtex-seal-dynamic_nce-h400-seed0.json', None),
    'sequence labeling (POS)': ('docs/tagging/runs/pos-implicit-cd-seed1.json', 'twitter_pos'),
    'sequence labeling (NER+)': ('docs/tagging/runs/ner_plus-infnet-plus-stacked-seed2.json', 'conll2003'),
    'segmentation (horses, SEAL protocol)': ('docs/horses/runs_seal/implicit-cd-seed1.json', 'weizmann_horse'),
}


@pytest.mark.parametrize('family', sorted(COMMITTED))
def test_a_committed_record_of_each_family_is_rescored(family, capsys):
  """A committed record of each family that keeps predictions rescores to every figure it holds (the bibtex one
  reads the bundled data; the others skip without ../shared/data)."""
  path, folder = COMMITTED[family]
  args = [str(ROOT / path)] + ([f'--data_dir={tagging_data(folder)}'] if folder else [])
  assert rescore.main(args) == 0
  out = capsys.readouterr().out
  assert 'MISMATCH' not in out and out.splitlines()[-1].startswith('1 record(s) rescored, 1 matching')


def test_json_that_is_not_a_record_is_one_line(tmp_path, capsys):
  """A JSON list, and an object that is no run record: one line each naming the file, exit status 1; records.load
  refuses the list naming it."""
  listed, other = tmp_path / 'list.json', tmp_path / 'other.json'
  listed.write_text('[1, 2]')
  other.write_text('{"name": "not a run"}')
  with pytest.raises(ValueError, match='list.json: not a run record'):
    records.load(listed)
  assert rescore.main([str(listed), str(other)]) == 1
  lines = capsys.readouterr().out.splitlines()
  assert lines[0] == f'{listed}: failed: not a run record (a JSON list, not an object)'
  assert lines[1] == f'{other}: failed: not a run record (an object with neither a task nor a config)'
  assert len(lines) == 3


def test_a_runs_config_is_named_as_such_with_the_record_to_give(tmp_path, capsys):
  """A workdir's config.json given as a record was 'no predictions (made before records kept them)': it is a
  run's config, whose record is the metrics.json beside it once the run has finished."""
  from implicit_jax.engine import config as config_lib  # pylint: disable=import-outside-toplevel
  running, finished = tmp_path / 'running', tmp_path / 'finished'
  for folder in (running, finished):
    folder.mkdir()
    (folder / 'config.json').write_text(json.dumps(config_lib.recorded(load_config('tiny'))))
  (finished / 'metrics.json').write_text('{}')
  assert rescore.main([str(running / 'config.json'), str(finished / 'config.json')]) == 1
  assert capsys.readouterr().out.splitlines() == [
      f"{running / 'config.json'}: failed: a run's config (what the run was given), not a run record: give the run's "
      'metrics.json, its record once it has finished, or a committed one (docs/*/runs/*.json)',
      f"{finished / 'config.json'}: failed: a run's config (what the run was given), not a run record: give "
      f"{finished / 'metrics.json'}, the run's record",
      '0 record(s) rescored, 0 matching; 0 without predictions; 2 failing']


@pytest.mark.e2e
def test_the_command_answers_a_bad_data_dir_and_ctrl_c_in_one_line(tmp_path):
  """experiments/rescore.py speaks through the command lines' one-line wrapper (cli.guarded): a --data_dir that is a
  file was a failure per record naming a path inside it; Ctrl-C was a traceback."""
  not_a_folder = tmp_path / 'data.txt'
  not_a_folder.write_text('x')
  proc = subprocess.run([sys.executable, '-m', 'experiments.rescore', 'docs/tagging/runs/pos-crf-seed0.json',
                         f'--data_dir={not_a_folder}'], cwd=ROOT, capture_output=True, text=True, timeout=300)
  assert (proc.returncode, proc.stdout, proc.stderr.strip()) == (
      1, '', f'error: --data_dir {not_a_folder}: not a folder (the folder holding the datasets\' folders)')
  interrupted = subprocess.run(
      [sys.executable, '-c', 'import signal, sys; sys.argv[1:] = ["docs/tagging/runs/pos-crf-seed0.json"]; '
       'signal.signal(signal.SIGINT, signal.default_int_handler); from experiments import rescore; '
       'rescore.records.load = lambda path: signal.raise_signal(signal.SIGINT); '
       'from implicit_jax.engine import cli; sys.exit(cli.guarded(rescore.main))'],
      cwd=ROOT, capture_output=True, text=True, timeout=300)
  assert (interrupted.returncode, interrupted.stderr.strip()) == (130, 'interrupted')


def test_a_scikit_learn_comparison_record_is_listed_without_predictions(capsys):
  """docs/sklearn_baseline/runs hold compare_sklearn.py's figures, not an engine run: listed as keeping no
  predictions (it was counted failing, 'not a run record', so a sweep over every committed record exited 1)."""
  path = ROOT / 'docs' / 'sklearn_baseline' / 'runs' / 'cal500-seed0.json'
  assert rescore.rescore(path, None, 1e-6) == rescore.NO_PREDICTIONS
  assert 'not rescored: a scikit-learn comparison record' in capsys.readouterr().out
