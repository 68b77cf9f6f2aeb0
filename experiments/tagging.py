"""The sequence-labeling tables' rows (docs/tagging.md, reproduce_tagging.py; the benchmarks time them):
``configs/<dataset>.py:<system>``, as configs/pos.py writes them for every dataset. Today's design only: runs of an
earlier one are reproduced from their own records (docs/tagging.md names them)."""

import experiments

DATASETS = ('pos', 'ner', 'ner_fixed', 'ner_plus')
# system -> (label, config overrides), in table order; TRIED_ON: the rows tried on some datasets only.
SYSTEMS, TRIED_ON = experiments.config_rows('pos').SYSTEMS, experiments.config_rows('pos').TRIED_ON


def systems(dataset: str) -> list[str]:
  """``dataset``'s rows, in table order: SYSTEMS but those tried on other datasets only (TRIED_ON)."""
  return [s for s in SYSTEMS if dataset in TRIED_ON.get(s, (dataset,))]


def config_name(dataset: str, system: str) -> str:
  return f'configs/{dataset}.py:{system}'
