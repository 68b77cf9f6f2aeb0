r"""Digits (examples/digits/digits.py, a task outside the package): the implicit method with the CD loss on
scikit-learn's handwritten digits.

Run from the repository root, the task's folder on PYTHONPATH:
  PYTHONPATH=examples/digits python -m implicit_jax.main --config=examples/digits/config.py --workdir=/tmp/digits
  (--config.method=feedforward for the cross-entropy baseline)
"""

from implicit_jax.engine import config as config_lib


def get_config():
  c = config_lib.base_config(task='digits', method='implicit')
  c.implicit.primary_loss = 'cd'
  c.implicit.cost = 'hamming'      # 1/2 sum |y_bar - y|: the 0/1 error on one-hot outputs
  c.implicit.negatives.num_samples = 3
  c.implicit.inner_steps = 1
  c.implicit.solver.name = 'gcr'   # one fused pass for the implicit term
  c.implicit.solver.iterations = 1
  c.optimizer.learning_rate = c.implicit.inner_optimizer.learning_rate = 3e-3  # 1e-3 was still improving at 20
  c.batch_size = 32
  c.num_epochs = 20
  c.log_every = 50
  return c
