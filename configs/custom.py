r"""Your own multi-label file (MULAN/MEKA ARFF, or Clus with data.format=clus): implicit CD, or MBCE with the
argument mbce, each with the defaults chosen on dev across every shipped multi-label dataset and two scaled fixtures
(docs/custom_defaults.md, experiments/custom_defaults.py). The one route for a file of your own: a shipped dataset's
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


def get_config(arg=None):
  if arg not in (None, 'mbce'):
    raise ValueError(f'configs/custom.py:{arg}: the argument is mbce (the MBCE baseline) or none (implicit CD)')
  c = config_lib.from_file('bibtex.py', relative_to=__file__)  # bibtex's networks
  c.data.name = 'custom'
  c.chosen_on = ''  # chosen across the shipped datasets, not on bibtex (below)
  # The variant of each method with the least mean regret on dev across the shipped datasets and two scaled fixtures
  # (docs/custom_defaults.md; tests/test_custom_defaults.py checks that these are its choice): implicit CD with
  # dropout 0.2 and one fused GCR pass after five inner Adam steps at 3e-4, the term solved on every step, 80 epochs;
  # MBCE without dropout at 3e-3 for 40.
  c.model.dropout = 0.2
  c.implicit.inner_steps = 5
  c.implicit.inner_optimizer.learning_rate = 3e-4
  c.implicit.solver.name = 'gcr'
  c.implicit.solver.iterations = 1
  c.implicit.solver.reuse = 'none'
  c.num_epochs = 80
  if arg == 'mbce':
    c.update_from_flattened_dict({'method': 'feedforward', 'model.dropout': 0.0, 'optimizer.learning_rate': 3e-3,
                                  'num_epochs': 40})
  return c
