"""A config file is what it runs: run without an argument, every value its ``get_config`` writes reaches the run
(nothing applied after it replaces one), and neither the configs nor the package import the experiments."""

import ast
import re
import traceback
from pathlib import Path

import pytest

from implicit_jax.engine import config as config_lib

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = sorted((ROOT / 'configs').glob('*.py'))


def _field(node) -> str | None:
  """``'a.b'`` for the expression ``c.a.b`` (any name for ``c``), None for anything else."""
  parts = []
  while isinstance(node, ast.Attribute):
    parts.append(node.attr)
    node = node.value
  return '.'.join(reversed(parts)) if isinstance(node, ast.Name) and parts else None


def _literal(node):
  try:
    return True, ast.literal_eval(node)
  except ValueError:  # an expression (a path, a sum): the file computes it, nothing to compare
    return False, None


def writes(source: str) -> list[tuple[int, str, object]]:
  """``(line, field, value)`` of each literal value the body of ``get_config`` writes at its top level (a branch on
  the argument is a row, not the file as it is): ``c.a.b = v`` (chained targets too), ``c.a.update(k=v)`` and
  ``c.update_from_flattened_dict({...})``."""
  tree = ast.parse(source)
  body = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == 'get_config').body
  out = []
  for stmt in body:
    if isinstance(stmt, ast.Assign):
      ok, value = _literal(stmt.value)
      for target in stmt.targets:
        field = _field(target)
        if ok and field:
          out.append((stmt.lineno, field, value))
    elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and isinstance(stmt.value.func,
                                                                                        ast.Attribute):
      call, prefix = stmt.value, _field(stmt.value.func.value)
      if call.func.attr == 'update' and prefix is not None:
        for kw in call.keywords:
          ok, value = _literal(kw.value)
          if ok:
            out.append((stmt.lineno, f'{prefix}.{kw.arg}', value))
      elif call.func.attr == 'update_from_flattened_dict' and call.args:
        ok, value = _literal(call.args[0])
        if ok:
          out += [(stmt.lineno, k if not prefix else f'{prefix}.{k}', v) for k, v in value.items()]
  return out


def _same(a, b) -> bool:
  norm = lambda v: list(v) if isinstance(v, (list, tuple)) else v
  return norm(a) == norm(b)


def overwritten(path: Path) -> list[str]:
  """The values ``path``'s ``get_config`` writes that its config, as loaded for a run, does not hold."""
  flat = config_lib.flatten(config_lib.from_file(path).to_dict())
  # The top level of the config itself: `c.name` reads as field 'name' (the config object's own name is dropped).
  return [f'{path.name}:{line}: {field} = {value!r}, but the run gets {flat.get(field, "nothing")!r}'
          for line, field, value in writes(path.read_text()) if not _same(flat.get(field), value)]


def test_the_parser_reads_every_form_of_write_a_config_file_uses():
  source = '\n'.join([
      'def get_config(arg=None):',
      '  c = base()',
      '  c.model.hidden = 64',
      '  c.a.lr = c.b.lr = 3e-3',
      '  c.model.channels = (32, 64)',
      '  c.data.data_dir = str(here)',          # computed: not compared
      '  c.implicit.solver.update(reuse="none", iterations=1)',
      '  c.update_from_flattened_dict({"method": "crf", "model.dropout": 0.5})',
      '  if arg:',
      '    c.model.hidden = 8',                 # a row: not the file as it is
      '  return c'])
  assert [(f, v) for _, f, v in writes(source)] == [
      ('model.hidden', 64), ('a.lr', 3e-3), ('b.lr', 3e-3), ('model.channels', (32, 64)),
      ('implicit.solver.reuse', 'none'), ('implicit.solver.iterations', 1), ('method', 'crf'),
      ('model.dropout', 0.5)]


def test_a_file_that_ends_by_replacing_what_it_wrote_is_caught(tmp_path):
  """The check can fail: a config that writes a value and then applies a table over it, as configs/bibtex.py did
  until the rows moved into the config files (mlc.apply swapped in the main job's design)."""
  path = tmp_path / 'cfg.py'
  path.write_text('\n'.join([
      'from implicit_jax.engine import config as config_lib',
      'ROW = {"implicit.inner_steps": 1, "num_epochs": 80}',
      'def get_config(arg=None):',
      '  c = config_lib.base_config(task="mlc", method="implicit")',
      '  c.implicit.inner_steps = 5',
      '  c.num_epochs = 40',
      '  c.log_every = 500',
      '  c.update_from_flattened_dict(ROW)',     # a table applied after the file's own values
      '  return c']))
  assert [m.split(': ', 1)[1] for m in overwritten(path)] == [
      'implicit.inner_steps = 5, but the run gets 1', 'num_epochs = 40, but the run gets 80']


@pytest.mark.parametrize('path', CONFIGS, ids=lambda p: p.name)
def test_every_value_a_config_file_writes_reaches_its_run(path):
  found = writes(path.read_text())
  assert found or path.name == 'default.py', f'{path.name}: no value read from its get_config'
  assert overwritten(path) == []


def test_no_config_and_no_module_of_the_package_imports_the_experiments():
  """The package is the library and the configs are data: the paper's bookkeeping (experiments/) is imported by
  neither, so a config names its values itself and the installed package works without the checkout."""
  pattern = re.compile(r'^\s*(from\s+(implicit_jax\.)?experiments\b|import\s+(implicit_jax\.)?experiments\b)', re.M)
  files = CONFIGS + sorted((ROOT / 'implicit_jax').rglob('*.py'))
  assert len(files) > 60
  assert [str(p.relative_to(ROOT)) for p in files if pattern.search(p.read_text())] == []


@pytest.mark.parametrize('line,nearest', [('c.optimizer.learning_rat = 0.5', 'Did you mean "learning_rate"'),
                                          ('c.no_such_field = 3', 'does not exist and cannot be added')])
def test_a_field_a_config_file_misspells_is_refused_at_its_line(tmp_path, line, nearest):
  """base_config is locked: a misspelt or unknown field set in a config file trained at the default and recorded the
  typo (afterwards evaluate and predict refused the run as 'written by a newer version'); now the file's line is
  refused, naming the nearest field where there is one."""
  path = tmp_path / 'typo.py'
  path.write_text('from implicit_jax.engine import config as config_lib\n\n\ndef get_config():\n'
                  f'  c = config_lib.base_config(task="mlc", method="implicit")\n  {line}\n  return c\n')
  with pytest.raises(AttributeError, match=re.escape(nearest)) as info:
    config_lib.from_file(path)
  assert any(frame.lineno == 6 and frame.filename == str(path) for frame in traceback.extract_tb(info.tb))
