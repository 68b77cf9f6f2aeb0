"""The sequence-labeling tables' rows: ``configs/<dataset>.py:<system>`` for pos, ner, ner_fixed and ner_plus
(docs/tagging.md, reproduce_tagging.py), as configs/pos.py writes them: every row is the dataset config with the
system's overrides; the table shows each under its label. Today's design only: runs of an earlier one are reproduced
from their own records (docs/tagging.md names them)."""

from __future__ import annotations

import experiments

DATASETS = ('pos', 'ner', 'ner_fixed', 'ner_plus')
# system -> (label, config overrides). Order = table order.
SYSTEMS = experiments.config_rows('pos').SYSTEMS
TRIED_ON = experiments.config_rows('pos').TRIED_ON


def systems(dataset: str) -> list[str]:
  """``dataset``'s rows, in table order: SYSTEMS but those tried on other datasets only (TRIED_ON)."""
  return [s for s in SYSTEMS if dataset in TRIED_ON.get(s, (dataset,))]


def config_name(dataset: str, system: str) -> str:
  return f'configs/{dataset}.py:{system}'
