"""The docs a newcomer reads: no path of the machine that made a run, no line too long to read outside a table, and
the command lists the table pages link (``records.write_commands``) where the links say."""

import re
from pathlib import Path

from experiments import records

ROOT = Path(__file__).resolve().parents[1]
# A line of prose (a table row may be longer: it is one row of cells) longer than this is a generated paragraph that
# inlines what belongs in a file beside the page, e.g. the list of commands that made the runs.
MAX_LINE = 400
MACHINE_PATH = re.compile(r'/work/|/home/')


def _pages():
  return [ROOT / 'README.md', *sorted((ROOT / 'docs').rglob('*.md'))]


def test_docs_name_no_machine_path_and_no_long_line_outside_tables():
  problems = []
  for page in _pages():
    for number, line in enumerate(page.read_text(encoding='utf-8').splitlines(), 1):
      where = f'{page.relative_to(ROOT)}:{number}'
      if MACHINE_PATH.search(line):
        problems.append(f'{where}: a path of the machine that made it ({MACHINE_PATH.search(line).group(0)}...)')
      if len(line) > MAX_LINE and not line.lstrip().startswith('|'):
        problems.append(f'{where}: {len(line)} characters outside a table (records.write_page wraps a generated '
                        'page; a list of commands goes to records.write_commands)')
  assert not problems, '\n'.join(problems)


def test_command_lists_are_linked_portable_and_sorted():
  linked = set()
  for page in _pages():
    for href in re.findall(r'\]\(([^)]*\.commands\.txt)\)', page.read_text(encoding='utf-8')):
      target = (page.parent / href).resolve()
      assert target.is_file(), f'{page.relative_to(ROOT)} links {href}, which is not there'
      linked.add(target)
  for path in sorted((ROOT / 'docs').rglob('*.commands.txt')):
    assert path.resolve() in linked, f'{path.relative_to(ROOT)}: no page links it'
    lines = path.read_text(encoding='utf-8').splitlines()
    assert lines == sorted(set(lines)) and all(lines), f'{path.relative_to(ROOT)}: not sorted and distinct'
    assert not [line for line in lines if MACHINE_PATH.search(line) or '--workdir=/tmp/' in line], path


def test_portable_drops_the_paths_of_the_machine():
  assert records.portable('python s.py --data_dir=/work/shared/data --seeds=0 --workdir=/tmp/rt33') == \
      'python s.py --data_dir=../shared/data --seeds=0'
  assert records.portable('python s.py --data_dir=/work/main/.devdata --x=1') == \
      'python s.py --data_dir=../shared/data --x=1'
  assert records.portable('python s.py --data_dir=.devdata/data --config.data.data_dir=shared/data') == \
      'python s.py --data_dir=../shared/data --config.data.data_dir=../shared/data'
  assert records.portable('python b.py --data_dir /work/shared/data') == 'python b.py --data_dir ../shared/data'
  # a file of the repository, from this checkout or another, relative to it; a folder of the user's own as it is
  assert records.portable('data.train_file=/work/main/tests/fixtures/mlc/scaled.arff') == \
      'data.train_file=tests/fixtures/mlc/scaled.arff'
  assert records.portable(f'data.train_file={ROOT}/tests/fixtures/mlc/scaled.arff') == \
      'data.train_file=tests/fixtures/mlc/scaled.arff'
  assert records.portable('python s.py --data_dir=/data/mine') == 'python s.py --data_dir=/data/mine'
  # a command whose --workdir is its input keeps it, as a placeholder
  assert records.portable('python r.py --workdir=/tmp/reproduce_mlc/bibtex-0 --out=x.md', workdir='WORKDIR') == \
      'python r.py --workdir=WORKDIR --out=x.md'


def test_command_list_merges_seeds_of_portable_commands(tmp_path):
  commands = ['python s.py --data_dir=/work/shared/data --seeds=1 --workdir=/tmp/a',
              'python s.py --data_dir=../shared/data --seeds=0 --workdir=/tmp/b', 'python s.py --table_only', None]
  assert records.command_list(commands) == ['python s.py --data_dir=../shared/data --seeds=0,1',
                                            'python s.py --table_only']
  page = tmp_path / 'page.md'
  assert records.write_commands(page, commands) == 'the 2 commands in [page.commands.txt](page.commands.txt)'
  assert (tmp_path / 'page.commands.txt').read_text() == ('python s.py --data_dir=../shared/data --seeds=0,1\n'
                                                          'python s.py --table_only\n')
  assert records.write_commands(page, commands[:1], section='full', write=False) == \
      'the command in [page.full.commands.txt](page.full.commands.txt)'
  assert not (tmp_path / 'page.full.commands.txt').exists()


def test_wrap_leaves_markdown_rendering_as_it_was():
  words = ['word'] * 40 + ['-', 'x', '1.', 'y', '#', 'z', '|', 'q', '---', '43.00', '±', '3.61', '>', 'end']
  text = '\n'.join(['# ' + ' '.join(words), '', ' '.join(words), '', '- ' + ' '.join(words), '',
                    '| ' + ' | '.join(words) + ' |', '```', ' '.join(words), '```'])
  wrapped = records.wrap(text, width=30)
  lines = wrapped.splitlines()
  assert lines[0] == '# ' + ' '.join(words)  # a heading, a table row and fenced code as they were
  assert '| ' + ' | '.join(words) + ' |' in lines and lines[-2] == ' '.join(words)
  for line in lines:
    first = line.split()[0] if line.strip() else ''
    assert line.startswith(('# ', '- ', '| ', '```')) or not records.OPENS_BLOCK.match(first), line
    assert '±' not in line or '43.00 ± 3.61' in line or line.startswith('| ')
  paragraph = lines[lines.index('') + 1:lines.index('', lines.index('') + 1)]
  assert ' '.join(paragraph) == ' '.join(words) and all(len(line) <= 30 for line in paragraph[:-1])
  item = lines[lines.index('- word word word word word'):]
  assert all(line.startswith('  ') for line in item[1:item.index('')])  # continuation lines under the item's text
  # a page template (experiments/tables.py) is wrapped as the page is: unwrap gives back the long lines
  assert records.unwrap(wrapped) == text and records.wrap(records.unwrap(wrapped), width=30) == wrapped
  assert records.wrap(wrapped, width=30) == wrapped


# A machine's path: an absolute one under the roots this project's machines use. A user-facing example workdir
# (/tmp/implicit_jax/..., as README's) is an example, not a machine's path.
RECORD_MACHINE_PATH = re.compile(r'(?<![\w.~])/(?:work|root|home|Users|opt|mnt|tmp)/(?!implicit_jax/)[^"\s]*')


def test_no_committed_record_names_a_path_of_the_machine_that_made_it():
  """The run records under docs/ are docs too (and their rerun's recipe): python -m experiments.records."""
  found = [f'{path.relative_to(ROOT)}: {m.group(0)}' for path in sorted((ROOT / 'docs').rglob('*.json'))
           for m in RECORD_MACHINE_PATH.finditer(path.read_text())]
  assert not found, f'{len(found)} paths, e.g. ' + '; '.join(found[:5])


def test_portable_record_maps_data_packages_and_checkout_files_and_leaves_the_rest():
  text = ('{"data_dir": "/mnt/x/shared/data", "file": "/work/main/.devdata/data/mulan/a.arff", '
          '"train_file": "' + str(ROOT / 'tests' / 'conftest.py') + '", '
          '"embeddings_source": "/opt/venv/lib/python3.11/site-packages/glove/data", '
          '"command": "python scripts/reproduce_mlc.py --data_dir=/work/shared/data --workdir=/tmp/rt1 --seeds=0", '
          '"predictions": "/work/AbC+/x=", "threshold": 0.5}')
  assert records.portable_record(text) == (
      '{"data_dir": "../shared/data", "file": "../shared/data/mulan/a.arff", "train_file": "tests/conftest.py", '
      '"embeddings_source": "site-packages/glove/data", '
      '"command": "python -m experiments.reproduce_mlc --data_dir=../shared/data --seeds=0", '
      '"predictions": "/work/AbC+/x=", "threshold": 0.5}')


def test_portable_record_maps_the_shared_data_under_any_root():
  """CI's checkout and data lie under a root no machine of ours uses (/check/...): the data is still DATA_DIR."""
  text = '{"data_dir": "/check/work/shared/data", "file": "/srv/a/shared/data/cora/x", "rel": "../shared/data"}'
  assert records.portable_record(text) == (
      '{"data_dir": "../shared/data", "file": "../shared/data/cora/x", "rel": "../shared/data"}')
