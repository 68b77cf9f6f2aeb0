r"""Your own multi-label file (MULAN/MEKA ARFF, or Clus with data.format=clus): implicit CD, or MBCE with the
argument mbce, each with the defaults chosen on dev across every shipped multi-label dataset and two scaled fixtures
(docs/custom_defaults.md, scripts/custom_defaults.py). The one route for a file of your own: a shipped dataset's
config (configs/bibtex.py, ...) holds the settings chosen on that dataset and refuses data.name=custom.

Run: python -m implicit_jax.main --config=configs/custom.py --workdir=/tmp/implicit_jax/mine \
       --config.data.train_file=PATH/train.arff [--config.data.test_file=PATH/test.arff] \
       [--config.data.xml_file=PATH/labels.xml | --config.data.num_labels=L]
     --config=configs/custom.py:mbce for the MBCE baseline (its own dropout, learning rate and length).
Tune on your dev split: python -m implicit_jax.tune --config=configs/custom.py[:mbce] --workdir=DIR \
       --config.data.train_file=... --budget_minutes=30   (docs/usage.md: the trials, the budget, resuming)
Features are standardised by train statistics unless binary or sparse (data.standardise='auto'); without a test
file the rows are split 60/20/20, stratified, by data.split_seed.
"""

from implicit_jax.engine import config as config_lib
from implicit_jax.experiments import mlc


def get_config(arg=None):
  c = config_lib.from_file('bibtex.py', relative_to=__file__, arg='base')  # bibtex's networks and implicit design
  c.data.name = 'custom'
  if arg not in (None, 'mbce'):
    raise ValueError(f'configs/custom.py:{arg}: the argument is mbce (the MBCE baseline) or none (implicit CD)')
  variant, epochs = mlc.CUSTOM['feedforward' if arg == 'mbce' else 'implicit']
  c.update_from_flattened_dict(mlc.CUSTOM_GRID[variant])
  c.num_epochs = epochs
  return c
