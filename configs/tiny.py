r"""Tiny CPU config for tests: the default, shrunk to run in seconds.

Run: python -m implicit_jax.main --config=configs/tiny.py --workdir=/tmp/implicit_jax/tiny
"""

from implicit_jax.engine import config as config_lib


def get_config():
  c = config_lib.from_file('default.py', relative_to=__file__)
  c.data.num_features = 8
  c.data.num_groups = 2
  c.data.group_size = 3
  c.data.num_train = 128
  c.data.num_dev = 64
  c.data.num_test = 64
  c.model.inference_hidden = (16,)
  c.model.energy_feature_hidden = (16,)
  c.model.energy_feature_dim = 16
  c.model.global_hidden = 4
  c.implicit.inner_steps = 2
  c.implicit.solver.iterations = 3
  c.optimizer.learning_rate = 1e-2       # few steps: a larger rate than the default's
  c.implicit.inner_optimizer.learning_rate = 1e-2
  c.batch_size = 16
  c.num_epochs = 2
  c.log_every = 4
  return c
