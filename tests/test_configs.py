"""Config files: each documents its command and takes a training step; they load from any working directory and
from an installed package; the records a run writes hold what the run uses."""

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import jax
import numpy as np
import pytest

from implicit_jax import inference, methods, tasks
from implicit_jax.engine import config as config_lib, data
from experiments import mlc
from implicit_jax.tasks.tagging import embeddings
from tests.conftest import ROOT, load_config

SHARED = Path(os.environ.get('IMPLICIT_JAX_SHARED_DATA', ROOT.parent / 'shared' / 'data'))
CONFIGS = sorted(p.stem for p in (ROOT / 'configs').glob('*.py'))


def one_step(config):
  config_lib.check(config)
  task = tasks.get_task(config)
  method = methods.build(task, config)
  batch = next(data.train_batches(task, config.batch_size, np.random.default_rng(0)))
  state, metrics = jax.jit(method.train_step)(method.init(jax.random.key(0)), batch, jax.random.key(1))
  return task, metrics


def test_every_config_is_documented_with_its_command():
  for name in CONFIGS:
    doc = (ROOT / 'configs' / f'{name}.py').read_text()
    assert f'--config=configs/{name}.py' in doc, name


def test_configs_hold_no_results():
  """Results live in docs/ and README's generated blocks, written by the scripts from the records; a config's
  docstring names the rows (and the docs pages) instead of quoting a score that no script keeps up to date."""
  for name in CONFIGS:
    doc = (ROOT / 'configs' / f'{name}.py').read_text()
    assert 'Reached:' not in doc and ' ± ' not in doc, name


# A shipped config end to end, at its full size (task, data, model, one training step): the e2e suite (setup.cfg),
# beside test_data_configs_take_a_step; tiny and tiny_tagging take their steps in most other tests.
@pytest.mark.e2e
@pytest.mark.parametrize('name', ['default', 'bibtex', 'tagging'])
def test_configs_without_data_directory_take_a_step(name):
  task, metrics = one_step(load_config(name))
  assert np.isfinite(float(metrics['loss_prim']))
  if name == 'bibtex':
    train = task.splits['train']
    assert (len(train['y']), train['x'].shape[1], task.space.units) == (4392, 1836, 159)


@pytest.mark.slow
@pytest.mark.parametrize('name', ['delicious', 'genbase', 'cal500', 'spo_fun'])
def test_data_configs_take_a_step(name):
  if not SHARED.is_dir():
    pytest.skip(f'shared data not present at {SHARED}')
  config = load_config(name)
  config.data.data_dir = str(SHARED)
  _, metrics = one_step(config)
  assert float(metrics['implicit_norm']) > 0


@pytest.mark.e2e
def test_config_given_by_absolute_path_from_another_directory(tmp_path):
  """The main job from a directory outside the repository, the config by absolute path, no PYTHONPATH: configs
  import only the installed package (tiny.py builds on default.py by path)."""
  env = {k: v for k, v in os.environ.items() if k != 'PYTHONPATH'}
  main = subprocess.run([sys.executable, '-m', 'implicit_jax.main', f'--config={ROOT / "configs" / "tiny.py"}',
                         f'--workdir={tmp_path / "run"}', '--config.num_epochs=1'], cwd=tmp_path,
                        capture_output=True, text=True, timeout=300, env=dict(env, JAX_PLATFORMS='cpu'))
  assert main.returncode == 0, main.stderr[-2000:]
  assert 'test example-F1' in main.stdout
  recorded = json.loads((tmp_path / 'run' / 'config.json').read_text())
  assert recorded['model']['inference_hidden'] == [16] and recorded['implicit']['inner_steps'] == 2  # tiny's


def test_configs_building_on_a_sibling_load_by_path():
  """delicious.py and genbase.py build on bibtex.py; from_file resolves it next to them."""
  config = config_lib.from_file(ROOT / 'configs' / 'genbase.py')
  assert (config.task, config.data.name, config.implicit.primary_loss) == ('mlc', 'genbase', 'cd')
  assert tuple(config.model.inference_hidden) == (150, 150)


def test_a_missing_config_file_is_named():
  with pytest.raises(FileNotFoundError, match='config file .*nope.py not found'):
    config_lib.from_file('nope.py', relative_to=ROOT / 'configs' / 'tiny.py')


@pytest.mark.parametrize('method', sorted(methods.REGISTRY))
def test_a_run_records_the_sections_it_reads(method):
  config = load_config('tiny')
  config.method = method
  record = config_lib.recorded(config)
  section = methods.section_of(method)
  assert set(record) == (set(config_lib.core_config()) | {'data', 'model'} | ({section} if section else set())
                         | set(methods.shared_of(method)))
  assert json.loads(json.dumps(record)) == record  # plain JSON


def test_each_method_reads_its_own_section():
  """SPEN, DVN, NCE-GBI, InfNet and SEAL build and train with the implicit method's section full of invalid
  values (they never read it), and their own section's cost does change the loss."""
  task = tasks.get_task(load_config('tiny'))
  for method in ('spen', 'dvn', 'nce_gbi', 'infnet', 'infnet_plus', 'seal_static', 'seal_dynamic'):
    config = load_config('tiny')
    config.method, config.infnet.finetune_epochs, config.seal.pretrain_epochs = method, 1, 1
    config.implicit.update(cost='bogus', cost_scale=-1.0, primary_loss='bogus', inner_steps=0)
    config.implicit.negatives.update(sampler='bogus', num_samples=-1, include_mean=False)
    config.implicit.solver.name = 'bogus'
    methods.build(task, config)  # would raise on any of them
  batch = next(data.train_batches(task, 16, np.random.default_rng(0)))
  losses = []
  for cost in ('l1', 'f1'):
    config = load_config('tiny')
    config.method, config.spen.cost = 'spen', cost
    m = methods.build(task, config)
    losses.append(float(jax.jit(m.train_step)(m.init(jax.random.key(0)), batch, jax.random.key(1))[1]['loss']))
  assert losses[0] != losses[1]


def test_format_1_records_are_upgraded_with_the_values_their_runs_used():
  """The first format's shared sections, as every method read them, move into each method's own section (the GBI
  one stays shared, for the methods that read it)."""
  old = load_config('tiny').to_dict()
  old = config_lib.config_json(old)
  implicit = old['implicit']
  shared = {'negatives': implicit.pop('negatives'), 'solver': implicit.pop('solver'),
            'gbi': {'steps': 7, 'step_size': 0.2, 'rule': 'mirror', 'init': 'half', 'tol': 0.0}}
  shared['negatives']['num_samples'] = 4
  del implicit['refine']
  for name in ('spen', 'nce_gbi', 'gbi'):
    del old[name]
  old['seal']['bce_weight'] = old['seal'].pop('ce_weight')
  for key in ('cost', 'cost_scale', 'num_samples', 'noise_scale'):
    del old['seal'][key]
  for key in ('cost', 'cost_scale'):
    del old['infnet'][key]
  implicit['cost'], implicit['cost_scale'] = 'f1', 3.0
  v1 = {**old, **shared}
  for method, section, expected in (
      ('implicit', 'implicit', {'implicit.negatives.num_samples': 4, 'implicit.solver.iterations': 3,
                                'implicit.refine.steps': 0, 'implicit.refine.rule': 'mirror', 'implicit.cost': 'f1'}),
      ('spen', 'spen', {'spen.cost': 'f1', 'spen.cost_scale': 3.0, 'gbi.steps': 7}),
      ('dvn', None, {'gbi.step_size': 0.2}),
      ('nce_gbi', 'nce_gbi', {'nce_gbi.num_samples': 4, 'gbi.rule': 'mirror'}),
      ('infnet_plus', 'infnet', {'infnet.cost': 'f1'}),
      ('seal_static', 'seal', {'seal.ce_weight': 1.0, 'seal.num_samples': 4, 'seal.cost_scale': 3.0,
                               'gbi.step_size': 0.2}),
      ('seal_dynamic', 'seal', {'seal.ce_weight': 1.0})):
    record = config_lib.upgrade(dict(v1, method=method))
    reads = set(methods.shared_of(method))
    assert set(record) == set(config_lib.core_config()) | {'data', 'model', section} - {None} | reads, method
    flat = config_lib.flatten(record)
    assert {k: flat[k] for k in expected} == expected, method
    loaded = config_lib.load(dict(v1, method=method))  # a full config again, defaults for the rest
    assert loaded.method == method and loaded.implicit.solver.name == 'normal_cg'



def test_format_2_records_read_their_methods_gbi_as_the_shared_section():
  """The second format's ``gbi`` inside a method's section (``spen.gbi``, ``dvn.gbi``, ...) is the shared ``gbi``
  of the methods that read it, and is dropped where the method did not (seal_dynamic's ``seal.gbi``): the record
  reads as the run's config today, and that config may resume it."""
  for method in ('spen', 'dvn', 'rspen', 'nce_gbi', 'seal_static', 'seal_dynamic', 'implicit'):
    config = load_config('tiny')
    config.method, config.gbi.steps, config.gbi.rule = method, 7, 'mirror'
    now = config_lib.recorded(config)
    assert ('gbi' in now) == (method not in ('seal_dynamic', 'implicit')), method
    v2 = json.loads(json.dumps(now))
    section = 'dvn' if method == 'dvn' else methods.section_of(method)
    if method != 'implicit':
      v2.setdefault(section, {})['gbi'] = v2.pop('gbi', config_lib.config_json(config.gbi))
    assert config_lib.upgrade(v2) == now, method
    assert config_lib.compare(v2, config) == [], method
    assert config_lib.load(v2).gbi.steps == (7 if 'gbi' in now else 20), method


def test_format_3_records_read_refresh_and_refresh_by_as_the_reuse_policy():
  """The third format's ``implicit.solver.refresh`` (k) and ``refresh_by`` become ``implicit.solver.reuse``, each
  absent one at its default (refresh 1, 'program'): the record reads as the run's config today, which may resume it;
  a record holding neither predates both and stays as it is (the default, 'none', is what its run did)."""
  config = load_config('tiny')
  now = config_lib.recorded(config)
  assert now['implicit']['solver']['reuse'] == 'none'
  for fields, reuse in (({'refresh': 1}, 'none'), ({'refresh': 1, 'refresh_by': 'program'}, 'none'),
                        ({'refresh': 1, 'refresh_by': 'host'}, 'none'), ({'refresh_by': 'host'}, 'none'),
                        ({'refresh': 3}, 'r3'), ({'refresh': 3, 'refresh_by': 'program'}, 'r3'),
                        ({'refresh': 3, 'refresh_by': 'host'}, 'r3h'), ({'refresh': 12, 'refresh_by': 'host'}, 'r12h')):
    v3 = json.loads(json.dumps(now))
    del v3['implicit']['solver']['reuse']
    v3['implicit']['solver'].update(fields)
    upgraded = config_lib.upgrade(v3)
    assert upgraded['implicit']['solver'] == {**now['implicit']['solver'], 'reuse': reuse}, fields
    assert 'refresh' in v3['implicit']['solver'] or 'refresh_by' in v3['implicit']['solver']  # the record untouched
    assert config_lib.load(v3).implicit.solver.reuse == reuse, fields
    with config.unlocked():
      config.implicit.solver.reuse = reuse
    assert config_lib.compare(v3, config) == [], fields
  older = json.loads(json.dumps(now))
  del older['implicit']['solver']['reuse']
  assert config_lib.upgrade(older) is older and config_lib.load(older).implicit.solver.reuse == 'none'
  # A method other than the implicit one records no solver: nothing to read
  mbce = config_lib.recorded(config_lib.base_config('mlc', 'feedforward'))
  assert config_lib.upgrade(mbce) is mbce


@pytest.mark.parametrize('record,reuse', [('mlc/runs/bibtex-implicit-cd-gcr-T1-r3h-seed0.json', 'r3h'),
                                          ('mlc/runs/bibtex-implicit-cd-gcr-T1-r3-seed0.json', 'r3'),
                                          ('cora/runs/cora-implicit-cd-t5-l50-d3.json', 'none'),
                                          ('mlc/runs/bibtex-implicit-cd-seed0.json', 'none')])
def test_committed_records_of_the_refresh_fields_rerun_with_the_reuse_they_meant(record, reuse):
  """A committed record with refresh 3 and refresh_by 'host', one with refresh 3 alone (made before refresh_by),
  one with refresh 1 and one with neither (made before both): the config read back from each (``--config=RECORD``)
  holds the reuse its run had, and the record names the row its file does (``mlc.system_of``, which the tables
  group by). The records themselves keep the fields they were written with."""
  path = ROOT / 'docs' / record
  stored = json.loads(path.read_text())['config']
  assert ('refresh' in stored['implicit']['solver']) == (record.startswith('mlc/runs/bibtex-implicit-cd-gcr-T1')
                                                         or record.startswith('cora'))
  config = config_flag()['config'].parser.parse(str(path))
  assert config.implicit.solver.reuse == reuse
  assert record_differences(stored, config) == []
  if record.startswith('mlc'):
    assert mlc.system_of({'config': stored}) == path.name.rsplit('-seed', 1)[0].split('-', 1)[1]


@pytest.mark.parametrize('argv,message', [
    (['--config=configs/tiny.py', '--config.implicit.solver.refresh=3'],
     "--config.implicit.solver.refresh: a retired field: set implicit.solver.reuse to 'r3' (or 'r3h': two programs "
     'the host picks)'),
    (['--config=configs/tiny.py', '--config.implicit.solver.refresh=1'],
     "--config.implicit.solver.refresh: a retired field: set implicit.solver.reuse to 'none' (the default)"),
    (['--config=configs/tiny.py', '--config.implicit.solver.refresh_by', 'host'],
     "--config.implicit.solver.refresh_by: a retired field: set implicit.solver.reuse to 'r<k>h', k the period"),
    (['--config=configs/tiny.py', '--config.implicit.solver.refresh_by=program'],
     "--config.implicit.solver.refresh_by: a retired field: set implicit.solver.reuse to 'r<k>', k the period"),
    # Not a retired field: the generic error stays
    (['--config=configs/tiny.py', '--config.implicit.solver.refrsh=3'],
     "--config.implicit.solver.refrsh: the config has no field 'refrsh'.")],
                         ids=['refresh-3', 'refresh-1', 'refresh_by-host', 'refresh_by-program', 'misspelt'])
def test_an_override_of_a_retired_field_names_the_field_that_replaced_it(argv, message):
  from implicit_jax.engine import cli  # pylint: disable=import-outside-toplevel
  argv = ['prog', *argv]
  values = config_flag(argv)
  with pytest.raises((KeyError, AttributeError)) as error:
    values(argv)
  assert cli._config_error(error.value, argv) == message  # pylint: disable=protected-access


@pytest.mark.parametrize('line', ['c.implicit.solver.refresh = 3', "c.implicit.solver.update(refresh=3, name='gcr')",
                                  "c.implicit.solver.update(name='gcr', refresh=3)"],
                         ids=['assigned', 'updated-first', 'updated-later'])
def test_a_config_file_setting_a_retired_field_is_told_the_field_that_replaced_it(tmp_path, line):
  from implicit_jax.engine import cli  # pylint: disable=import-outside-toplevel
  path = tmp_path / 'cfg.py'
  path.write_text('from implicit_jax.engine import config as config_lib\n\n\ndef get_config():\n'
                  f'  c = config_lib.base_config()\n  {line}\n  return c\n')
  argv = ['prog', f'--config={path}']
  values = config_flag(argv)
  with pytest.raises((KeyError, AttributeError)) as error:
    values(argv)
    'seed' in values.config  # pylint: disable=pointless-statement  # the file is loaded on first use
  assert cli._config_error(error.value, argv) == (  # pylint: disable=protected-access
      f"--config={path}: line 6 sets 'refresh' (implicit.solver.refresh), a retired field: set implicit.solver.reuse "
      "to 'r3' (or 'r3h': two programs the host picks)")


def test_one_gbi_section_for_every_method_that_reads_it():
  """GBI settings live in the shared ``config.gbi`` alone: no method's section holds its own, and the methods that
  run GBI record it."""
  config = config_lib.base_config('mlc')
  assert config.gbi.to_dict() == inference.default_config().to_dict()
  for section in methods.SECTIONS:
    assert 'gbi' not in config[section], section
  readers = {m for m in methods.REGISTRY if 'gbi' in methods.shared_of(m)}
  assert readers == {'spen', 'dvn', 'rspen', 'nce_gbi', 'seal_static'}
  for method in methods.REGISTRY:
    assert ('gbi' in config_lib.recorded(config_lib.base_config('mlc', method))) == (method in readers), method


# ------------------------------------------------------------------------------------ records as their own recipes

# What a rerun records of itself rather than of the run it reproduces: the --config that made it (the record) and
# the overrides given with it; and where a config's settings came from (config.chosen_on), which records made before
# the field do not name.
PROVENANCE = {'config_file', 'overrides', 'chosen_on'}


def committed_records():
  """Every committed run record of implicit_jax's: a JSON under docs/ holding the run's ``config`` (the tables'
  runs in docs/**/runs*/, the sweeps' in docs/**/sweeps/; scikit-learn's baseline and the benchmarks hold none)."""
  for path in sorted((ROOT / 'docs').rglob('*.json')):
    record = json.loads(path.read_text())
    if isinstance(record, dict) and isinstance(record.get('config'), dict):
      yield path, record


def record_differences(stored: dict, config) -> list[str]:
  """Where a record's config and the config read back from it differ, up to ``PROVENANCE``; a field the record
  lacks (added to the code since) must hold its default, which reproduces what the code did before it."""
  old, new = config_lib.flatten(config_lib.upgrade(stored)), config_lib.flatten(config_lib.recorded(config))
  defaults = config_lib.flatten(config_lib.recorded(config_lib.base_config(config.task, config.method)))
  diffs = []
  for key in sorted((set(old) | set(new)) - PROVENANCE):
    if key not in new:
      diffs.append(f'{key}: recorded {old[key]!r}, not in the config')
    elif key not in old:
      if new[key] != defaults.get(key):
        diffs.append(f'{key}: not recorded (default {defaults.get(key)!r}), config {new[key]!r}')
    elif old[key] != new[key]:
      diffs.append(f'{key}: recorded {old[key]!r}, config {new[key]!r}')
  return diffs


def config_flag(argv=('prog',)):
  """main's --config flag (engine/cli.py), on flags of its own, with the command line ``argv``."""
  from absl import flags  # pylint: disable=import-outside-toplevel
  from implicit_jax.engine import cli  # pylint: disable=import-outside-toplevel
  values = flags.FlagValues()
  cli.define_config_flag('test', flag_values=values, sys_argv=list(argv))
  return values


def _shipped(config) -> bool:
  """Whether the config's data ships inside the package (bibtex's official split): its task builds everywhere."""
  return config.data.get('name') == 'bibtex' and config.data.get('protocol') == 'official' and not config.data.get(
      'data_dir')


def _build(config, cache) -> bool:
  """Builds the task (once per dataset and shape, not per seed) and the method of ``config``, its data read from
  the shared data folder; False where that data is not on this machine."""
  data = config_lib.config_json(config.data)
  key = config.task + json.dumps({k: v for k, v in data.items() if k not in ('split_seed', 'draw', 'data_dir')},
                                 sort_keys=True)
  if key not in cache:
    with config.unlocked():
      if config.data.get('data_dir'):
        config.data.data_dir = str(SHARED)
    try:
      cache[key] = tasks.get_task(config)
    except OSError:  # a dataset or embeddings file not present here
      cache[key] = None
  if cache[key] is not None:
    methods.build(cache[key], config)
  return cache[key] is not None


def test_every_committed_record_reruns_from_itself():
  """The strongest check that the committed results stay reproducible: each committed run record, read as
  ``python -m implicit_jax.main --config=<record>.json`` reads it, is the record's config field for field (a field
  added since at the default that reproduces the code before it), names itself as its config, and the engine
  accepts it: its fields pass the checks, and, for the runs on data shipped inside the package (bibtex's official
  split), its task and method build (every record's: test_every_committed_record_builds, e2e)."""
  records = list(committed_records())
  # mlc 179, baselines 168, tagging 170 (its superseded and sweep runs among them), cora 94, horses 60, sweeps 408
  assert len(records) >= 1100
  names = {str(path.relative_to(ROOT / 'docs')) for path, _ in records}
  assert {'mlc/runs/bibtex-implicit-cd-gcr-seed0.json', 'baselines/runs/bibtex-spen-seed0.json',
          'tagging/runs/ner_fixed-bilstm-seed0.json', 'horses/runs_full/fcn-200-seed0.json',
          'horses/runs_seal/seal-regression-w-seed0.json', 'sweeps/bibtex-fast/T1-gcr1-lr1.5e-3-seed0.json'} <= names
  flag, cache, failures, built = config_flag()['config'], {}, [], 0
  for path, record in records:
    config = flag.parser.parse(str(path))
    diffs = record_differences(record['config'], config)
    if (config.config_file, tuple(config.overrides)) != (str(path), ()):
      diffs.append(f'provenance {config.config_file!r} {config.overrides!r}')
    flat = config_lib.flatten(record['config'])
    # the documented seeding: MLC's seed also draws the dev split, Cora's is the labeled draw
    if record['config']['task'] == 'mlc' and flat['data.split_seed'] != flat['seed']:
      diffs.append(f'split_seed {flat["data.split_seed"]} != seed {flat["seed"]}')
    if path.parent.parent.name == 'mlc' and mlc.system_of(record) not in path.stem:
      diffs.append(f'the MLC table shows it as {mlc.system_of(record)!r}')  # it groups records by system_of
    if path.parent.parent.name == 'cora' and flat['data.draw'] != flat['seed']:
      diffs.append(f'draw {flat["data.draw"]} != seed {flat["seed"]}')
    try:
      config_lib.check(config)
      if _shipped(config):
        built += _build(config, cache)
    except (ValueError, KeyError, TypeError) as e:
      diffs.append(f'not accepted: {type(e).__name__}: {e}')
    if diffs:
      failures.append(f'{path.relative_to(ROOT)}: {"; ".join(diffs)}')
  assert not failures, f'{len(failures)} records not reproduced:\n' + '\n'.join(failures[:20])
  assert built >= 250, built  # bibtex's official-split runs: the MLC tables' and the bibtex sweeps'


@pytest.mark.e2e
def test_every_committed_record_builds():
  """Every committed record's task and method build from the record alone (the data read from the shared data
  folder): 24 datasets and shapes, about 20 s on 2 cores. A run whose word vectors this environment lacks (the nlp
  extra's package, which CI does not install, or the run's own vectors file) is built with random ones."""
  if not SHARED.is_dir():
    pytest.skip(f'shared data not present at {SHARED}')
  flag, cache, missing, without_vectors = config_flag()['config'], {}, [], set()
  glove = importlib.util.find_spec(embeddings.GLOVE_PACKAGE) is not None  # the nlp extra; CI installs test only
  for path, _ in committed_records():
    config = flag.parser.parse(str(path))
    if config.model.get('embeddings') == 'glove' and not (
        (ROOT / config.model.embeddings_path).exists() if config.model.embeddings_path else glove):
      # Word vectors this environment lacks (the package, or a run's own vectors file): built with random
      # initial vectors, as experiments/rescore.py rescores such runs; the vectors set initial weights only.
      without_vectors.add(config.task)
      with config.unlocked():
        config.model.update(embeddings='random', embeddings_path='')
    if not _build(config, cache):
      missing.append(path)
  assert not missing, f'{len(missing)} records whose data is not in {SHARED}: {missing[:5]}'
  assert without_vectors <= {'tagging', 'citations'}, without_vectors  # the word-vector tasks' runs, no other


@pytest.mark.e2e
def test_a_record_reruns_from_the_command_line(tmp_path):
  """``python -m implicit_jax.main --config=<record>.json`` trains the recorded run (here for one epoch of its 80):
  the new run's record is the old one's config, naming the record and the override it was given."""
  path = ROOT / 'docs' / 'mlc' / 'runs' / 'bibtex-mbce-seed0.json'
  main = subprocess.run([sys.executable, '-m', 'implicit_jax.main', f'--config={path}',
                         f'--workdir={tmp_path / "run"}', '--config.num_epochs=1'], capture_output=True, text=True,
                        timeout=300, env=dict(os.environ, JAX_PLATFORMS='cpu'))
  assert main.returncode == 0, main.stderr[-2000:]
  assert 'test example-F1' in main.stdout
  rerun = json.loads((tmp_path / 'run' / 'config.json').read_text())
  assert (rerun['config_file'], rerun['overrides'], rerun['num_epochs']) == (str(path), ['--config.num_epochs=1'], 1)
  rerun['num_epochs'] = 80
  assert record_differences(json.loads(path.read_text())['config'], config_lib.load(rerun)) == []


def test_record_differences_sees_a_changed_field():
  """The comparison above can fail: a changed field, a field set away from its default that the record lacks."""
  config = config_lib.from_file(f'{ROOT / "configs" / "bibtex.py"}:implicit-cd')
  stored = config_lib.recorded(config)
  assert record_differences(stored, config) == []
  stored['implicit']['solver']['iterations'] = 1
  del stored['implicit']['negatives']['num_samples']  # bibtex sets 5, not the default
  stored['config_file'] = 'elsewhere'                 # provenance: ignored
  assert record_differences(stored, config) == [
      'implicit.negatives.num_samples: not recorded (default 0), config 5',
      'implicit.solver.iterations: recorded 1, config 5']


def test_a_row_names_its_config_only_where_its_records_are_that_config():
  """The tables' "config" cell (records.recipe): the row's config where every record is it at its seed (the data
  folder aside), the records where one differs, naming the fields; a design no row holds names its records alone."""
  from experiments import records  # pylint: disable=import-outside-toplevel
  row = mlc.row_config('bibtex', 'mbce', 1)
  record = {'config': config_lib.recorded(row) | {'config_file': 'elsewhere'}}
  record['config']['data']['data_dir'] = '/somewhere'
  pattern = 'docs/mlc/runs/bibtex-mbce-seed*.json'
  assert records.row_differences(record, row) == []
  assert mlc.recipe('bibtex', 'mbce', 'official', [record | {'seed': 1}]) == (
      '`configs/bibtex.py:mbce`')
  record['config']['num_epochs'] = 40
  record['config']['model']['dropout'] = 0.0
  differences = records.row_differences(record, row)
  assert differences == ['model.dropout', 'num_epochs']
  assert records.recipe('configs/bibtex.py:mbce', pattern, differences) == (
      f"its records `{pattern}` (today's row `configs/bibtex.py:mbce` differs in model.dropout, num_epochs)")
  assert records.recipe(None, pattern) == f'its records `{pattern}`'


def test_tune_reads_its_config_as_main_does():
  """One --config parser for main and tune (engine/cli.py, which also adds a plug-in method's section): tune's flag
  takes a run record too, whose recipe it tunes."""
  from implicit_jax import tune  # pylint: disable=import-outside-toplevel  # defines its flags
  parser = tune.FLAGS['config'].parser
  path = ROOT / 'docs' / 'mlc' / 'runs' / 'bibtex-mbce-seed0.json'
  assert config_lib.recorded(parser.parse(str(path))) == config_lib.recorded(config_lib.from_file(str(path)))
  assert type(parser) is type(config_flag()['config'].parser)  # main's


def test_the_command_line_reads_a_record_with_its_overrides(tmp_path):
  """--config=<record>.json is the record's config, --config.<field>= overriding it as it would a config file's
  (the seed and the data's place are the usual ones); a workdir's config.json reads the same; a misspelt override,
  a JSON that is not a record and a row argument are refused, each naming what is wrong."""
  path = ROOT / 'docs' / 'mlc' / 'runs' / 'bibtex-mbce-seed0.json'
  argv = ['prog', f'--config={path}', '--config.seed=3', '--config.data.data_dir=elsewhere']
  values = config_flag(argv)
  values(argv)
  config = values.config
  assert (config.seed, config.data.data_dir, config.method, config.num_epochs) == (3, 'elsewhere', 'feedforward', 80)
  assert config.data.split_seed == 0  # the record's: an override changes what it names, nothing else
  workdir_record = tmp_path / 'config.json'
  workdir_record.write_text(json.dumps(json.loads(path.read_text())['config']))
  assert config_lib.recorded(config_lib.from_file(str(workdir_record))) == config_lib.recorded(
      config_lib.from_file(str(path)), ) | {'config_file': str(workdir_record)}
  with pytest.raises(Exception, match="optimzer"):
    bad = ['prog', f'--config={path}', '--config.optimzer.learning_rate=1']
    config_flag(bad)(bad)
  (tmp_path / 'other.json').write_text('{"a": 1}')
  with pytest.raises(ValueError, match=r'other.json: not a run record'):
    config_lib.from_file(str(tmp_path / 'other.json'))
  with pytest.raises(ValueError, match='a run record is one config, it takes no argument'):
    config_lib.from_file(f'{path}:mbce')


def test_the_main_jobs_config_is_its_committed_record():
  """configs/bibtex.py at seed 0, the README's main job, is the config of its committed run (the row
  mlc.MAIN_ROW), up to where the run was made from: its test F1 is that record's."""
  from experiments import mlc  # pylint: disable=import-outside-toplevel
  record = json.loads((ROOT / 'docs' / 'mlc' / 'runs' / f'bibtex-{mlc.MAIN_ROW}-seed0.json').read_text())
  assert record_differences(record['config'], load_config('bibtex')) == []


def test_every_cora_record_is_its_row_at_its_size_and_draw():
  """docs/cora.md's "config" cell names the row alone (configs/cora.py:<system>): so each committed Cora record
  must be that row at the record's labeled-set size and draw, field for field (the rows of an earlier design pin
  it: configs/cora.py)."""
  from experiments import reproduce_cora  # pylint: disable=import-outside-toplevel
  paths = sorted(reproduce_cora.RUNS.glob('cora-*.json'))
  assert len(paths) >= 100
  for path in paths:
    record = json.loads(path.read_text())
    data = record['config']['data']
    config = reproduce_cora.base_config(data['labeled'], data['draw'], data['data_dir'], reproduce_cora.system_of(path))
    assert record_differences(record['config'], config) == [], path.name


def test_every_row_of_the_results_tables_names_its_recipe():
  """Each row of the MLC (main, baselines, ablation), tagging, Cora and horses tables, in their pages and in
  docs/results.md, ends in its recipe: the config that reproduces it (a config file and a row its get_config
  accepts), or, where its records differ from today's row or no row holds their design any more (records.recipe),
  those records: committed files, each of which reruns from itself."""
  import re  # pylint: disable=import-outside-toplevel
  pages = ('mlc_results.md', 'baselines.md', 'mlc_ablation.md', 'tagging.md', 'cora.md', 'horses.md', 'results.md')
  seen, loaded, reran = {}, {}, {}
  for page in pages:
    header = None
    for line in (ROOT / 'docs' / page).read_text().splitlines():
      if not line.startswith('|'):
        header = None
        continue
      cells = [c.strip() for c in line.strip().strip('|').split('|')]
      if header is None:
        header = cells
        continue
      if set(line) <= set('|-') or header[-1] != 'config':
        continue
      seen[page] = seen.get(page, 0) + 1
      if cells[-1].startswith('– (no training'):  # Cora's rules alone
        continue
      names = re.findall(r'`([^`]+)`', cells[-1])
      assert names and (names[0].startswith('configs/') or cells[-1].startswith('its records `')), (page, line)
      for name in names:
        if name.startswith('docs/'):
          paths = sorted(ROOT.glob(name))
          assert paths and name.endswith('-seed*.json'), (page, line)
          for path in paths:
            if path not in reran:
              reran[path] = record_differences(json.loads(path.read_text())['config'],
                                               config_lib.from_file(str(path)))
            assert not reran[path], (path, reran[path])
          continue
        assert name.startswith('configs/') and ':' in name, (page, line)
        if name not in loaded:
          path, arg = name.split(':', 1)
          loaded[name] = config_lib.from_file(ROOT / path, arg=arg)
  assert all(page in seen for page in pages) and sum(seen.values()) > 300, seen
  assert len(reran) >= 100, len(reran)  # the earlier designs' (tagging 12, horses 9), the MLC rows' changed since
  for page in ('tagging.md', 'cora.md', 'horses.md'):  # results.md repeats these tables, configs and all
    assert seen['results.md'] > seen[page]


@pytest.mark.parametrize('name,row', [('bibtex', 'implicit-cd-gcr-T1-r3h'), ('delicious', 'implicit-cd'),
                                      ('genbase', 'implicit-cd'), ('cal500', 'implicit-cd'),
                                      ('spo_fun', 'implicit-cd'), ('pos', 'bilstm'), ('ner', 'bilstm'),
                                      ('ner_fixed', 'bilstm'), ('ner_plus', 'bilstm'), ('cora', 'implicit-cd'),
                                      ('horses', 'implicit-cd')])
def test_a_dataset_config_is_the_row_its_docstring_names(name, row):
  """Each dataset config as it is equals the row its docstring calls "this config as it is"."""
  assert f'{row} (this config as it is)' in ' '.join((ROOT / 'configs' / f'{name}.py').read_text().split())
  assert config_lib.recorded(load_config(name)) == config_lib.recorded(config_lib.from_file(
      ROOT / 'configs' / f'{name}.py', arg=row))


def test_every_row_of_every_family_loads_and_unknown_rows_are_named():
  from implicit_jax import methods  # pylint: disable=import-outside-toplevel
  import experiments  # pylint: disable=import-outside-toplevel
  from experiments import mlc, reproduce_tagging  # pylint: disable=import-outside-toplevel
  cora, horses, tagging = (experiments.config_rows(name) for name in ('cora', 'horses', 'pos'))
  rows = [(f'{d}.py', s) for d in ('bibtex', 'delicious') for s in mlc.ROWS] + [
      (f'{d}.py', s) for d in reproduce_tagging.DATASETS for s in tagging.SYSTEMS] + [
      ('cora.py', s) for s in cora.TRAINED] + [
      ('horses.py', f'{s},full') for s in horses.SYSTEMS if s not in horses.SEAL_ONLY] + [
      ('horses.py', f'{s},{v}') for s in horses.SYSTEMS if s not in horses.FULL_ONLY for v in horses.SEAL_VARIANTS]
  for config_file, arg in rows:
    config = config_lib.from_file(ROOT / 'configs' / config_file, arg=arg.replace(' ', '_'))
    config_lib.check(config)
    assert config.method in methods.REGISTRY
  assert config_lib.from_file(f'{ROOT / "configs" / "bibtex.py"}:mbce,resplit').data.protocol == 'resplit'
  assert config_lib.from_file(f'{ROOT / "configs" / "bibtex.py"}:mbce').num_epochs == 80  # the doubled budget
  with pytest.raises(ValueError, match="configs/bibtex.py: unknown row 'implicit-xx'; choose from .*implicit-cd"):
    config_lib.from_file(ROOT / 'configs' / 'bibtex.py', arg='implicit-xx')
  with pytest.raises(ValueError, match="unknown variant 'full' of row 'mbce'; choose from resplit"):
    config_lib.from_file(ROOT / 'configs' / 'bibtex.py', arg='mbce,full')
  with pytest.raises(ValueError, match="unknown row 'rules'"):  # computed by the script, not a trained row
    config_lib.from_file(ROOT / 'configs' / 'cora.py', arg='rules')
  assert config_lib.from_file(f'{ROOT / "configs" / "horses.py"}:fcn,seal-data').data.to_dict().items() >= {
      'split': 'seal', 'resize': 'bicubic', 'crop': 24}.items()  # SEAL's protocol on its own data
  with pytest.raises(ValueError, match="row 'seal-regression-w' is of the SEAL-protocol sections only"):
    config_lib.from_file(ROOT / 'configs' / 'horses.py', arg='seal-regression-w,full')


@pytest.mark.e2e
def test_the_command_line_takes_a_row_and_records_it(tmp_path):
  """--config=path:arg calls get_config(arg), and config.json records the flag, so that evaluate, predict and
  load_trained reload the same config; an unknown row ends in one line naming the choices."""
  from implicit_jax.engine import checkpoints  # pylint: disable=import-outside-toplevel
  config_file = tmp_path / 'rows.py'
  config_file.write_text(
      'from implicit_jax.engine import config as config_lib\n\n\n'
      'def get_config(arg=None):\n'
      f'  c = config_lib.from_file({str(ROOT / "configs" / "tiny.py")!r})\n'
      '  if arg is not None:\n'
      '    c.method = {"mbce": "feedforward"}[arg]\n'
      '  return c\n')
  env = dict(os.environ, JAX_PLATFORMS='cpu')
  flag = f'--config={config_file}:mbce'
  main = subprocess.run([sys.executable, '-m', 'implicit_jax.main', flag, f'--workdir={tmp_path / "run"}',
                         '--config.num_epochs=1'], capture_output=True, text=True, timeout=300, env=env)
  assert main.returncode == 0, main.stderr[-2000:]
  recorded = json.loads((tmp_path / 'run' / 'config.json').read_text())
  assert recorded['method'] == 'feedforward' and recorded['config_file'] == f'{config_file}:mbce'
  reloaded = checkpoints.load_config(str(tmp_path / 'run'))
  assert config_lib.recorded(reloaded) == recorded
  bad = subprocess.run([sys.executable, '-m', 'implicit_jax.main', f'--config={ROOT / "configs" / "bibtex.py"}:nope',
                        f'--workdir={tmp_path / "bad"}'], capture_output=True, text=True, timeout=300, env=env)
  assert bad.returncode == 2 and "unknown row 'nope'; choose from" in bad.stderr, bad.stderr[-2000:]
  assert 'Traceback' not in bad.stderr and not (tmp_path / 'bad').exists()


@pytest.mark.e2e
def test_a_command_line_run_records_every_override_and_its_command_makes_it_again(tmp_path):
  """``--config=configs/bibtex.py:mbce --config.method=implicit`` recorded the row 'mbce' beside method 'implicit'
  and no command line: a record naming a row it does not reproduce. The overrides are recorded, as shell words
  whose command gives the same config (a float, a tuple, a string, an int, in the order given)."""
  env = dict(os.environ, JAX_PLATFORMS='cpu')
  given = ['--config.optimizer.learning_rate=0.02', '--config.model.inference_hidden=(8, 4)',
           '--config.method=feedforward', '--config.num_epochs=1']
  first = subprocess.run([sys.executable, '-m', 'implicit_jax.main', '--config=configs/tiny.py',
                          f'--workdir={tmp_path / "first"}', *given], capture_output=True, text=True, timeout=300,
                         env=env, cwd=ROOT)
  assert first.returncode == 0, first.stderr[-2000:]
  recorded = json.loads((tmp_path / 'first' / 'config.json').read_text())
  assert recorded['config_file'] == 'configs/tiny.py'
  assert recorded['overrides'] == ['--config.optimizer.learning_rate=0.02', '--config.model.inference_hidden=(8, 4)',
                                   '--config.method=feedforward', '--config.num_epochs=1']
  again = subprocess.run([sys.executable, '-m', 'implicit_jax.main', f'--config={recorded["config_file"]}',
                          f'--workdir={tmp_path / "again"}', *recorded['overrides']], capture_output=True, text=True,
                         timeout=300, env=env, cwd=ROOT)
  assert again.returncode == 0, again.stderr[-2000:]
  assert json.loads((tmp_path / 'again' / 'config.json').read_text()) == recorded


def test_a_record_with_fields_this_version_does_not_know_is_refused_not_rewritten(tiny_run, tmp_path):
  """A config.json with a field no config of this version has (a newer version's) was resumed and rewritten
  without it, silently. Now resuming, evaluating and loading it name the file and the fields, and leave it."""
  from implicit_jax import evaluate  # pylint: disable=import-outside-toplevel
  from implicit_jax.engine import checkpoints, train  # pylint: disable=import-outside-toplevel
  workdir = tmp_path / 'run'
  shutil.copytree(tiny_run[0], workdir)  # a finished run of configs/tiny.py (2 epochs)
  config = load_config('tiny')
  path = workdir / 'config.json'
  record = json.loads(path.read_text())
  record['optimizer']['momentum_schedule'] = 'cosine'
  record['ema'] = {'decay': 0.999}
  path.write_text(json.dumps(record))
  want = (rf'^{path} holds fields this version of implicit_jax does not know \(optimizer.momentum_schedule, '
          r'ema.decay\): a newer version wrote it, or it was edited; read or resume it with the version that wrote it$')
  config.num_epochs = 3  # a resume for one more epoch
  with pytest.raises(config_lib.NewerRecord, match=want):
    train.train_and_evaluate(config, str(workdir))
  with pytest.raises(config_lib.NewerRecord, match=want):
    checkpoints.load_config(str(workdir))
  with pytest.raises(config_lib.NewerRecord, match=want):
    evaluate.evaluate_run(str(workdir))
  assert json.loads(path.read_text()) == record


def test_the_engine_imports_downward_only():
  """engine/ imports neither the tasks nor the methods (they reach it through engine/registry.py's Plugins), and
  nothing inside a function or class: its imports are all at the top, where a cycle would show at once."""
  import ast  # pylint: disable=import-outside-toplevel
  upward = {'implicit_jax.methods', 'implicit_jax.tasks'}
  found = []
  for path in sorted((ROOT / 'implicit_jax' / 'engine').glob('*.py')):
    tree = ast.parse(path.read_text())
    scoped = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    inner = {id(n) for s in ast.walk(tree) if isinstance(s, scoped) for n in ast.walk(s) if n is not s}
    for node in ast.walk(tree):
      if not isinstance(node, (ast.Import, ast.ImportFrom)):
        continue
      names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
               [node.module or ''] + [f'{node.module}.{a.name}' for a in node.names])
      if any(n == u or n.startswith(f'{u}.') for n in names for u in upward):
        found.append(f'{path.name}:{node.lineno} imports {names}')
      if id(node) in inner:
        found.append(f'{path.name}:{node.lineno} imports inside a function or class')
  assert not found, found
