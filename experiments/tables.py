r"""The table builder: every results page of docs/, its command list and the blocks it copies into docs/results.md
and README.md, from the committed run records and a family's ``Table``. A template (``pages/<name>.md``) is markdown
as the page shows it, its paragraphs wrapped anywhere, ``{name}`` a field, ``{{`` a brace; a line that is one field
alone stays a block of its own.

  python -m experiments.tables                 # every page, from the committed records
  python -m experiments.tables mlc baselines   # some of them (the names: --list)
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import glob
import importlib
import sys
from pathlib import Path
from typing import Any, Callable

from experiments import records, summary

ROOT = records.ROOT
PAGES = Path(__file__).resolve().parent / 'pages'
# In build order: a page that reads another's records comes after it (README's summary takes the baselines' rows from
# docs/baselines/runs; the claims ledger reads every family's).
MODULES = ('reproduce_mlc', 'ablation_mlc', 'compare_methods', 'compare_sklearn', 'custom_defaults', 'sweep',
           'reproduce_tagging', 'reproduce_cora', 'reproduce_horses', 'tradeoff_figure', 'rivals', 'claims')

Groups = dict  # {row key: [records, in file order]}


def stem(path: Path, record: dict) -> str:  # pylint: disable=unused-argument
  """The default row key: the record's file name without its seed (``bibtex-mbce-seed0.json``: ``bibtex-mbce``)."""
  return path.stem.rsplit('-seed', 1)[0]


def variant_key(variants) -> Callable[[Path, dict], Any]:
  """A sweep page's ``key``: a record's variant (``stem``), None for a record of no variant in ``variants``."""
  return lambda path, record: stem(path, record) if stem(path, record) in variants else None


@dataclasses.dataclass(frozen=True)
class Table:
  """One page. ``fields`` fills the template from the records, beside ``date``, ``command`` (what rebuilds the page),
  ``commands`` (the command list's link), ``spread`` and ``recipe_note``; ``blocks`` gets them with the filled page,
  ``page``, and its ``parts``' fields by name. A part is a later section of the page, from its own records, template
  and command list (``section``), left out without records."""
  name: str  # what `python -m experiments.tables NAME` builds
  page: str  # relative to the repository
  runs: tuple[str, ...]  # globs of its records, relative to the repository (or absolute)
  fields: Callable[[Groups], dict]
  command: str = ''
  key: Callable[[Path, dict], Any] = stem  # a record's row; None leaves the record out of the page
  template: str = ''  # under pages/ (default: the page's file name)
  section: str = ''
  blocks: Callable[[Groups, dict], dict] | None = None  # {(file, block name): body}
  summary: tuple[str, Callable[[Groups], list[str]]] | None = None  # (family, its README summary rows)
  after: Callable[[Groups], None] | None = None  # figures drawn from the same records
  required: bool = True  # a page without records: refused, or left as it is
  parts: tuple[Table, ...] = ()

  def load(self) -> Groups:
    """The records of ``runs``, grouped by ``key``."""
    groups = {}
    for path in sorted({Path(p) for pattern in self.runs for p in glob.glob(str(ROOT / pattern))}):
      record = records.load(path)
      key = self.key(path, record)
      if key is not None:
        groups.setdefault(key, []).append(record)
    return groups

  def text(self, groups: Groups, write: bool = True) -> tuple[str, dict]:
    """The page's text (its parts' after its own) and its fields; ``write``: the command lists beside it too."""
    commands = (r.get('command') for rs in groups.values() for r in rs)
    fields = {'date': datetime.date.today(), 'command': self.command, 'spread': records.spread(),
              'recipe_note': records.RECIPE_NOTE,
              'commands': records.write_commands(ROOT / self.page, commands, self.section, write=write)}
    fields.update(self.fields(groups))
    template = PAGES / (self.template or Path(self.page).name)
    try:
      fields['page'] = text = render(template.read_text(encoding='utf-8'), fields)
    except KeyError as missing:  # a field the template names and the family does not fill (a typo, on either side)
      raise ValueError(f'{template.name}: {{{missing.args[0]}}} is not one of the fields of page {self.name!r} '
                       f'({", ".join(sorted(fields))})') from None
    fields['parts'] = {}
    for part in self.parts:
      part_groups = part.load()
      if part_groups:
        part_text, fields['parts'][part.name] = part.text(part_groups, write)
        text += '\n' + part_text
    return text, fields


def build(table: Table, write: bool = True) -> str:
  """Writes ``table``'s page, command list, blocks and README summary rows from its records; returns the page."""
  groups = table.load()
  if not groups:
    if table.required:
      raise SystemExit(f'{table.name}: no run records match {", ".join(table.runs)}: make its runs first')
    return ''
  text, fields = table.text(groups, write)
  if write:
    records.write_page(ROOT / table.page, text)
    for (path, name), body in (table.blocks(groups, fields) if table.blocks else {}).items():
      records.write_block(ROOT / path, name, body)
    if table.summary:
      summary.update(ROOT / 'README.md', table.summary[0], table.summary[1](groups))
    if table.after:
      table.after(groups)
  return text


def page(template: str, fields: dict, path=None) -> str:
  """pages/``template`` filled with ``fields`` (``render``), written to ``path`` (a page of docs/) unless None: a page
  that is not a ``Table``'s (an analysis of a trained run)."""
  text = render((PAGES / template).read_text(encoding='utf-8'), fields)
  if path is not None:
    records.write_page(path, text)
  return text


def render(template: str, fields: dict) -> str:
  """``template`` with its paragraphs joined into one line each (``records.unwrap``) and its ``{fields}`` filled."""
  return records.unwrap(template).format_map(fields)


def tables() -> dict[str, Table]:
  """Every page, by name, in build order."""
  return {table.name: table for module in MODULES for table in importlib.import_module(f'experiments.{module}').TABLES}


def main():
  parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument('names', nargs='*', help='the pages to build (default: every one)')
  parser.add_argument('--list', action='store_true', help='print the pages\' names and files, and exit')
  args = parser.parse_args()
  every = tables()
  if args.list:
    for name, table in every.items():
      print(f'{name}\t{table.page}')
    return
  unknown = [n for n in args.names if n not in every]
  if unknown:
    parser.error(f'unknown page {unknown[0]!r}; choose from {", ".join(every)} (--list)')
  for name in args.names or every:
    build(every[name])
    print(f'{every[name].page}: written')


if __name__ == '__main__':
  from implicit_jax.engine import cli  # pylint: disable=import-outside-toplevel
  sys.exit(cli.guarded(main))
