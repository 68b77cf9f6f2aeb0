"""The Weizmann horses tables' rows, ``configs/horses.py:<system>[,VARIANT]`` (docs/horses.md, reproduce_horses.py),
as configs/horses.py writes them: without a variant the config as committed (half the published channels, 12 epochs:
every method on a 2-core CPU); ``full`` the published channels and 100 epochs (the section "At the published width");
``seal`` and ``seal-data`` SEAL's protocol. Today's design only: runs of an earlier one are reproduced from their own
records (docs/horses.md names them)."""

import experiments

_CONFIG = experiments.config_rows('horses')
SYSTEMS, VARIANTS, SEAL_SETTINGS = _CONFIG.SYSTEMS, _CONFIG.VARIANTS, _CONFIG.SEAL_SETTINGS  # SYSTEMS in table order
CROPPED, CROPS_SYSTEMS = _CONFIG.CROPPED, _CONFIG.CROPS_SYSTEMS
FULL_ONLY, SEAL_ONLY, SEAL_VARIANTS = _CONFIG.FULL_ONLY, _CONFIG.SEAL_ONLY, _CONFIG.SEAL_VARIANTS
overrides, row = _CONFIG.overrides, _CONFIG.row


def config_name(system: str, scale: str = 'half') -> str:
  return f'configs/horses.py:{system}' + (f',{scale}' if scale != 'half' else '')
