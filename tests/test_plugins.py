"""Plug-ins (implicit_jax/plugins.py): a task, a method and a solver named by their import paths, resolved by import
wherever a config names them (training, a run's record), and one-line errors for paths that do not import or lack
the protocol's names. The example task under examples/ is trained from the command line in test_examples.py."""

import json
import sys
import textwrap

import jax
import numpy as np
import pytest

from implicit_jax import bilevel, methods, tasks
from implicit_jax.engine import checkpoints, checks, config as config_lib, data, train
from implicit_jax.testing import rel_err, ridge_problem

PACKAGE = 'plugin_fixture_pkg'  # a name no installed package has: created under a temporary folder below

FILES = {
    '__init__.py': '',
    # A task outside the package: the synthetic task's module re-exported, and the same as an object in a module.
    'tasks.py': '''
        import types
        from implicit_jax.tasks.mlc.synthetic import default_config, make_task
        TASK = types.SimpleNamespace(default_config=default_config, make_task=make_task)
        NOT_A_TASK = types.SimpleNamespace(default_config=default_config)
        NO_MODEL = types.SimpleNamespace(default_config=lambda: {'data': {}}, make_task=make_task)
    ''',
    # A method with a section of its own: feed-forward training scaled by its weight.
    'method.py': '''
        import ml_collections
        from implicit_jax.methods import feedforward
        SECTION = 'scaled'
        def default_config():
          return ml_collections.ConfigDict({'weight': 1.0})
        def build(task, config):
          method = feedforward.build(task, config)
          def train_step(state, batch, rng):
            state, metrics = method.train_step(state, batch, rng)
            return state, {'loss': config.scaled.weight * metrics['loss']}
          return method._replace(train_step=train_step)
    ''',
    # A dense solve written against the solver protocol: the built-in 'dense' is its reference.
    'solver.py': '''
        import jax, jax.numpy as jnp
        from jax.flatten_util import ravel_pytree
        def solve(matvec, v, solver):
          flat, unravel = ravel_pytree(v)
          columns = jax.vmap(lambda e: ravel_pytree(matvec(unravel(e)))[0])(jnp.eye(flat.size, dtype=flat.dtype))
          return unravel(jnp.linalg.solve(columns.T, flat)), {'iterations': flat.size}
        def not_a_pair(matvec, v, solver):
          return v
        def nan_u(matvec, v, solver):
          return jax.tree.map(lambda a: a * jnp.nan, v), {'iterations': 1}
        def words(matvec, v, solver):
          return v, {'iterations': 'many'}
        def no_count(matvec, v, solver):
          return v, {}
        def branches(matvec, v, solver):
          if jnp.linalg.norm(ravel_pytree(v)[0]) > 0:
            return v, {}
          return jax.tree.map(jnp.zeros_like, v), {}
    ''',
    # A small multi-class task; config.data.variant breaks one part of the task contract at a time.
    'multiclass.py': '''
        import ml_collections
        import numpy as np
        from implicit_jax.spaces.categorical import Multiclass
        from implicit_jax.tasks import Evaluator, Task
        from implicit_jax.tasks.mlc.models import MLCEnergy, MLPInferenceNet
        CLASSES = 10
        def default_config():
          return ml_collections.ConfigDict({'data': {'variant': 'good'}, 'model': {'outputs': CLASSES}})
        class Accuracy(Evaluator):
          select = 'accuracy'
          def metrics(self, pred, split):
            return {'accuracy': float(np.mean(np.argmax(pred, axis=-1) == split['y']))}
        class NaNAccuracy(Accuracy):
          def metrics(self, pred, split):
            return {'accuracy': float('nan')}
        def make_task(config):
          variant, rng = config.data.variant, np.random.default_rng(0)
          if variant == 'none':
            return None
          if variant == 'misread':
            return config.model.output  # a field its default_config() does not declare (outputs misspelt)
          x = rng.normal(size=(160, 8)).astype(np.float32)
          y = np.argmax(x @ rng.normal(size=(8, CLASSES)), axis=1)
          if variant == 'shifted':
            y = y + 5
          if variant == 'one_hot':
            y = np.eye(CLASSES, dtype=np.float32)[y]
          cut = {'train': slice(0, 96), 'dev': slice(96, 128), 'test': slice(128, 160)}
          outputs = config.model.outputs
          extra = ('scale',) if variant == 'two_inputs' else ()  # a second input, which a .npy cannot carry
          splits = {s: {'x': x[c], 'y': y[c], **{k: x[c, :1] for k in extra}} for s, c in cut.items()}
          return Task('multiclass', splits, Multiclass(CLASSES),
                      lambda heads=1: MLPInferenceNet(outputs, (16,), heads=heads),
                      lambda: MLCEnergy(CLASSES, (16,), 16, 4),
                      NaNAccuracy() if variant == 'nan_metric' else Accuracy(), score='accuracy')
    ''',
    # A method whose init reads its key on the host (allowed: only the step and predict are jitted).
    'host_init.py': '''
        import jax
        from implicit_jax.methods import feedforward
        def build(task, config):
          method = feedforward.build(task, config)
          return method._replace(init=lambda rng: method.init(jax.random.key(int(jax.random.key_data(rng).sum()))))
    ''',
    # A method whose predict keeps 7 of the 10 classes.
    'seven.py': '''
        from implicit_jax.methods import feedforward
        def build(task, config):
          method = feedforward.build(task, config)
          return method._replace(predict=lambda params, batch: method.predict(params, batch)[..., :7])
    ''',
    # The multi-class task with every predict hook: two named formats of its own, and its own output lines.
    'formats.py': '''
        import numpy as np
        from plugin_fixture_pkg.multiclass import default_config, make_task
        FORMATS = ('rows', 'columns')
        def read_inputs(run, path, input_format):
          x = np.loadtxt(path, delimiter=',', dtype=np.float32, ndmin=2)
          return {'x': x.T if input_format == 'columns' else x}, input_format
        def format_predictions(run, pred, context, threshold):
          return [f'{context}: class {k}' for k in np.argmax(pred, axis=-1)]
    ''',
    'broken_dependency.py': 'import no_such_module_anywhere\n',
    'syntax_error.py': 'def build(:\n',
    'no_build.py': 'SECTION = None\n',
    'returns_a_dict.py': 'def build(task, config):\n  return {}\n',
    # A Method whose form is no function of the step (a fixed form is one program: form=None).
    'form_not_callable.py': '''
        from implicit_jax.methods import feedforward
        def build(task, config):
          return feedforward.build(task, config)._replace(form=3)
    ''',
    'section_without_defaults.py': '''
        SECTION = 'fresh'
        def build(task, config):
          raise AssertionError('not reached')
    ''',
    # A method declared as the built-in ones are (tests/test_registration.py): feed-forward training, a section of
    # its own and the shared gbi section read; and declarations the rules refuse.
    'declared.py': '''
        import ml_collections
        from implicit_jax.methods import feedforward
        from implicit_jax.plugins import MethodSpec, Section
        defaults = lambda: ml_collections.ConfigDict({'width': 3})
        METHOD = MethodSpec('declared', feedforward.build, Section('fresh', defaults), shared=('gbi',))
        RESHARED = MethodSpec('reshared', feedforward.build, shared=('nope',))
        NOT_A_SPEC = {'build': feedforward.build}
    ''',
    'not_a_spec.py': '''
        from implicit_jax.methods import feedforward
        build = feedforward.build
        METHOD = 'feedforward'
    ''',
}


@pytest.fixture(scope='module', autouse=True)
def plugin_package(tmp_path_factory):
  """The fixture package on sys.path for this module's tests (a user's PYTHONPATH), removed afterwards."""
  root = tmp_path_factory.mktemp('plugins')
  (root / PACKAGE).mkdir()
  for name, text in FILES.items():
    (root / PACKAGE / name).write_text(textwrap.dedent(text))
  sys.path.insert(0, str(root))
  yield root
  sys.path.remove(str(root))
  for name in [m for m in sys.modules if m == PACKAGE or m.startswith(PACKAGE + '.')]:
    del sys.modules[name]


def tiny(task=f'{PACKAGE}.tasks', method='feedforward'):
  config = config_lib.base_config(task, method)
  config.data.update(num_features=8, num_groups=2, group_size=3, num_train=64, num_dev=32, num_test=32)
  config.batch_size = 16
  return config


@pytest.mark.parametrize('path', [f'{PACKAGE}.tasks', f'{PACKAGE}.tasks.TASK'])
def test_a_task_module_or_object_is_named_by_its_import_path(path):
  config = tiny(task=path)
  config_lib.check(config)
  task = tasks.get_task(config)
  assert task.name == 'synthetic' and task.splits['train']['x'].shape == (64, 8)


def test_a_method_with_its_own_section_is_configured_recorded_and_read_back():
  config = tiny(method=f'{PACKAGE}.method')
  config.scaled.weight = 3.0
  config_lib.check(config)
  record = config_lib.recorded(config)
  assert record['task'] == f'{PACKAGE}.tasks' and record['method'] == f'{PACKAGE}.method'
  assert record['scaled'] == {'weight': 3.0} and 'implicit' not in record  # its section, not the others'
  back = config_lib.load(json.loads(json.dumps(record)))
  assert back.scaled.weight == 3.0 and config_lib.compare(record, back) == []
  # The plug-in's step is the one that runs: its loss is the feed-forward loss scaled by the section's weight.
  task = tasks.get_task(config)
  batch = next(data.train_batches(task, 16, np.random.default_rng(0)))
  losses = {}
  for weight in (1.0, 3.0):
    config.scaled.weight = weight
    method = methods.build(task, config)
    losses[weight] = float(method.train_step(method.init(jax.random.key(0)), batch, jax.random.key(1))[1]['loss'])
  np.testing.assert_allclose(losses[3.0], 3.0 * losses[1.0], rtol=1e-6)


def test_a_plugin_method_needs_its_section_in_the_config():
  config = tiny()  # built for feedforward: no 'scaled' section
  config.method = f'{PACKAGE}.method'
  message = (r"config\.scaled: missing, the section method 'plugin_fixture_pkg\.method' reads; start the config "
             r"from base_config\(task, 'plugin_fixture_pkg\.method'\)")
  with pytest.raises(ValueError, match=message):
    config_lib.check(config)


def test_a_plugin_solver_gives_the_hypergradient_of_the_built_in_dense_solve(x64):
  l_aux, l_prim, theta_star, phi, batch, exact = ridge_problem()
  grads = {}
  for name in ('dense', f'{PACKAGE}.solver', f'{PACKAGE}.solver.solve'):
    grads[name], info = bilevel.hypergradient(l_prim, l_aux, theta_star(phi), phi, batch,
                                              bilevel.Solver(name, damping=0.0))
    assert info['residual'] < 1e-8  # the engine's residual check of the plug-in's u
  assert rel_err(grads[f'{PACKAGE}.solver'], exact) < 1e-6
  assert rel_err(grads[f'{PACKAGE}.solver'], grads['dense']) < 1e-10
  assert float(info['iterations']) == 6  # what the plug-in reported


def test_a_plugin_solver_that_breaks_the_protocol_is_named():
  l_aux, l_prim, theta_star, phi, batch, _ = ridge_problem()
  with pytest.raises(ValueError, match=r"solver\.name: 'plugin_fixture_pkg\.solver\.not_a_pair' returned a dict, "
                                       r"not \(u, info: dict\)"):
    bilevel.hypergradient(l_prim, l_aux, theta_star(phi), phi, batch,
                          bilevel.Solver(f'{PACKAGE}.solver.not_a_pair'))


def implicit_step(solver: str):
  """The implicit method's first step on the tiny synthetic task with the plug-in solver at import path
  ``solver``, traced and run: its metrics."""
  config = tiny(method='implicit')
  config.implicit.solver.name = solver
  config.implicit.inner_steps = 1
  task = tasks.get_task(config)
  method = methods.build(task, config)
  batch = next(data.train_batches(task, 16, np.random.default_rng(0)))
  return jax.jit(method.train_step)(method.init(jax.random.key(0)), batch, jax.random.key(1))[1]


def test_the_implicit_method_trains_with_a_plugin_solver():
  metrics = implicit_step(f'{PACKAGE}.solver')
  assert np.isfinite(float(metrics['loss_prim'])) and float(metrics['implicit_norm']) > 0


BAD = [
    ('task', 'no_such_task_module',
     "config.task: unknown task 'no_such_task_module'; choose one of ['citations', 'mlc', 'segmentation', "
     "'synthetic', 'tagging'] or the import path of a plug-in (no module named 'no_such_task_module': is its "
     "folder on PYTHONPATH, or its package installed?)"),
    ('task', f'{PACKAGE}.missing.deeper',
     f"config.task: cannot import '{PACKAGE}.missing.deeper': no module named '{PACKAGE}.missing', and '{PACKAGE}' "
     "has no attribute 'missing'"),
    ('task', f'{PACKAGE}.tasks.NO_SUCH_OBJECT',
     f"config.task: cannot import '{PACKAGE}.tasks.NO_SUCH_OBJECT': no module named '{PACKAGE}.tasks.NO_SUCH_OBJECT', "
     f"and '{PACKAGE}.tasks' has no attribute 'NO_SUCH_OBJECT'"),
    ('task', f'{PACKAGE}.tasks.NOT_A_TASK',
     f"config.task: '{PACKAGE}.tasks.NOT_A_TASK' does not provide make_task (a task exports default_config() and "
     "make_task(config); see implicit_jax/plugins.py)"),
    ('task', f'{PACKAGE}.tasks.NO_MODEL',
     f"config.task: '{PACKAGE}.tasks.NO_MODEL': default_config() must hold exactly the sections data and model, got "
     "['data']"),
    ('task', 'not a path', "config.task: unknown task 'not a path'; choose one of"),
    ('method', f'{PACKAGE}.broken_dependency',
     f"config.method: importing '{PACKAGE}.broken_dependency' failed: No module named 'no_such_module_anywhere'"),
    ('method', f'{PACKAGE}.syntax_error',
     f"config.method: importing '{PACKAGE}.syntax_error' failed: SyntaxError: "),
    ('method', f'{PACKAGE}.no_build',
     f"config.method: '{PACKAGE}.no_build' does not provide build (a method exports build(task, config) -> "
     "methods.Method; see implicit_jax/plugins.py)"),
    ('method', f'{PACKAGE}.returns_a_dict',
     f"config.method: '{PACKAGE}.returns_a_dict': build() returned a dict, not an implicit_jax.methods.Method"),
    ('method', f'{PACKAGE}.form_not_callable',
     f"config.method: '{PACKAGE}.form_not_callable': build() returned a Method whose form is a int: it must be None or "
     "step -> hashable"),
    ('method', f'{PACKAGE}.section_without_defaults',
     f"config.method: '{PACKAGE}.section_without_defaults' reads the new section 'fresh' but does not provide "
     "default_config()"),
    ('implicit.solver.name', 'no_such_solver_module',
     "implicit.solver.name: unknown inverse-HVP solver 'no_such_solver_module'; choose one of ['cg', 'dense', "),
    ('implicit.solver.name', f'{PACKAGE}',
     f"implicit.solver.name: '{PACKAGE}' does not provide solve (a solver is a callable solve(matvec, v, solver) -> "
     "(u, info), or a module that exports solve"),
]


@pytest.mark.parametrize('field,value,message', BAD, ids=[f'{f}={v}' for f, v, _ in BAD])
def test_a_bad_plugin_is_named_in_one_line(field, value, message):
  """Each error is a ValueError (the command lines print it as one line) that names the config field."""
  def build():
    config = tiny(method='implicit' if field.startswith('implicit.') else 'feedforward')
    if field == 'method':
      config = config_lib.base_config(config.task, value)  # what a config file for the method would do
    else:
      config.update_from_flattened_dict({field: value})
    config_lib.check(config)
    methods.build(tasks.get_task(config), config)

  with pytest.raises(ValueError) as error:
    build()
  assert str(error.value).startswith(message)
  assert '\n' not in str(error.value)


def test_a_run_whose_plugin_no_longer_imports_is_named_when_read_back(tmp_path):
  """``evaluate`` and ``predict`` read a run through load_trained: a recorded path that does not import (the
  folder left PYTHONPATH) is named before anything else."""
  record = config_lib.recorded(tiny())
  record['task'] = 'gone_from_pythonpath'
  (tmp_path / 'config.json').write_text(json.dumps(record))
  with pytest.raises(ValueError, match=r"^config\.task: unknown task 'gone_from_pythonpath'; .*is its folder on "
                                       r"PYTHONPATH"):
    checkpoints.load_trained(str(tmp_path))


def test_a_built_in_alias_wins_over_a_module_of_the_same_name():
  assert tasks.family('synthetic').__name__ == 'implicit_jax.tasks.mlc.synthetic'
  assert methods.resolve('implicit') is methods.REGISTRY['implicit'] and methods.section_of('implicit') == 'implicit'


# --- What a plug-in hands the engine, checked once before the first step (implicit_jax/engine/checks.py) --------

def multiclass(tmp_path, method='feedforward', **fields):
  """``train_and_evaluate`` of the multi-class fixture task, ``fields`` set in its config; returns the workdir."""
  config = config_lib.base_config(f'{PACKAGE}.multiclass', method)
  config.update_from_flattened_dict(fields)
  config.batch_size = config.eval_batch_size = 16
  config.num_epochs = 1
  workdir = tmp_path / 'run'
  train.train_and_evaluate(config, str(workdir))
  return workdir


def test_labels_outside_the_space_are_named_with_the_task_split_and_values(tmp_path):
  with pytest.raises(ValueError) as error:
    multiclass(tmp_path, **{'data.variant': 'shifted'})
  message = str(error.value)
  assert message.startswith("task multiclass: the train split's y holds values outside the 10 classes of the "
                            'multiclass output space')
  assert '10, 11, 12, 13, 14' in message and 'store class ids 0..9' in message, message
  assert not (tmp_path / 'run').exists()  # refused before the workdir is touched


def test_one_hot_labels_where_the_space_wants_class_ids_are_named_with_both_shapes(tmp_path):
  with pytest.raises(ValueError) as error:
    multiclass(tmp_path, **{'data.variant': 'one_hot'})
  message = str(error.value)
  assert message.startswith("task multiclass: the train split's y has shape (96, 10); the multiclass output space "
                            'wants (96,)'), message
  assert 'argmax' in message  # the fix for one-hot rows


def test_make_task_returning_none_is_named():
  config = config_lib.base_config(f'{PACKAGE}.multiclass', 'feedforward')
  config.data.variant = 'none'
  with pytest.raises(ValueError, match=r"^config\.task: make_task of 'plugin_fixture_pkg\.multiclass' returned "
                                       r"None, not an implicit_jax\.tasks\.Task"):
    tasks.get_task(config)


def line_of(file: str, text: str) -> int:
  """The line number of the fixture file ``file`` that holds ``text``."""
  return next(i for i, line in enumerate(textwrap.dedent(FILES[file]).splitlines(), 1) if text in line)


def test_make_task_reading_a_field_its_config_lacks_is_named_at_its_line(plugin_package):
  """It was a 55-line chained traceback ending in ml_collections' AttributeError: "'output'"."""
  config = config_lib.base_config(f'{PACKAGE}.multiclass', 'feedforward')
  config.data.variant = 'misread'
  with pytest.raises(ValueError) as error:
    tasks.get_task(config)
  where = f"{plugin_package / PACKAGE / 'multiclass.py'}:{line_of('multiclass.py', 'config.model.output ')}"
  assert str(error.value) == (f"config.task: make_task of '{PACKAGE}.multiclass' reads config.model.output at {where}, "
                              "a field the config does not have: declare it in the task's default_config() or "
                              'correct the name (Did you mean "outputs" instead of "output"?)')


def test_an_inference_net_of_the_wrong_width_is_named_before_training(tmp_path):
  with pytest.raises(ValueError) as error:
    multiclass(tmp_path, **{'model.outputs': 7})
  message = str(error.value)
  assert message.startswith("task multiclass: make_inference_net()'s output has shape (1, 7); the multiclass output "
                            'space wants (1, 10)'), message
  assert not (tmp_path / 'run').exists()


def test_a_method_whose_predict_misses_classes_is_named_before_training(tmp_path):
  with pytest.raises(ValueError) as error:
    multiclass(tmp_path, method=f'{PACKAGE}.seven')
  message = str(error.value)
  assert message.startswith(f"config.method: '{PACKAGE}.seven': predict(params, batch) returned shape (1, 7); the "
                            'multiclass output space wants (1, 10)'), message
  assert not (tmp_path / 'run').exists()


def test_the_shape_checks_pass_a_method_whose_init_needs_concrete_values():
  config = config_lib.base_config(f'{PACKAGE}.multiclass', f'{PACKAGE}.host_init')
  task = tasks.get_task(config)
  method = methods.build(task, config)
  with pytest.raises(jax.errors.ConcretizationTypeError):
    jax.eval_shape(method.init, jax.random.key(0))  # shapes alone cannot be had of it
  checks.before_training(task, method, config)  # its init is run instead: no error


def test_a_non_finite_select_metric_is_named_with_the_evaluator(tmp_path):
  with pytest.raises(ValueError) as error:
    multiclass(tmp_path, **{'data.variant': 'nan_metric'})
  message = str(error.value)
  assert message.startswith("task multiclass: NaNAccuracy.metrics() gave the dev 'accuracy' nan at epoch 1"), message
  assert 'select' in message and 'finite' in message
  assert not (tmp_path / 'run' / 'metrics.json').exists()


def test_a_solver_whose_info_is_not_a_number_is_named():
  with pytest.raises(ValueError) as error:
    implicit_step(f'{PACKAGE}.solver.words')
  assert str(error.value) == (f"implicit.solver.name: '{PACKAGE}.solver.words' returned info['iterations'] = "
                              "'many', a str, not a number (info's values are numbers or arrays of numbers; see "
                              'implicit_jax/plugins.py)')


def test_a_solver_branching_on_a_traced_value_is_named_at_its_line(plugin_package):
  """It was an 86-line traceback ending in JAX's TracerBoolConversionError."""
  with pytest.raises(ValueError) as error:
    implicit_step(f'{PACKAGE}.solver.branches')
  where = f"{plugin_package / PACKAGE / 'solver.py'}:{line_of('solver.py', 'if jnp.linalg.norm')}"
  assert str(error.value) == (f"implicit.solver.name: '{PACKAGE}.solver.branches' branches in Python on a traced "
                              f'value at {where} (if jnp.linalg.norm(ravel_pytree(v)[0]) > 0:); it runs inside '
                              'jax.jit: use jnp.where or jax.lax.cond (jax.lax.while_loop for a loop) instead of '
                              'if/while/and/or on it (see implicit_jax/plugins.py)')


def test_a_solver_returning_nan_is_named_where_training_stops(tmp_path):
  config = tiny(method='implicit')
  config.implicit.solver.name = f'{PACKAGE}.solver.nan_u'
  config.implicit.inner_steps = 1
  config.num_epochs, config.log_every = 1, 2
  with pytest.raises(FloatingPointError) as error:
    train.train_and_evaluate(config, str(tmp_path))
  message = str(error.value)
  assert message.startswith('non-finite '), message
  assert (f"from the inverse-HVP solver implicit.solver.name='{PACKAGE}.solver.nan_u', non-finite at step 1 while "
          'the losses were finite') in message, message
  assert 'training stopped' in message


def test_a_solver_that_gives_no_count_trains_with_the_count_logged_as_nan(tmp_path):
  config = tiny(method='implicit')
  config.implicit.solver.name = f'{PACKAGE}.solver.no_count'
  config.implicit.inner_steps = 1
  config.num_epochs, config.log_every = 1, 2
  result = train.train_and_evaluate(config, str(tmp_path))
  assert np.isnan(result['train_log']['2']['iterations']) and np.isfinite(result['dev_f1'])
