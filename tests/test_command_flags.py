"""Every flag of every command is checked before any work: a typo in a list- or name-valued flag of a script of
experiments/ or benchmarks/, or of a command of implicit_jax, is refused by the flag parser (status 2, one line
naming the flag), not run on (a typo in a list of datasets ran nothing and exited 0) nor ended in a traceback
(``int('x')``).

The argparse scripts run in one child process (``DRIVER``: each script's ``__main__`` in turn, with its own
argv), so that the imports are paid once; a script that does not refuse is stopped after ``PATIENCE`` seconds, and
its data folder (``--data_dir``, ``$IMPLICIT_JAX_DATA_DIR``) or ``--workdir`` is one that does not exist, so that
what it starts fails early. The absl
commands (``evaluate``, ``predict``) define the same flag names, so each runs in a process of its own.
"""

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT

NOWHERE = 'no/such/folder'
NO_DATA = f'--data_dir={NOWHERE}'
# (module, arguments, the flag its refusal names); every value is a typo of the kind the scripts took.
SCRIPTS = [
    ('experiments.ablation_mlc', [NO_DATA, '--datasets=genbas'], '--datasets'),
    ('experiments.ablation_mlc', [NO_DATA, '--rows=nonesuch', '--table_only'], '--rows'),
    ('experiments.ablation_mlc', [NO_DATA, '--widths=15O'], '--widths'),
    ('experiments.ablation_mlc', [NO_DATA, '--seeds=x'], '--seeds'),
    ('experiments.compare_methods', [NO_DATA, '--datasets=genbas'], '--datasets'),
    ('experiments.compare_methods', [NO_DATA, '--systems=mbcee', '--table_only'], '--systems'),
    ('experiments.compare_methods', [NO_DATA, '--seeds=x'], '--seeds'),
    ('experiments.compare_sklearn', [NO_DATA, '--datasets=genbas'], '--datasets'),
    ('experiments.compare_sklearn', [NO_DATA, '--seeds=x'], '--seeds'),
    ('experiments.custom_defaults', ['--datasets=genbas'], '--datasets'),
    ('experiments.custom_defaults', ['--workers=two'], '--workers'),
    ('experiments.empty_f1', [NO_DATA, '--seeds=x'], '--seeds'),
    ('experiments.energy_analysis', [f'--workdir={NOWHERE}', '--split=deev'], '--split'),
    ('experiments.tagging_hessian', [f'--workdir={NOWHERE}', '--split=deev'], '--split'),
    ('experiments.reproduce_cora', ['--systems=nonesuch'], '--systems'),
    ('experiments.reproduce_cora', ['--sizes=x'], '--sizes'),
    ('experiments.reproduce_cora', ['--draws=x'], '--draws'),
    ('experiments.reproduce_horses', ['--seeds=x'], '--seeds'),
    ('experiments.reproduce_horses', ['--systems=nonesuch', '--table_only'], '--systems'),
    ('experiments.reproduce_mlc', [NO_DATA, '--datasets=genbas'], '--datasets'),
    ('experiments.reproduce_tagging', ['--seeds=x'], '--seeds'),
    ('experiments.reproduce_tagging', ['--systems=nonesuch', '--table_only'], '--systems'),
    ('experiments.reproduce_tagging', ['--sweep=pos-cd', '--only=nonesuch'], '--only'),
    ('experiments.sweep', ['--sweep=bibtex-cd', '--seeds=x'], '--seeds'),
    ('experiments.sweep', ['--sweep=bibtex-cd', '--only=nonesuch'], '--only'),
    ('experiments.sweep', ['--sweep=bibtex-cd', '--gpus_per_run=1.5'], '--gpus_per_run'),
    ('experiments.reproduce_mlc', [NO_DATA, '--cpus_per_run=0'], '--cpus_per_run'),
    ('experiments.stationarity_mlc', [f'--workdir={NOWHERE}', '--steps=x'], '--steps'),
    ('experiments.tradeoff_figure', ['--families=nonesuch'], '--families'),
    ('experiments.claims', ['--seed=x'], '--seed'),
    ('benchmarks.cost_to_dev', ['--pairs=nonesuch'], '--pairs'),
    ('benchmarks.implicit_cost', ['--task=mlc', '--rivals=nonesuch'], '--rivals'),
    ('benchmarks.tagging_throughput', ['--methods=nonesuch'], '--methods'),
    ('benchmarks.unrolled', ['--steps=x'], '--steps'),
    ('benchmarks.main_job', ['--baseline=nonesuch'], '--baseline'),
    ('benchmarks.main_job', ['--config=configs/bibtx.py'], '--config'),
]
PATIENCE = 20

DRIVER = '''
import contextlib, io, json, runpy, signal, sys
class Ran(Exception):
  pass
def ran(*_):
  raise Ran()
signal.signal(signal.SIGALRM, ran)
out = []
for module, args in json.load(sys.stdin):
  sys.argv, err, code = [module, *args], io.StringIO(), None
  signal.alarm(PATIENCE)
  try:
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
      runpy.run_module(module, run_name='__main__', alter_sys=True)
  except SystemExit as e:
    code = e.code if isinstance(e.code, int) else 1
  except Ran:
    code = 'still running after PATIENCE s'
  except BaseException as e:
    code = type(e).__name__
  finally:
    signal.alarm(0)
  out.append((code, err.getvalue()))
print(json.dumps(out))
'''.replace('PATIENCE', str(PATIENCE))


@pytest.fixture(scope='module')
def refusals():
  """``(exit status, stderr)`` of each of ``SCRIPTS``, by its index."""
  env = dict(os.environ, JAX_PLATFORMS='cpu', IMPLICIT_JAX_DATA_DIR=NOWHERE)
  done = subprocess.run([sys.executable, '-c', DRIVER], input=json.dumps([(m, a) for m, a, _ in SCRIPTS]), cwd=ROOT,
                        env=env, capture_output=True, text=True, timeout=60 + PATIENCE * len(SCRIPTS))
  assert done.returncode == 0, done.stderr[-3000:]
  return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize('index', range(len(SCRIPTS)), ids=[f'{m.split(".")[1]} {a[-1]}' for m, a, _ in SCRIPTS])
def test_a_typo_in_a_list_or_name_flag_is_refused_before_any_work(refusals, index):
  module, _, flag = SCRIPTS[index]
  code, err = refusals[index]
  last = err.strip().splitlines()[-1] if err.strip() else ''
  assert code == 2, (module, code, err[-2000:])
  assert f'error: argument {flag}: ' in last or f'error: {flag}: ' in last, (module, last)


@pytest.mark.parametrize('module,args,named', [
    ('evaluate', [f'--workdir={NOWHERE}', '--split=deev'], 'error: flag --split=deev: value should be one of'),
    ('predict', [f'--workdir={NOWHERE}', '--input=x.npy', '--threshold=O.5'],
     'error: flag --threshold=O.5: --threshold: "tuned" or a number in (0, 1)'),
])
def test_a_typo_in_a_flag_of_evaluate_or_predict_is_refused_before_the_run_is_read(module, args, named):
  done = subprocess.run([sys.executable, '-m', f'implicit_jax.{module}', *args], cwd=ROOT, capture_output=True,
                        text=True, timeout=120, env=dict(os.environ, JAX_PLATFORMS='cpu'))
  assert done.returncode == 2, done.stderr[-2000:]
  assert done.stderr.splitlines()[0].startswith(named), done.stderr
