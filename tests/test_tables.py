"""experiments/tables.py: every results page, its command list and its blocks are what the table builder makes of
the committed records, byte for byte (the page's date set to the committed one), so that a change to a family's
description or to the records that moves a page shows here before it lands."""

from __future__ import annotations

import datetime
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
from experiments import records, tables  # noqa: E402  pylint: disable=wrong-import-position

DATA = ROOT.parent / 'shared' / 'data'


def _block(path: Path, name: str) -> str:
  text = path.read_text(encoding='utf-8')
  return text.split(f'<!-- results:{name} -->\n', 1)[1].split(f'\n<!-- /results:{name} -->', 1)[0]


@pytest.mark.e2e
@pytest.mark.parametrize('name', list(tables.tables()))
def test_a_page_is_what_its_table_makes_of_the_committed_records(name, monkeypatch):
  table = tables.tables()[name]
  page = ROOT / table.page
  committed = page.read_text(encoding='utf-8')
  when = re.search(r'\bon (\d{4})-(\d{2})-(\d{2})\b', committed)
  if when:  # the page says when it was rebuilt: render it as of that day

    class Day(datetime.date):
      @classmethod
      def today(cls):
        return cls(*map(int, when.groups()))
    monkeypatch.setattr(tables.datetime, 'date', Day)
  groups = table.load()
  text, fields = table.text(groups, write=False)
  assert records.wrap(text) == committed
  for part, part_groups in ((table, groups), *((part, part.load()) for part in table.parts)):  # parts: docs/horses.md
    listed = records.commands_path(page, part.section).read_text(encoding='utf-8').splitlines()
    assert records.command_list(r.get('command') for rs in part_groups.values() for r in rs) == listed, part.name
  for (path, block), body in (table.blocks(groups, fields) if table.blocks else {}).items():
    assert records.wrap(body) == _block(ROOT / path, block), f'{path}: block {block}'


def test_an_unknown_page_is_refused_naming_the_choices():
  done = subprocess.run([sys.executable, '-m', 'experiments.tables', 'mlc_reslts'], cwd=ROOT, capture_output=True,
                        text=True, check=False)
  assert done.returncode == 2 and "unknown page 'mlc_reslts'" in done.stderr and 'mlc' in done.stderr


def test_a_template_field_the_family_does_not_fill_is_named(tmp_path, monkeypatch):
  monkeypatch.setattr(tables, 'PAGES', tmp_path)
  (tmp_path / 'page.md').write_text('# A page\n\nMade on {date} from\n{commands}; {missing}.\n')
  table = tables.Table('t', 'docs/page.md', ('docs/mlc/runs/bibtex-mbce-seed0.json',), lambda groups: {})
  with pytest.raises(ValueError, match=r'page.md: \{missing\} is not one of the fields of page .t.'):
    table.text(table.load(), write=False)
