"""Each method is declared once, in its module (``MethodSpec``, ``Section``: implicit_jax/method_kit.py), and every
table of implicit_jax/methods is derived from those declarations; a name registered twice or a section declared
twice is refused. A plug-in's declaration is read and checked by the same rules. And the methods, the plug-ins and
the kit they share import one another in no circle."""

import ast
import collections
from pathlib import Path

import ml_collections
import pytest

from implicit_jax import method_kit, methods, wiring
from implicit_jax.engine import config as config_lib, train
from implicit_jax.methods import feedforward, seal
from tests.conftest import ROOT, load_config
from tests.test_plugins import PACKAGE, plugin_package  # noqa: F401  (the module's autouse fixture)

MethodSpec, Section = method_kit.MethodSpec, method_kit.Section


def defaults():
  return ml_collections.ConfigDict({'k': 1})


def test_the_tables_are_derived_from_the_built_in_declarations():
  assert list(methods.REGISTRY) == [spec.name for spec in methods.BUILT_IN]
  assert all(methods.REGISTRY[spec.name] is spec for spec in methods.BUILT_IN)
  assert list(methods.SECTIONS) == ['implicit', 'spen', 'nce_gbi', 'infnet', 'seal', 'rspen']  # base_config's order
  assert methods.REGISTRY['seal_static'].section is methods.REGISTRY['seal_dynamic'].section is seal.SECTION
  assert methods.SEMI_SUPERVISED == ('implicit', 'dvn', 'rspen')
  assert {m for m, spec in methods.REGISTRY.items() if 'gbi' in spec.shared} == {
      'spen', 'dvn', 'nce_gbi', 'seal_static', 'rspen'}
  text = methods.describe()
  assert all(name in text for name in [*methods.REGISTRY, *methods.SECTIONS, *methods.SHARED])


def test_every_declaration_in_the_methods_modules_is_registered():
  """A module's MethodSpec that BUILT_IN does not list would be a method no config can name."""
  for path in sorted((ROOT / 'implicit_jax' / 'methods').glob('*.py')):
    module = getattr(methods, path.stem, None) if path.stem != '__init__' else None
    for value in vars(module).values() if module else ():
      if isinstance(value, MethodSpec):
        assert methods.REGISTRY.get(value.name) is value, (path.name, value.name)


def test_a_method_registered_twice_is_refused_naming_both_builders():
  again = feedforward.METHOD._replace(build=seal.build_dynamic)
  with pytest.raises(ValueError, match=r"^method 'feedforward' is registered twice \(implicit_jax\.methods\.feedforward"
                                       r"\.build and implicit_jax\.methods\.seal\.build_dynamic\): a name means one "
                                       r"method$"):
    methods.register([*methods.BUILT_IN, again], methods.SHARED_SECTIONS)


def test_a_section_declared_twice_is_refused_naming_both_defaults():
  other = MethodSpec('other_seal', seal.build_dynamic, Section('seal', defaults))
  with pytest.raises(ValueError, match=r"^config section 'seal' is declared twice \(implicit_jax\.methods\.seal\."
                                       rf"default_config and {__name__}\.defaults, by method 'other_seal'"
                                       r"\): declare it once"):
    methods.register([*methods.BUILT_IN, other], methods.SHARED_SECTIONS)
  # The same name as a shared section is a second declaration of it too, and so is a shared section given twice.
  with pytest.raises(ValueError, match=r"^config section 'gbi' is declared twice"):
    methods.register([MethodSpec('m', seal.build_dynamic, Section('gbi', defaults))], methods.SHARED_SECTIONS)
  with pytest.raises(ValueError, match=r"^shared section 'gbi' is declared twice"):
    methods.register([], [*methods.SHARED_SECTIONS, Section('gbi', defaults)])


def test_a_shared_section_nobody_declares_is_refused():
  with pytest.raises(ValueError, match=r"^method 'm' reads the shared sections \['nope'\], which none declares"):
    methods.register([MethodSpec('m', seal.build_dynamic, shared=('nope',))], methods.SHARED_SECTIONS)


def test_a_plugin_declared_as_the_built_ins_are_is_resolved_recorded_and_checked():
  spec = methods.resolve(f'{PACKAGE}.declared')
  assert spec.name == f'{PACKAGE}.declared' and spec.section.name == 'fresh' and spec.shared == ('gbi',)
  config = config_lib.base_config('synthetic', f'{PACKAGE}.declared')
  assert config.fresh.width == 3
  assert set(config_lib.recorded(config)) >= {'fresh', 'gbi'} and 'implicit' not in config_lib.recorded(config)
  assert methods.resolve(f'{PACKAGE}.declared.METHOD') == spec._replace(name=f'{PACKAGE}.declared.METHOD')
  with pytest.raises(ValueError, match=rf"^config\.method: '{PACKAGE}\.declared\.RESHARED': SHARED names \['nope'\], "
                                       r'not shared sections; choose from \[\'gbi\'\]$'):
    methods.resolve(f'{PACKAGE}.declared.RESHARED')
  with pytest.raises(ValueError, match=rf"^config\.method: '{PACKAGE}\.not_a_spec': METHOD must be an "
                                       r'implicit_jax\.plugins\.MethodSpec, got a str$'):
    methods.resolve(f'{PACKAGE}.not_a_spec')


def test_a_run_resolves_its_task_and_method_once(tmp_path, monkeypatch):
  """train_and_evaluate asks the plug-ins for its config's parts once (config.check) and passes them down: the
  record, the workdir's comparison and the method's build use them instead of looking the names up again."""
  config = load_config('tiny')
  config.method, config.num_epochs = 'feedforward', 1
  calls = collections.Counter()
  for owner, name in ((wiring.PACKAGE, 'parts'), (methods, 'resolve')):
    def counted(*args, _original=getattr(owner, name), _name=name, **kwargs):
      calls[_name] += 1
      return _original(*args, **kwargs)
    monkeypatch.setattr(owner, name, counted)
  train.train_and_evaluate(config, str(tmp_path))
  assert calls == {'parts': 1, 'resolve': 1}


def _imports(path: Path, root: Path) -> set[Path]:
  """The files of the package that ``path`` imports, anywhere in it, ``importlib.import_module`` of a literal name
  included (an import hidden there is still an import)."""
  def file_of(name):
    base = root / Path(*name.split('.'))
    return next((f for f in (base.with_suffix('.py'), base / '__init__.py') if f.is_file()), None)

  found = set()
  for node in ast.walk(ast.parse(path.read_text())):
    names = []
    if isinstance(node, ast.Import):
      names = [a.name for a in node.names]
    elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
      names = [f'{node.module}.{a.name}' if file_of(f'{node.module}.{a.name}') else node.module for a in node.names]
    elif (isinstance(node, ast.Call) and getattr(node.func, 'attr', None) == 'import_module' and node.args
          and isinstance(node.args[0], ast.Constant)):
      names = [node.args[0].value]
    found |= {f for f in map(file_of, (n for n in names if n.split('.')[0] == 'implicit_jax')) if f and f != path}
  return found


def test_the_methods_and_the_plugins_import_each_other_in_no_circle():
  """Every file that importing implicit_jax.plugins or implicit_jax.methods runs, followed import by import: none
  leads back to itself (the registry and the kit are below both)."""
  start = [ROOT / 'implicit_jax' / 'plugins.py', ROOT / 'implicit_jax' / 'methods' / '__init__.py']
  graph, todo = {}, list(start)
  while todo:
    path = todo.pop()
    if path not in graph:
      graph[path] = _imports(path, ROOT)
      todo.extend(graph[path])
  assert ROOT / 'implicit_jax' / 'method_kit.py' in graph[start[0]] & graph[start[1]]

  def cycle(path, trail):
    if path in trail:
      return trail[trail.index(path):] + [path]
    for nxt in graph[path]:
      found = cycle(nxt, trail + [path])
      if found:
        return found
    return None

  for path in graph:
    found = cycle(path, [])
    assert found is None, ' -> '.join(str(p.relative_to(ROOT)) for p in found)
  assert ROOT / 'implicit_jax' / 'methods' / '__init__.py' not in graph[start[0]]  # plugins stands below methods
