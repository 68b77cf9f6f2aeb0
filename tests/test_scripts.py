"""The reproduction script's bookkeeping: which system a run file is, and the command list of its table."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from scripts import reproduce_mlc  # pylint: disable=wrong-import-position


def _run(method, hidden, solver='normal_cg', loss='cd'):
  return {'config': {'method': method, 'model': {'inference_hidden': hidden},
                     'solver': {'name': solver}, 'implicit': {'primary_loss': loss}}}


def test_system_of_names_width_and_solver():
  assert reproduce_mlc.system_of(_run('feedforward', [150, 150])) == 'mbce'
  assert reproduce_mlc.system_of(_run('feedforward', [400, 400])) == 'mbce-h400'
  assert reproduce_mlc.system_of(_run('implicit', [400, 400])) == 'implicit-cd-h400'
  assert reproduce_mlc.system_of(_run('implicit', [150, 150], solver='minres')) == 'implicit-cd-minres'
  assert reproduce_mlc.system_of(_run('implicit', [150, 150], loss='ssvm')) == 'implicit-ssvm'
  # every name system_of can return for these is a key of SYSTEMS, so --systems can rerun it
  for name in ('mbce-h400', 'implicit-cd-h400', 'implicit-cd-minres'):
    assert name in reproduce_mlc.SYSTEMS


def test_merged_commands_joins_seeds_only():
  merged = reproduce_mlc.merged_commands([
      'python s.py --datasets=bibtex --seeds=2', 'python s.py --datasets=bibtex --seeds=0',
      'python s.py --datasets=bibtex --seeds=1,10', 'python s.py --datasets=delicious --seeds=0',
      'python s.py --table_only'])
  assert merged == ['python s.py --datasets=bibtex --seeds=0,1,2,10', 'python s.py --datasets=delicious --seeds=0',
                    'python s.py --table_only']
