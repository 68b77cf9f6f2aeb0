"""The Weizmann horses rows: ``configs/horses.py:<system>[,full]`` (docs/horses.md, scripts/reproduce_horses.py).
Without a variant, configs/horses.py as committed (half the published channels, 12 epochs: every method on a 2-core
CPU); ``full``: the published channels and 100 epochs (docs/horses.md's section "At the published width", the
``--scale=full`` runs; the FCN's dev curve still rose at 100 epochs, hence ``fcn-200,full``)."""

from __future__ import annotations

from implicit_jax import experiments

_BEFORE = {'implicit.inner_steps': 2, 'implicit.inner_optimizer.learning_rate': 1.5e-3,
           'implicit.solver.name': 'minres', 'implicit.solver.iterations': 3}
# system -> (label, config overrides). Order = table order.
SYSTEMS = {
    'fcn': ('FCN (cross-entropy)', {'method': 'feedforward'}),
    # The FCN's dev curve was still rising at 100 epochs at full width (',full'): the same at twice the epochs. A row
    # of the ',full' section only (FULL_ONLY).
    'fcn-200': ('FCN (cross-entropy), 200 epochs', {'method': 'feedforward', 'num_epochs': 200}),
    'dvn': ('DVN (GBI, soft-IoU regression)', {'method': 'dvn'}),
    'seal-regression': ('SEAL-dynamic (regression)', {'method': 'seal_dynamic', 'seal.energy_loss': 'regression'}),
    'seal-nce': ('SEAL-dynamic (NCE)', {'method': 'seal_dynamic', 'seal.energy_loss': 'nce'}),
    'implicit-cd': ('implicit CD (1 - soft IoU; T_inner 2, gcr)', {'method': 'implicit',
                                                                   'implicit.primary_loss': 'cd'}),
    # One inner step at the FCN's rate with one GCR pass: the cheapest step, but under the former rows on dev on
    # every seed (-5.27, -1.85, -4.57 IoU), so not the default.
    'implicit-cd-t1-gcr': ('implicit CD, T_inner 1, gcr', {'method': 'implicit', 'implicit.primary_loss': 'cd',
                                                           'implicit.inner_steps': 1, 'implicit.solver.name': 'gcr',
                                                           'implicit.solver.iterations': 1,
                                                           'implicit.inner_optimizer.learning_rate': 3e-3}),
    # The design of configs/horses.py until 2026-11-26 (two inner steps, MINRES with 3 HVPs), spelled out so that
    # these rows' records stay reproducible.
    'implicit-cd-before': ('implicit CD, before (T_inner 2, minres)', {'method': 'implicit',
                                                                       'implicit.primary_loss': 'cd', **_BEFORE}),
    'implicit-dvn': ('implicit DVN-style regression (T_inner 2, minres)', {'method': 'implicit',
                                                                           'implicit.primary_loss': 'dvn', **_BEFORE}),
}
# SEAL's crop protocol (tasks/segmentation, data.crop): random 24x24 windows in training, each prediction averaged
# over 36 windows at test. A '<system>-crops' row is its system with the crops and nothing else changed (flips
# stay: SEAL's reader has none, --config.data.flip=False would match it). scripts/reproduce_horses.py runs them only
# when named in --systems.
CROPS = {'data.crop': 24}
CROPPED = ('fcn', 'dvn', 'seal-regression', 'seal-nce', 'implicit-cd')
SYSTEMS.update({f'{s}-crops': (f'{SYSTEMS[s][0]}, 24x24 crops', {**SYSTEMS[s][1], **CROPS}) for s in CROPPED})
CROPS_SYSTEMS = tuple(f'{s}-crops' for s in CROPPED)
# Rows of the ',full' section only (a schedule the half-width CPU section does not run).
FULL_ONLY = ('fcn-200',)
VARIANTS = {
    'full': {'model.channels': (64, 128, 128), 'model.energy_channels': (64, 128, 128), 'num_epochs': 100},
}


def apply(config, arg: str | None):
  """``config`` (configs/horses.py's) with the row ``arg`` = ``SYSTEM[,full]`` applied; as it is for no ``arg``."""
  if not arg:
    return config
  system, variants = experiments.parse(arg, SYSTEMS, VARIANTS, 'configs/horses.py')
  if system in FULL_ONLY and 'full' not in variants:
    raise ValueError(f'configs/horses.py: row {system!r} is of the published-width section only: {system},full')
  for variant in variants:  # the scale first, as scripts/reproduce_horses.py applied it
    config.update_from_flattened_dict(VARIANTS[variant])
  config.update_from_flattened_dict(SYSTEMS[system][1])
  return config


def config_name(system: str, scale: str = 'half') -> str:
  return f'configs/horses.py:{system}' + (f',{scale}' if scale != 'half' else '')
