"""A newcomer's path (docs/design.md, "Where a new thing goes"), walked: a new row of a results table is one entry in
its dataset's config file, which the file's argument then runs and the family's table lists; a new table is its runs
through the runner and a page from their records. (A new method: tests/test_plugins.py trains one from a file of its
own.)"""

import shutil

from unittest import mock

import pytest

from implicit_jax.engine import config as config_lib, rows
from tests.conftest import ROOT, load_config


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


@pytest.mark.e2e
def test_a_new_table_is_its_runs_through_the_runner_and_a_page_from_their_records(tmp_path):
  """A new table: its runs (here two seeds of the tiny config) go through implicit_jax.runner, which writes their
  records with the experiments' writer; the page is made from the records alone. Run again, nothing retrains."""
  from experiments import records  # pylint: disable=import-outside-toplevel
  from implicit_jax import runner  # pylint: disable=import-outside-toplevel

  def config(seed):
    c = load_config('tiny')
    c.seed = seed
    return c
  runs = [runner.Run(f'tiny seed {s}', config(s), tmp_path / 'runs' / f'tiny-seed{s}.json', tmp_path / 'work' / f'{s}')
          for s in (0, 1)]
  done = runner.run_all(runs, writer=records.save)
  assert [o.status for o in done] == ['trained', 'trained']
  # The page: a template (markdown, wrapped as it shows) and a Table saying where its records are and what fills it.
  from experiments import tables  # pylint: disable=import-outside-toplevel
  (tmp_path / 'tiny.md').write_text('# The tiny table\n\nTest example F1 x 100, {spread},\nfrom the runs made by '
                                    '{commands}.\n\n{table}\n')
  table = tables.Table('tiny', str(tmp_path / 'docs' / 'tiny.md'), (str(tmp_path / 'runs' / '*.json'),),
                       lambda groups: {'table': '\n'.join(['| row | test F1 |', '|---|---|', *(
                           f'| {row} | {records.mean_std([r["test_f1"] for r in rs])} ({len(rs)}) |'
                           for row, rs in groups.items())])})
  (tmp_path / 'docs').mkdir()
  with mock.patch.object(tables, 'PAGES', tmp_path):
    tables.build(table)
  lines = (tmp_path / 'docs' / 'tiny.md').read_text().splitlines()
  assert lines[2].startswith('Test example F1 x 100, mean ± sample standard deviation (ddof 1)')
  assert lines[-1].startswith('| tiny | ') and ' ± ' in lines[-1] and lines[-1].endswith('(2) |')
  assert (tmp_path / 'docs' / 'tiny.commands.txt').read_text().count('\n') == 1  # one command made both seeds
  assert [o.status for o in runner.run_all(runs, writer=records.save)] == ['done', 'done']
