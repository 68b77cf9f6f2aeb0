"""The Weizmann horses rows: ``configs/horses.py:<system>[,full]`` (docs/horses.md, scripts/reproduce_horses.py).
Without a variant, configs/horses.py as committed (half the published channels, 12 epochs: every method on a 2-core
CPU); ``full``: the published channels and a schedule long enough for every dev curve to flatten."""

from __future__ import annotations

from implicit_jax import experiments

_BEFORE = {'implicit.inner_steps': 2, 'implicit.inner_optimizer.learning_rate': 1.5e-3,
           'implicit.solver.name': 'minres', 'implicit.solver.iterations': 3}
# system -> (label, config overrides). Order = table order.
SYSTEMS = {
    'fcn': ('FCN (cross-entropy)', {'method': 'feedforward'}),
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
VARIANTS = {
    'full': {'model.channels': (64, 128, 128), 'model.energy_channels': (64, 128, 128), 'num_epochs': 100},
}


def apply(config, arg: str | None):
  """``config`` (configs/horses.py's) with the row ``arg`` = ``SYSTEM[,full]`` applied; as it is for no ``arg``."""
  if not arg:
    return config
  system, variants = experiments.parse(arg, SYSTEMS, VARIANTS, 'configs/horses.py')
  for variant in variants:  # the scale first, as scripts/reproduce_horses.py applied it
    config.update_from_flattened_dict(VARIANTS[variant])
  config.update_from_flattened_dict(SYSTEMS[system][1])
  return config


def config_name(system: str, scale: str = 'half') -> str:
  return f'configs/horses.py:{system}' + (f',{scale}' if scale != 'half' else '')
