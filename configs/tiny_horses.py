r"""Tiny CPU config of the segmentation task for tests: the 12 generated pairs of tests/fixtures/horses at 16x16,
narrow networks, seconds per method.

Run: python -m implicit_jax.main --config=configs/tiny_horses.py --workdir=/tmp/implicit_jax/tiny_horses
"""

from pathlib import Path

from implicit_jax.engine import config as config_lib


def get_config():
  c = config_lib.from_file('horses.py', relative_to=__file__)
  c.data.data_dir = str(Path(__file__).resolve().parents[1] / 'tests' / 'fixtures' / 'horses')
  c.data.size = 16
  c.data.num_train = 6
  c.data.num_dev = 3
  c.model.channels = (4, 8, 8)
  c.model.energy_channels = (4, 8, 8)
  c.model.energy_hidden = (16,)
  c.implicit.unroll = False  # tiny convolutions: loops compile faster and cost nothing here
  c.gbi.unroll = False
  c.gbi.steps = 3
  c.seal.num_samples = 2
  c.batch_size = 3
  c.eval_batch_size = 3
  c.num_epochs = 2
  c.log_every = 2
  return c
