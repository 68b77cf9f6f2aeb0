"""The Cora table's rows: ``configs/cora.py:<system>`` (docs/cora.md, reproduce_cora.py), as configs/cora.py writes
them. A run also sets the labeled-set size and its draw, ``--config.data.labeled=N --config.data.draw=K
--config.seed=K`` (the labeled subset and the run's initialisation vary together)."""

import experiments

_CONFIG = experiments.config_rows('cora')
# system -> (label, overrides; None: no training, computed by reproduce_cora.py), in table order; TRAINED: the others.
SYSTEMS, TRAINED = _CONFIG.SYSTEMS, _CONFIG.TRAINED


def config_name(system: str) -> str:
  return f'configs/cora.py:{system}'
