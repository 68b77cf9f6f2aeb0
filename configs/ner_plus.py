r"""CoNLL-2003 English NER+ (implicit_jax/tasks/tagging, data.name='conll2003', data.features): NER with three more
inputs per token, each an embedding concatenated to the word's: the capitalisation of its first letter, its POS tag
and its chunk tag (the file's columns 2 and 3; ids from the training split, unseen values share one id). Otherwise
configs/ner.py: 17 BIOES tags, strict chunk F1 selects the best epoch. CoNLL-2003 is research-use text: point
data_dir at your copy, never copy it into the repository.

Run:    python -m implicit_jax.main --config=configs/ner_plus.py --config.data.data_dir=../shared/data \
            --workdir=/tmp/implicit_jax/ner_plus
Others: --config.method=implicit | crf | spen | infnet | infnet_plus | seal_dynamic; experiments/reproduce_tagging.py
        --dataset=ner_plus runs them all (docs/tagging.md).
Rows:   --config=configs/ner_plus.py:ROW trains a row of docs/tagging.md (its config column names the ROW), seed K
        with --config.seed=K. ROW: a system of configs/pos.py's SYSTEMS, e.g. bilstm (this config as it
        is), crf, infnet-plus-stacked, implicit-cd. The rows of an earlier design ("before") are rerun from
        their records: --config=docs/tagging/runs/<run>.json.
"""

from implicit_jax.engine import config as config_lib
from implicit_jax.engine import rows


def get_config(arg=None):
  c = config_lib.from_file('ner.py', relative_to=__file__)
  c.data.features = ('caps', 'pos', 'chunk')
  c.model.feature_dim = 16
  if arg:  # a row of the sequence-labeling tables (configs/pos.py's SYSTEMS)
    rows.load_module('pos.py', relative_to=__file__).row(c, arg, 'configs/ner_plus.py')
  # The term every step, as every row of this file ran: ner.py's reuse of it was checked on NER dev only. Set after
  # the row: configs/pos.py's implicit-ssvm reuses the term in one program ('r3'), as it ran on POS and NER; here it
  # ran on every step.
  c.implicit.solver.reuse = 'none'
  return c
