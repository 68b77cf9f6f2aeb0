r"""Tiny CPU config of the synthetic tagging task for tests: seconds per method.

Run: python -m implicit_jax.main --config=configs/tiny_tagging.py --workdir=/tmp/implicit_jax/tiny_tagging
"""

from implicit_jax.engine import config as config_lib


def get_config():
  c = config_lib.from_file('tagging.py', relative_to=__file__)
  c.data.num_tags = 4
  c.data.vocab_size = 24
  c.data.min_length = 3
  c.data.max_length = 12
  c.data.buckets = (6,)
  c.data.num_train = 256
  c.data.num_dev = 64
  c.data.num_test = 128
  c.model.embedding_dim = 16
  c.model.hidden = 16
  c.model.energy_hidden = 16
  c.implicit.inner_steps = 2
  c.implicit.solver.iterations = 3
  c.implicit.negatives.num_samples = 2
  c.optimizer.learning_rate = 1e-2
  c.implicit.inner_optimizer.learning_rate = 1e-2
  c.infnet.inference_optimizer.learning_rate = 1e-2
  c.batch_size = 16
  c.eval_batch_size = 64
  c.num_epochs = 3
  c.log_every = 8
  return c
