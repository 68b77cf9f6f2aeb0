r"""Synthetic sequence labeling (implicit_jax/tasks/tagging/synthetic.py): the implicit method with the CD loss on
generated HMM sentences of 4-24 tokens, 6 tags, a known tag-transition structure and a known best answer
(recorded in metrics.json's task_info: bayes_accuracy, word_only_accuracy, majority_accuracy). No data files.

Run:    python -m implicit_jax.main --config=configs/tagging.py --workdir=/tmp/implicit_jax/tagging
Others: --config.method=feedforward|spen|infnet|... , --config.model.encoder=bilstm
"""

from implicit_jax.engine import config as config_lib


def get_config():
  c = config_lib.base_config(task='tagging', method='implicit')
  c.implicit.primary_loss = 'cd'
  c.implicit.cost = 'hamming'
  c.implicit.negatives.num_samples = 3
  c.implicit.inner_optimizer.learning_rate = 3e-3
  c.optimizer.learning_rate = 3e-3
  c.gbi.rule = 'mirror'         # GBI (spen, dvn, rspen, nce_gbi, seal_static) on the simplices
  c.gbi.step_size = 1.0
  c.batch_size = 32
  c.num_epochs = 10
  c.log_every = 50
  return c
