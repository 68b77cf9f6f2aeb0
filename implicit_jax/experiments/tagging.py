"""The sequence-labeling rows: ``configs/<dataset>.py:<system>`` for pos, ner, ner_fixed and ner_plus
(docs/tagging.md, scripts/reproduce_tagging.py). Every row is the dataset config with the system's overrides; the
table shows each under its label. Today's design only: runs of an earlier one are reproduced from their own records
(docs/tagging.md names them)."""

from __future__ import annotations

from implicit_jax import experiments

DATASETS = ('pos', 'ner', 'ner_fixed', 'ner_plus')
_PLUS = {'method': 'infnet_plus', 'infnet.truncate': False}
# system -> (label, config overrides). Order = table order.
SYSTEMS = {
    'bilstm': ('BiLSTM (cross-entropy)', {'method': 'feedforward'}),
    # The two that predict from the energy alone train it with dropout on its encoder, as the inference nets
    # have on theirs: POS dev 82.42 -> 84.09 (CRF), 82.47 -> 84.33 (SPEN), sweep pos-energy-dropout.
    'crf': ('BiLSTM-CRF (forward algorithm, Viterbi)', {'method': 'crf', 'model.energy_dropout': 0.5}),
    'spen': ('SPEN (GBI, mirror descent)', {'method': 'spen', 'model.energy_dropout': 0.5}),
    'infnet': ('InfNet (2018)', {'method': 'infnet'}),
    'infnet-plus-separated': ('InfNet+ separated', {**_PLUS, 'infnet.parameterization': 'separated'}),
    'infnet-plus-shared': ('InfNet+ shared', {**_PLUS, 'infnet.parameterization': 'shared'}),
    'infnet-plus-stacked': ('InfNet+ stacked', {**_PLUS, 'infnet.parameterization': 'stacked'}),
    # InfNet+ Table 4: the stacked compound objective with global energies added to the energy (models.py).
    'infnet-plus-stacked-ge-a': ('InfNet+ stacked + GE(a)', {**_PLUS, 'infnet.parameterization': 'stacked',
                                                            'model.global_energy': 'a'}),
    'infnet-plus-stacked-ge-b': ('InfNet+ stacked + GE(b)', {**_PLUS, 'infnet.parameterization': 'stacked',
                                                            'model.global_energy': 'b'}),
    'infnet-plus-stacked-ge-c': ('InfNet+ stacked + GE(c)', {**_PLUS, 'infnet.parameterization': 'stacked',
                                                            'model.global_energy': 'c'}),
    'seal-margin': ('SEAL-dynamic (margin)', {'method': 'seal_dynamic', 'seal.energy_loss': 'margin'}),
    'seal-nce': ('SEAL-dynamic (NCE)', {'method': 'seal_dynamic', 'seal.energy_loss': 'nce'}),
    # Its reused term (POS) picked inside one program, as its runs were made (refresh_by came after them).
    'implicit-ssvm': ('implicit SSVM (T_inner 1, gcr)', {'method': 'implicit', 'implicit.primary_loss': 'ssvm',
                                                         'implicit.solver.refresh_by': 'program'}),
    'implicit-cd': ('implicit CD (T_inner 1, gcr)', {'method': 'implicit', 'implicit.primary_loss': 'cd'}),
    # POS and NER: the term on every step, before configs/pos.py (2026-11-26) and ner.py (2026-11-27) reused it for
    # two steps of three (refresh 3; refresh_by has no effect at 1, and these runs predate it).
    'implicit-cd-r1': ('implicit CD (T_inner 1, gcr, the term every step)',
                       {'method': 'implicit', 'implicit.primary_loss': 'cd', **experiments.EVERY_STEP}),
}


def apply(config, arg: str | None, where: str = 'configs/pos.py'):
  """``config`` (a tagging dataset config) with the row ``arg`` = ``SYSTEM`` applied; as it is for no ``arg``."""
  if not arg:
    return config
  system, _ = experiments.parse(arg, SYSTEMS, (), where)
  config.update_from_flattened_dict(SYSTEMS[system][1])
  return config


def config_name(dataset: str, system: str) -> str:
  return f'configs/{dataset}.py:{system}'
