"""configs/custom.py's defaults are the choice of experiments/custom_defaults.py on the committed records, and that
choice follows its stated rule (least mean regret across datasets, then the fewest epochs within the tolerance)."""

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from implicit_jax.engine import config as config_lib  # pylint: disable=wrong-import-position
from implicit_jax import tune  # pylint: disable=wrong-import-position
from experiments import custom_defaults  # pylint: disable=wrong-import-position

ROOT = Path(__file__).resolve().parents[1]


def _record(dev_curve):
  return {'history': [{'epoch': e + 1, 'dev_f1': d, 'dev_f1_tuned': d + 0.01} for e, d in enumerate(dev_curve)]}


def test_a_budget_scores_the_epoch_a_run_of_that_length_would_select():
  curve = np.full(80, 0.30)
  curve[9], curve[30], curve[70] = 0.40, 0.45, 0.45  # a tie later than 40 keeps the first
  record = _record(list(curve))
  assert custom_defaults.at_budget(record, 20)[0] == pytest.approx(40.0)
  assert custom_defaults.at_budget(record, 40)[0] == pytest.approx(45.0)
  assert custom_defaults.at_budget(record, 80) == pytest.approx((45.0, 46.0))
  assert np.isnan(custom_defaults.at_budget(_record([0.3] * 40), 80)[0])  # a shorter run has no 80-epoch score


def test_the_choice_is_the_least_mean_regret_then_the_shortest_budget_within_the_tolerance(monkeypatch):
  monkeypatch.setattr(custom_defaults, 'DATASETS', {'a': ({}, (0,)), 'b': ({}, (0,)), 'c': ({}, (0,))})
  monkeypatch.setattr(custom_defaults, 'VARIANTS', {'mbce-x': {}, 'mbce-y': {}, 'cd-x': {}})
  dev = {  # (dataset, variant): dev @0.5 at 20, 40, 80 epochs
      ('a', 'mbce-x'): (40.0, 41.0, 41.1), ('b', 'mbce-x'): (60.0, 60.0, 60.0),
      ('a', 'mbce-y'): (42.0, 42.0, 42.0), ('b', 'mbce-y'): (58.0, 58.5, 58.6),
      ('a', 'cd-x'): (30.0, 35.0, 36.0), ('b', 'cd-x'): (50.0, 50.0, 50.0),
      ('c', 'mbce-y'): (10.0, 10.0, 10.0)}  # only one variant ran on c: not in the comparison
  table = {(d, v, b): (score, score, 1) for (d, v), scores in dev.items() for b, score in zip((20, 40, 80), scores)}
  regrets = custom_defaults.regrets(table)
  assert custom_defaults.common_datasets(table, 'mbce') == ['a', 'b']
  # mbce-x: a best 42.0 -> 0.9 at 80; b best 60.0 -> 0; mean 0.45. mbce-y: 0 and 1.4, mean 0.7
  assert regrets['mbce-x', 80] == (pytest.approx(0.45), 2) and regrets['mbce-y', 80] == (pytest.approx(0.7), 2)
  # mbce-x at 40 epochs: (1.0 + 0) / 2 = 0.5, within 0.25 of 0.45; at 20: 1.0, not
  assert custom_defaults.choose(table) == {'cd': ('cd-x', 80), 'mbce': ('mbce-x', 40)}


def test_configs_custom_holds_the_choice_of_the_committed_records():
  chosen = custom_defaults.choose(custom_defaults.scores(custom_defaults.TABLES[0].load()))
  assert chosen == {'cd': custom_defaults.CUSTOM['implicit'], 'mbce': custom_defaults.CUSTOM['feedforward']}
  for arg, method in ((None, 'implicit'), ('mbce', 'feedforward')):
    config = config_lib.from_file(ROOT / 'configs' / 'custom.py', arg=arg)
    flat = config_lib.flatten(config.to_dict())
    variant, epochs = custom_defaults.CUSTOM[method]
    assert config.num_epochs == epochs and config.method == method
    assert all(flat[k] == v for k, v in custom_defaults.VARIANTS[variant].items()), variant
  with pytest.raises(ValueError, match='configs/custom.py:cd: the argument is mbce'):
    config_lib.from_file(ROOT / 'configs' / 'custom.py', arg='cd')


def test_the_tuners_space_holds_every_setting_of_the_grid():
  """The tuner's search (implicit_jax/tune.py, SPACE) covers the dropout and learning rates the grid tried for each
  method, so that a tune can reach every variant the defaults were chosen among."""
  methods = {'mbce': 'feedforward', 'cd': 'implicit'}
  for variant, settings in custom_defaults.VARIANTS.items():
    space = {key: (kind, bounds) for key, kind, bounds in tune.SPACE[methods[variant.split('-')[0]]]}
    for key, value in settings.items():
      if key in space and space[key][0] in ('log', 'float'):
        low, high = space[key][1]
        assert low <= value <= high, (variant, key, value)


def test_a_run_of_the_grid_is_its_committed_record_as_implicit_jax_main_made_it(monkeypatch):
  """Each run goes through implicit_jax.runner: the run of a committed record names it (so it is not made again),
  and its config is the record's (configs/custom.py with the run's flags, which the record's command repeats),
  built wherever the script runs."""
  import json  # pylint: disable=import-outside-toplevel
  from experiments import records  # pylint: disable=import-outside-toplevel
  monkeypatch.chdir('/')
  for dataset, variant, seed in (('scaled', 'cd-d0.2-gcr1', 1), ('cal500', 'mbce-d0.5-lr0.003', 2)):
    run = custom_defaults.run_of(dataset, variant, seed, 80, '../shared/data')
    committed = json.loads(run.record.read_text())
    built = json.loads(records.portable_record(json.dumps(config_lib.upgrade(config_lib.recorded(run.build())))))
    assert custom_defaults.command_of(built) == committed['command']
    assert dataset != 'scaled' or Path(run.build().data.train_file).is_file()  # read from the checkout, from /
    # the record read in today's format (its implicit.solver.refresh is implicit.solver.reuse now)
    old, new = config_lib.flatten(config_lib.upgrade(committed['config'])), config_lib.flatten(built)
    differ = {k for k in old | new if old.get(k) != new.get(k)}
    assert differ <= set(new) - set(old), differ  # only fields added since (checkpoint_epoch_ends, ...)
