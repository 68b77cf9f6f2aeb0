"""The reproduction script's bookkeeping: which system a run file is, and the command list of its table."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from scripts import reproduce_mlc  # pylint: disable=wrong-import-position


def _run(method, hidden, solver='normal_cg', loss='cd'):
  return {'config': {'method': method, 'model': {'inference_hidden': hidden},
                     'implicit': {'primary_loss': loss, 'solver': {'name': solver}}}}


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


def test_paired_uses_only_shared_seeds():
  a = [{'seed': 0, 'f': 0.5}, {'seed': 1, 'f': 0.25}, {'seed': 2, 'f': 0.75}]
  b = [{'seed': 2, 'f': 0.5}, {'seed': 0, 'f': 0.25}]
  assert reproduce_mlc.paired(a, b, 'f') == ([0, 2], [0.25, 0.25])
  assert reproduce_mlc.paired(a, [], 'f') == ([], [])


def test_run_name_keeps_official_names_and_separates_protocols():
  assert reproduce_mlc.run_name('bibtex', 'implicit-cd', 'official') == 'bibtex-implicit-cd'
  assert reproduce_mlc.run_name('bibtex', 'implicit-cd', 'resplit') == 'bibtex-resplit-implicit-cd'
  # compare_methods' baseline names (with spaces) go through the same rule
  assert reproduce_mlc.run_name('bibtex', 'seal-static nce', 'resplit') == 'bibtex-resplit-seal-static_nce'
