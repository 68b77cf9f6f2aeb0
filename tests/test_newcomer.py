"""A newcomer's path (docs/design.md, "Where a new thing goes"), walked: a new row of a results table is one entry in
its dataset's config file, which the file's argument then runs and the family's table lists."""

import shutil

from implicit_jax.engine import config as config_lib, rows
from tests.conftest import ROOT


def test_a_new_row_is_one_entry_in_the_dataset_config_file(tmp_path):
  configs = tmp_path / 'configs'
  shutil.copytree(ROOT / 'configs', configs, ignore=shutil.ignore_patterns('__pycache__'))
  bibtex = configs / 'bibtex.py'
  # The row: implicit CD with a smaller inner rate, one line in the file's table of multi-label rows.
  text = bibtex.read_text()
  assert text.count('\nSYSTEMS = {\n') == 1
  bibtex.write_text(text.replace('\nSYSTEMS = {\n', "\nSYSTEMS = {\n    'implicit-cd-slow': {**_CD, **NORMAL_CG, "
                                 "'implicit.inner_optimizer.learning_rate': 1e-4},\n"))
  config = config_lib.from_file(f'{bibtex}:implicit-cd-slow')
  assert config.implicit.inner_optimizer.learning_rate == 1e-4
  assert config.implicit.solver.name == 'normal_cg' and config.num_epochs == 40  # the rest is the row it extends
  # The other multi-label configs take it too (their rows are bibtex.py's), at their own epoch budget.
  delicious = config_lib.from_file(f'{configs / "delicious.py"}:implicit-cd-slow')
  assert delicious.implicit.inner_optimizer.learning_rate == 1e-4 and delicious.num_epochs == 20
  # The family's table lists the rows the config file holds, in its order (experiments/mlc.py reads them so).
  assert list(rows.load_module(bibtex).SYSTEMS)[0] == 'implicit-cd-slow'
  # The checkout's own files are untouched, and there the row does not exist.
  try:
    config_lib.from_file(f'{ROOT / "configs" / "bibtex.py"}:implicit-cd-slow')
  except ValueError as e:
    assert "unknown row 'implicit-cd-slow'" in str(e)
  else:
    raise AssertionError('the checkout has no such row')
