"""implicit_jax.ray_runs without a cluster: where a run goes (its CPUs and share of a GPU), the environment its
process gets (JAX's memory share, the driver's code and XLA flags), the refusals of bad options in one line, the
driver's side of run_all on Ray (records written here as runs end, a failure named while the others go on), and
the scripts' flags (tests/test_ray_cluster.py runs real tasks)."""

import argparse
import json
import socket
import subprocess
import sys

import pytest

import experiments
from experiments import records
from implicit_jax import ray_runs, runner
from implicit_jax.engine import train
from tests.conftest import ROOT


def test_a_run_gets_a_whole_gpu_where_the_cluster_has_gpus_and_its_given_share_otherwise():
  assert ray_runs.resources(ray_runs.RayOptions(), cluster_gpus=0) == {'num_cpus': 1.0, 'num_gpus': 0.0}
  assert ray_runs.resources(ray_runs.RayOptions(), cluster_gpus=8) == {'num_cpus': 1.0, 'num_gpus': 1.0}
  assert ray_runs.resources(ray_runs.RayOptions(gpus_per_run=0.25, cpus_per_run=2), cluster_gpus=1) == {
      'num_cpus': 2, 'num_gpus': 0.25}
  assert ray_runs.resources(ray_runs.RayOptions(gpus_per_run=0), cluster_gpus=1)['num_gpus'] == 0


@pytest.mark.parametrize('share', [0.0, 0.25, 1.0, 2.0])
def test_a_gpu_share_is_a_fraction_of_one_device_or_whole_devices(share):
  assert ray_runs.check_gpus(share) == share


@pytest.mark.parametrize('share', [-0.5, 1.5, float('nan'), float('inf')])
def test_a_gpu_share_ray_cannot_place_is_refused(share):
  with pytest.raises(ValueError, match='GPUs a run: give a fraction of one GPU'):
    ray_runs.RayOptions(gpus_per_run=share)


@pytest.mark.parametrize('share', [0.0, -1.0, float('nan')])
def test_a_run_needs_some_cpu(share):
  with pytest.raises(ValueError, match='CPUs a run: give a number above 0'):
    ray_runs.RayOptions(cpus_per_run=share)


def test_runs_sharing_a_gpu_each_get_their_share_of_jax_s_preallocation():
  """Four runs a GPU: each process preallocates a quarter of JAX's default 75%, so that the four start on one
  device; a whole-GPU run keeps JAX's default; the driver's own memory setting is passed on instead."""
  env = ray_runs.run_env(0.25, 1, {})
  assert env['XLA_PYTHON_CLIENT_MEM_FRACTION'] == '0.1875'
  assert 4 * float(env['XLA_PYTHON_CLIENT_MEM_FRACTION']) <= 0.75
  assert 'XLA_PYTHON_CLIENT_MEM_FRACTION' not in ray_runs.run_env(1, 1, {})
  assert 'XLA_PYTHON_CLIENT_MEM_FRACTION' not in ray_runs.run_env(0, 0, {})
  own = ray_runs.run_env(0.25, 1, {'XLA_PYTHON_CLIENT_PREALLOCATE': 'false'})
  assert own['XLA_PYTHON_CLIENT_PREALLOCATE'] == 'false' and 'XLA_PYTHON_CLIENT_MEM_FRACTION' not in own


def test_a_run_computes_with_the_driver_s_code_and_xla_flags_and_off_the_gpus_it_was_not_given():
  env = ray_runs.run_env(0, 0, {'XLA_FLAGS': '--xla_x', 'JAX_ENABLE_X64': '1', 'PYTHONPATH': '/elsewhere',
                                'HOME': '/root'})
  assert env['PYTHONPATH'].split(':') == [str(ROOT), '/elsewhere']  # this checkout's package first
  assert env['XLA_FLAGS'] == '--xla_x' and env['JAX_ENABLE_X64'] == '1' and 'HOME' not in env
  assert 'JAX_PLATFORMS' not in env  # a CPU cluster: nothing to keep off
  assert ray_runs.run_env(0, 2, {})['JAX_PLATFORMS'] == 'cpu'
  assert ray_runs.run_env(0, 2, {'JAX_PLATFORMS': 'cuda,cpu'})['JAX_PLATFORMS'] == 'cuda,cpu'
  assert 'JAX_PLATFORMS' not in ray_runs.run_env(0.5, 2, {})


def test_an_address_where_nothing_listens_is_refused_at_once_naming_the_flag():
  with socket.socket() as s:  # a port just free: nothing listens there
    s.bind(('127.0.0.1', 0))
    port = s.getsockname()[1]
  with pytest.raises(ConnectionError, match=rf'--address=127.0.0.1:{port}: no Ray cluster answers there'):
    ray_runs.reach(f'127.0.0.1:{port}', seconds=2)
  with pytest.raises(ValueError, match='--address=nowhere: give a Ray cluster'):
    ray_runs.reach('nowhere')
  with socket.socket() as s:  # something listening: passed on to Ray
    s.bind(('127.0.0.1', 0))
    s.listen()
    ray_runs.reach(f'127.0.0.1:{s.getsockname()[1]}', seconds=2)
  ray_runs.reach('auto')


def _fake_ray(monkeypatch, fail=(), seen=None):
  """ray_runs.train stood in for: each job 'trained' here, in reverse order (the last submitted ends first), the
  runs named in ``fail`` raising their own error; ``seen`` gets the jobs."""
  def fake(jobs, options, train_one, provenance):  # train_one: runner.train, for the Ray worker
    if seen is not None:
      seen.extend(jobs)
    for index, run, config, fresh in reversed(jobs):
      if run.name in fail:
        yield index, None, 0.0, FloatingPointError(f'{run.name} diverged')
      else:
        yield index, {'seed': config['seed'], 'fresh': fresh, 'made': provenance()['made']}, 3.0, None
  monkeypatch.setattr(ray_runs, 'train', fake)


def test_on_ray_the_driver_plans_every_run_then_writes_each_record_as_its_run_ends(tmp_path, monkeypatch):
  seen, written = [], []
  _fake_ray(monkeypatch, seen=seen)
  (tmp_path / 'done.json').write_text('{"kept": 1}')

  def writer(path, result):
    written.append(path.name)
    runner.write_json(path, result)
  runs = [runner.Run('done', lambda: pytest.fail('built'), tmp_path / 'done.json', str(tmp_path / 'w0')),
          *(runner.Run(f's{s}', {'seed': s}, tmp_path / f's{s}.json', str(tmp_path / f'w{s}')) for s in (1, 2))]
  outcomes = runner.run_all(runs, writer=writer, ray=ray_runs.RayOptions(), provenance=lambda: {'made': 'there'})
  assert [o.status for o in outcomes] == ['done', 'trained', 'trained']  # in the runs' order
  assert [(i, r.name, c, f) for i, r, c, f in seen] == [(1, 's1', {'seed': 1}, False), (2, 's2', {'seed': 2}, False)]
  assert written == ['s2.json', 's1.json']  # as they ended
  assert json.loads((tmp_path / 's1.json').read_text()) == {'seed': 1, 'fresh': False, 'made': 'there'}
  assert outcomes[1].seconds == 3.0


def test_on_ray_nothing_starts_when_every_record_is_there_and_ctrl_c_cancels_the_runs_still_going(tmp_path,
                                                                                                  monkeypatch, capsys):
  def never(*_):
    raise AssertionError('Ray was started for runs that were all done')
  monkeypatch.setattr(ray_runs, 'train', never)
  (tmp_path / 'a.json').write_text('{}')
  done = runner.run_all([runner.Run('a', None, tmp_path / 'a.json', str(tmp_path / 'w'))], ray=ray_runs.RayOptions())
  assert [o.status for o in done] == ['done']

  closed = []

  def two_runs(jobs, options, train_one, provenance):
    try:
      for index, _, config, _ in jobs:
        yield index, {'seed': config['seed']}, 1.0, None
    finally:
      closed.append(True)  # where ray_runs.train cancels what is still going

  def interrupted(path, result):
    raise KeyboardInterrupt
  monkeypatch.setattr(ray_runs, 'train', two_runs)
  runs = [runner.Run(f's{s}', {'seed': s}, tmp_path / f's{s}.json', str(tmp_path / f'w{s}')) for s in range(2)]
  try:
    runner.run_all(runs, writer=interrupted, ray=ray_runs.RayOptions())
  except KeyboardInterrupt:
    assert closed == [True]  # already, while the traceback (which holds the runner's frame) is alive
  else:
    pytest.fail('Ctrl-C was not raised')
  err = capsys.readouterr().err
  assert 'run s0 cut short' in err and 'run s1 cut short' in err


def test_on_ray_a_failed_run_is_named_the_others_are_written_and_its_error_raised_after(tmp_path, monkeypatch,
                                                                                          capsys):
  _fake_ray(monkeypatch, fail=('s0',))
  runs = [runner.Run(f's{s}', {'seed': s}, tmp_path / f's{s}.json', str(tmp_path / f'w{s}')) for s in range(3)]
  with pytest.raises(FloatingPointError, match='s0 diverged') as error:
    runner.run_all(runs, ray=ray_runs.RayOptions(), provenance=lambda: {'made': 'there'})
  assert 'run s0 failed (FloatingPointError)' in capsys.readouterr().err
  assert any('workdir' in note and 's0' in note for note in error.value.__notes__)
  assert [p.name for p in sorted(tmp_path.glob('*.json'))] == ['s1.json', 's2.json']


def test_on_ray_verify_starts_each_run_fresh_and_runs_sharing_a_workdir_are_refused(tmp_path, monkeypatch):
  seen = []
  _fake_ray(monkeypatch, seen=seen)
  record = tmp_path / 'x.json'
  record.write_text(json.dumps({'seed': 4}))
  [outcome] = runner.run_all([runner.Run('x', None, record, str(tmp_path / 'w'))], verify=('seed',),
                             recipe=lambda path: json.loads(path.read_text()), ray=ray_runs.RayOptions(),
                             provenance=lambda: {'made': 'there'})
  assert seen[0][3] is True and outcome.values == {'seed': (4, 4)}
  runs = [runner.Run(n, {'seed': 0}, tmp_path / f'{n}.json', str(tmp_path / 'same')) for n in 'ab']
  with pytest.raises(ValueError, match="runs 'a' and 'b' share the workdir"):
    runner.run_all(runs, ray=ray_runs.RayOptions())


def test_provenance_is_added_where_the_run_trained_and_the_record_keeps_its_place_for_it(monkeypatch):
  """A record stamped from a worker's provenance has the worker's device and machine, in the fields' usual order."""
  monkeypatch.setattr(train, 'train_and_evaluate', lambda config, workdir: {'predictions': {'test': 'p'}, 'x': 1})
  there = {'device': 'gpu: H200', 'machine': 'elsewhere, 16 cores', 'cpu': {'model': 'elsewhere', 'vector': ['avx2']},
           'packages': {'jax': '0'}}
  result = runner.train(None, 'unused', provenance=lambda: dict(there))
  stamped, here = records.stamp(dict(result)), records.stamp({'predictions': {'test': 'p'}, 'x': 1})
  assert list(stamped) == list(here) == ['predictions', 'x', 'command', 'date', 'device', 'machine', 'cpu', 'packages']
  assert {k: stamped[k] for k in there} == there and here['device'].startswith('cpu')


def _parse(argv, workers=False):
  parser = argparse.ArgumentParser()
  if workers:
    parser.add_argument('--workers', type=experiments.runs_at_once, default=1)
  experiments.add_runner_flags(parser)
  args = parser.parse_args(argv)
  return experiments.ray_options(args, workers=getattr(args, 'workers', 1))


def test_the_scripts_runner_flags_become_the_runner_s_ray_option():
  assert _parse([]) is None and _parse(['--workers=1'], workers=True) is None
  assert _parse(['--ray']) == ray_runs.RayOptions()
  assert _parse(['--address=head:6379']) == ray_runs.RayOptions(address='head:6379')
  assert _parse(['--gpus_per_run=0.25', '--cpus_per_run=2']) == ray_runs.RayOptions(gpus_per_run=0.25,
                                                                                   cpus_per_run=2)
  cores = __import__('os').cpu_count()
  assert _parse(['--workers=4'], workers=True) == ray_runs.RayOptions(cpus_per_run=cores / 4)
  with pytest.raises(ValueError, match='--workers=2 makes runs at once on this machine'):
    _parse(['--workers=2', '--cpus_per_run=1'], workers=True)


@pytest.mark.parametrize('argv, flag, says', [
    (['--gpus_per_run=1.5'], '--gpus_per_run', 'give a fraction of one GPU'),
    (['--gpus_per_run=half'], '--gpus_per_run', "a number, got 'half'"),
    (['--cpus_per_run=0'], '--cpus_per_run', 'give a number above 0'),
    (['--workers=0'], '--workers', 'a count of runs at once'),
])
def test_a_bad_runner_flag_is_one_line_naming_it(argv, flag, says, capsys):
  with pytest.raises(SystemExit) as exit_:
    _parse(argv, workers=True)
  err = capsys.readouterr().err.strip().splitlines()[-1]
  assert exit_.value.code == 2 and f'argument {flag}' in err and says in err


@pytest.mark.parametrize('argv, flag', [(['--ray'], '--ray'), (['--address=h:1'], '--address'),
                                        (['--gpus_per_run=0.5'], '--gpus_per_run'), (['--workers=2'], '--workers')])
def test_asking_for_ray_where_it_is_not_installed_names_the_flag_and_the_extra(argv, flag, monkeypatch, capsys):
  monkeypatch.setattr(ray_runs, 'installed', lambda: False)
  with pytest.raises(SystemExit) as exit_:
    _parse(argv, workers=True)
  err = capsys.readouterr().err.strip().splitlines()[-1]
  assert exit_.value.code == 2 and f'argument {flag}' in err and "not installed here: pip install -e '.[scale]'" in err


def test_a_script_asked_for_ray_without_it_says_so_in_one_line():
  """The check of a script's own process: Ray made unimportable there, ``--ray`` is refused before any work."""
  code = ("import runpy, sys; sys.modules['ray'] = None; sys.argv = ['sweep', '--sweep=bibtex-cd', '--ray']; "
          "runpy.run_module('experiments.sweep', run_name='__main__')")
  done = subprocess.run([sys.executable, '-c', code], cwd=ROOT, capture_output=True, text=True, timeout=120,
                        check=False)
  lines = done.stderr.strip().splitlines()
  assert done.returncode == 2 and 'Traceback' not in done.stderr
  assert 'argument --ray: runs on Ray, which is not installed here' in lines[-1] and '.[scale]' in lines[-1]


def test_a_script_given_an_address_where_no_cluster_answers_ends_in_one_line_naming_it():
  if not ray_runs.installed():
    pytest.skip('Ray is not installed (the extra .[scale]): a script asked for it is refused before (above)')
  from experiments import sweep  # pylint: disable=import-outside-toplevel
  with socket.socket() as s:
    s.bind(('127.0.0.1', 0))
    port = s.getsockname()[1]
  variant = next(iter(sweep.SWEEPS['bibtex-cd'][1]))
  done = subprocess.run([sys.executable, '-m', 'experiments.sweep', '--sweep=bibtex-cd', f'--only={variant}',
                         '--seeds=97', f'--address=127.0.0.1:{port}'], cwd=ROOT, capture_output=True, text=True,
                        timeout=120, check=False)
  assert done.returncode == 1 and 'Traceback' not in done.stderr, done.stderr[-2000:]
  assert done.stderr.strip().splitlines() == [
      f'error: --address=127.0.0.1:{port}: no Ray cluster answers there (Connection refused); start one (ray start '
      '--head) or give its address, or leave --address out to run on this machine']
  assert not (ROOT / 'docs' / 'sweeps' / 'bibtex-cd' / f'{variant}-seed97.json').exists()


def test_each_script_s_run_config_travels_to_a_worker_as_it_is():
  """The driver builds a run's config (its script's closure stays here) and Ray pickles the ConfigDict: it
  arrives equal, field for field, for a run of every script that makes runs."""
  cloudpickle = pytest.importorskip('ray.cloudpickle', reason='Ray is not installed (the extra .[scale])')
  # pylint: disable-next=import-outside-toplevel
  from experiments import (compare_methods, custom_defaults, reproduce_cora, reproduce_horses, reproduce_mlc,
                           reproduce_tagging, sweep)
  args = argparse.Namespace(data_dir='DATA', protocol='official', epochs=3, workdir='/tmp/w', scale='half',
                            verify=False)
  runs = [reproduce_mlc.run_of('bibtex', 'implicit-cd', 1, args),
          reproduce_tagging.run_of('pos', 'implicit-cd', 1, args), reproduce_cora.run_of('implicit-cd', 10, 1, args),
          reproduce_horses.run_of('implicit-cd', 1, args),
          compare_methods.run_of('bibtex', 'dvn', 1, args),
          sweep.run_of('bibtex-cd', next(iter(sweep.SWEEPS['bibtex-cd'][1])), 1, args),
          custom_defaults.run_of('bibtex', next(iter(custom_defaults.VARIANTS)), 1, 80, 'DATA')]
  for run in runs:
    config = run.build()
    arrived = cloudpickle.loads(cloudpickle.dumps(config))
    assert arrived.to_dict() == config.to_dict() and arrived.seed == 1, run.name
