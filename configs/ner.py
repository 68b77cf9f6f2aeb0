r"""CoNLL-2003 English NER, words only (implicit_jax/tasks/tagging, data.name='conll2003'): a feedforward tagger
(per-token softmax, cross-entropy) over the 17 BIOES tags; train eng.train (14041 sentences), dev eng.testa (3250),
test eng.testb (3453); strict chunk F1 selects the best epoch (precision, recall and token accuracy recorded beside
it). The vocabulary is the training words and the dev/test words with a GloVe vector (others are UNK). CoNLL-2003
is research-use text: point data_dir at your copy, never copy it into the repository.

Run:    python -m implicit_jax.main --config=configs/ner.py --config.data.data_dir=../shared/data \
            --workdir=/tmp/implicit_jax/ner
Others: --config.method=implicit (CD loss, Hamming cost) | crf | spen | infnet | infnet_plus | seal_dynamic;
        python -m experiments.reproduce_tagging --dataset=ner runs them over seeds (docs/tagging.md).
Rows:   --config=configs/ner.py:ROW trains a row of docs/tagging.md (its config column names the ROW), seed K
        with --config.seed=K. ROW: a system of configs/pos.py's SYSTEMS, e.g. bilstm (this config as it
        is), crf, infnet-plus-stacked, implicit-cd. The rows of an earlier design ("before") are rerun from
        their records: --config=docs/tagging/runs/<run>.json.
Sizes and schedule are Twitter POS's (configs/pos.py, with cased words), not tuned on NER dev; as there, the CRF and
SPEN rows add --config.model.energy_dropout=0.5 (CRF dev 91.45 -> 91.89,
docs/tagging/sweeps/ner-energy-dropout.md).
"""

from implicit_jax.engine import config as config_lib
from implicit_jax.engine import rows


def get_config(arg=None):
  # Twitter POS's settings (the energy-based methods' sections too), sized for CoNLL's longer sentences.
  c = config_lib.from_file('pos.py', relative_to=__file__)
  c.data.name = 'conll2003'
  # POS's reused term ('r3h': every third step, two programs the host picks), checked on NER dev: strict F1 -0.13 /
  # -0.03 / +0.27 against the term every step (row implicit-cd-r1) on seeds 0-2, at 1.9x InfNet+ stacked's step
  # against 3.4x (docs/tagging.md, docs/benchmarks.md)
  c.data.lowercase = False      # names are capitalised: keep case in the vocabulary (GloVe is looked up lower-cased)
  c.data.buckets = (16, 32, 48, 64)  # sentences have 1-124 tokens (median 10; 99% at most 49)
  c.model.hidden = 128
  c.model.energy_hidden = 128
  c.eval_batch_size = 512
  c.num_epochs = 10
  c.log_every = 100             # 438 steps per epoch
  if arg:  # a row of the sequence-labeling tables (configs/pos.py's SYSTEMS)
    rows.load_module('pos.py', relative_to=__file__).row(c, arg, 'configs/ner.py')
  return c
