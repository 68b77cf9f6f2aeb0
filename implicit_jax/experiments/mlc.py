"""The multi-label rows: ``configs/<dataset>.py:<system>`` for bibtex, delicious, genbase, cal500 and spo_fun.

``SYSTEMS`` are the rows of docs/mlc_results.md and docs/mlc_ablation.md (scripts/reproduce_mlc.py,
scripts/ablation_mlc.py), ``BASELINES`` the other methods of docs/baselines.md (scripts/compare_methods.py). A
row is today's design: the dataset config, the row's overrides, the settings chosen for it on that dataset's dev
(``DEV_CHOSEN``), and its epoch budget, which the dataset config names (``apply``). Variant ``resplit``: the
paper's protocol (all rows pooled, stratified 60/20/20 by the seed).

A committed run is reproduced from its own record, not from its row: ``python -m implicit_jax.main
--config=docs/mlc/runs/<run>.json`` (``engine/config.py``'s ``from_record``). A row that changed after its runs
were made names today's design; each run's record keeps what it ran.
"""

from __future__ import annotations

from pathlib import Path

from implicit_jax import experiments
from implicit_jax.experiments import records
from implicit_jax.tasks.mlc.datasets import PROTOCOLS

DATASETS = ('bibtex', 'delicious', 'genbase', 'cal500', 'spo_fun')
_CD = {'method': 'implicit', 'implicit.primary_loss': 'cd'}
# normal_cg with 5 iterations (11 HVPs): the solver of the MLC configs other than bibtex.py (bibtex's fused GCR pass,
# 'implicit-cd-gcr', was chosen on bibtex dev only), and of the rows below, which the tables show beside the GCR row
# on bibtex (docs/mlc_results.md, docs/mlc_ablation.md).
NORMAL_CG = {'implicit.solver.name': 'normal_cg', 'implicit.solver.iterations': 5}
_H400 = {'model.inference_hidden': (400, 400)}
# One inner step at 1.5e-3, the term by one GCR pass on every third step and reused in between, 80 epochs: the main
# job's design (rows implicit-cd-gcr-T1-r3 and -r3h below).
_T1_R3 = {**_CD, 'implicit.solver.name': 'gcr', 'implicit.solver.iterations': 1, 'implicit.inner_steps': 1,
          'implicit.inner_optimizer.learning_rate': 1.5e-3, 'implicit.solver.refresh': 3, 'num_epochs': 80}
# system name -> config overrides (applied on top of configs/<dataset>.py). Order = table order.
SYSTEMS = {
    'mbce': {'method': 'feedforward'},
    'implicit-cd': {**_CD, **NORMAL_CG},
    'implicit-ssvm': {'method': 'implicit', 'implicit.primary_loss': 'ssvm', **NORMAL_CG},
    'implicit-dvn': {'method': 'implicit', 'implicit.primary_loss': 'dvn', **NORMAL_CG},
    'implicit-nce': {'method': 'implicit', 'implicit.primary_loss': 'nce', **NORMAL_CG},
    # The implicit term by one fused GCR pass (bilevel.implicit_gcr: MINRES's first iterate, its HVP and cross term
    # in one reverse-over-forward pass), five inner steps as before: configs/bibtex.py's default since 2026-11-26
    # (sweep bibtex-fast, docs/sweeps/bibtex-fast.md: dev tied with normal_cg; one inner step lost on dev).
    'implicit-cd-gcr': {**_CD, 'implicit.solver.name': 'gcr', 'implicit.solver.iterations': 1},
    # One inner step at 1.5e-3, the term by one GCR pass on every third step and reused in between
    # (solver.refresh), 80 epochs: the inference net moves once per batch, as MBCE's, and gets its budget (sweep
    # bibtex-fast, docs/sweeps/bibtex-fast.md, issue 45: dev @0.5 +0.50 over 'implicit-cd-gcr', paired mean of 3
    # seeds (2 above), at about half its step; 60 epochs lost 1.15 of seed 0's test F1 and were not kept).
    'implicit-cd-gcr-T1-r3': _T1_R3,
    # The same with its two kinds of step (solving, reusing) as two programs the host picks (solver.refresh_by),
    # the reusing one without d_theta L_prim: about a tenth off the step, dev @0.5 tied (sweep bibtex-fast, paired
    # on one machine over 3 seeds: mean +0.02, dev tuned +0.75). configs/bibtex.py as it is since 2026-11-28.
    'implicit-cd-gcr-T1-r3h': {**_T1_R3, 'implicit.solver.refresh_by': 'host'},
    # The paper's own solver (Algorithm 1, supplement section 2): K = 5 Neumann terms, 5 HVPs (+1 for the
    # logged residual) against normal_cg's 11; the configuration benchmarks/epoch.py times.
    'implicit-cd-neumann': {**_CD, 'implicit.solver.name': 'neumann', 'implicit.solver.iterations': 5},
    # MINRES: the residual of H u = v minimised over the Krylov space at one HVP per iteration (5 HVPs).
    'implicit-cd-minres': {**_CD, 'implicit.solver.name': 'minres', 'implicit.solver.iterations': 5},
    # SEAL's task-net width (two 400-unit layers), which the bibtex-h400/bibtex-cd/delicious-cd sweeps chose on
    # dev @0.5 for both MBCE and implicit CD; MBCE again with the same network, so the pair stays like for like.
    'mbce-h400': {'method': 'feedforward', **_H400},
    'implicit-cd-h400': {**_CD, **_H400, **NORMAL_CG},
    # The paper's other primary losses at implicit CD's 400-unit design (docs/baselines.md's 400-unit table has
    # every bibtex row with a published number).
    'implicit-ssvm-h400': {'method': 'implicit', 'implicit.primary_loss': 'ssvm', **_H400, **NORMAL_CG},
    'implicit-dvn-h400': {'method': 'implicit', 'implicit.primary_loss': 'dvn', **_H400, **NORMAL_CG},
}
# configs/bibtex.py as it is (the README's main job): the fastest design not worse on bibtex dev.
MAIN_ROW = 'implicit-cd-gcr-T1-r3h'
# The implicit-term ablation (scripts/ablation_mlc.py): implicit CD with everything equal but the route of the
# outer gradient: no implicit term, H^-1 ~ alpha I, MINRES, and backprop through the T_inner steps; both widths.
ABLATION_ROUTES = ('none', 'identity', 'minres', 'unrolled')
for _route in ABLATION_ROUTES:
  SYSTEMS.setdefault(f'implicit-cd-{_route}', {**_CD, **NORMAL_CG, 'implicit.solver.name': _route})
  SYSTEMS[f'implicit-cd-{_route}-h400'] = {**SYSTEMS[f'implicit-cd-{_route}'], **_H400}
# The best design found on dev (docs/sweeps/bibtex-stationarity.md): 20 inner steps, with and without the term.
for _name in ('implicit-cd', 'implicit-cd-none'):
  SYSTEMS[f'{_name}-T20'] = {**SYSTEMS[_name], 'implicit.inner_steps': 20}
  SYSTEMS[f'{_name}-T20-h400'] = {**SYSTEMS[f'{_name}-T20'], **_H400}
# The proximal inner problem (implicit.proximal, docs/sweeps/bibtex-proximal.md): mu chosen on bibtex dev, 10
# Nesterov steps at 1 / lambda_max reach stationarity ~0.05 (against 0.7 for 5 Adam steps on Eq. 6); CG on H + mu I.
PROXIMAL = {'implicit.proximal': 3.0, 'implicit.inner_steps': 10, 'implicit.inner_curvature_step': 5,
            'implicit.inner_optimizer.learning_rate': 100.0, 'implicit.solver.name': 'cg'}
for _name in ('implicit-cd', 'implicit-cd-none'):
  SYSTEMS[f'{_name}-T10-prox'] = {**SYSTEMS['implicit-cd'], **PROXIMAL,
                                   **({'implicit.solver.name': 'none'} if _name.endswith('none') else {})}
  SYSTEMS[f'{_name}-T10-prox-h400'] = {**SYSTEMS[f'{_name}-T10-prox'], **_H400}
# Rows shown in docs/mlc_ablation.md only.
ABLATION_ONLY = ({s for s in SYSTEMS if any(s.startswith(f'implicit-cd-{r}') for r in ('none', 'identity', 'unrolled',
                                                                                         'T20'))}
                 | {'implicit-cd-minres-h400'} | {s for s in SYSTEMS if s.endswith(('-prox', '-prox-h400'))})

# The other methods (scripts/compare_methods.py, docs/baselines.md), on the same networks, split and seeds.
# Sampled energy losses draw K = 10 samples of the task net on every dataset (SEAL's K is not stated); margin and
# regression draw none.
_K = {'seal.num_samples': 10}
BASELINES = {
    'spen': {'method': 'spen'},
    'dvn': {'method': 'dvn'},
    'nce-gbi': {'method': 'nce_gbi', 'nce_gbi.num_samples': 10},
    'infnet': {'method': 'infnet'},
    'infnet+ separated': {'method': 'infnet_plus', 'infnet.parameterization': 'separated'},
    'infnet+ shared': {'method': 'infnet_plus', 'infnet.parameterization': 'shared'},
    'infnet+ stacked': {'method': 'infnet_plus', 'infnet.parameterization': 'stacked'},
    'seal-static margin': {'method': 'seal_static', 'seal.energy_loss': 'margin'},
    'seal-static regression': {'method': 'seal_static', 'seal.energy_loss': 'regression'},
    'seal-static nce': {'method': 'seal_static', 'seal.energy_loss': 'nce', **_K},
    'seal-dynamic margin': {'method': 'seal_dynamic', 'seal.energy_loss': 'margin'},
    'seal-dynamic regression': {'method': 'seal_dynamic', 'seal.energy_loss': 'regression'},
    'seal-dynamic regression-s': {'method': 'seal_dynamic', 'seal.energy_loss': 'regression_s', **_K},
    'seal-dynamic nce': {'method': 'seal_dynamic', 'seal.energy_loss': 'nce', **_K},
}
# (dataset, system) -> the settings chosen for the row on that dataset's dev by scripts/sweep.py
# (docs/sweeps/<dataset>-<method>.md), applied after the row's overrides.
DEV_CHOSEN = {
    ('bibtex', 'spen'): {'gbi.steps': 50, 'gbi.step_size': 0.3},       # dev @0.5 40.11 vs 38.98 committed
    ('bibtex', 'dvn'): {'gbi.rule': 'mirror', 'gbi.step_size': 1.0},   # dev @0.5 42.08 vs 40.83
    # docs/sweeps/bibtex-seal.md (80 epochs): the energy's weight in the task-net loss, lambda1 (lambda2 = 1)
    ('bibtex', 'seal-dynamic nce'): {'seal.energy_weight': 0.3},          # dev @0.5 39.89 vs 39.17
    ('bibtex', 'seal-static nce'): {'seal.energy_weight': 0.1},           # dev @0.5 40.05 vs 33.17
    ('bibtex', 'seal-static margin'): {'seal.energy_weight': 0.1},        # dev @0.5 39.95 vs 36.49
}
# The baselines at SEAL's network sizes (iesl/seal-neurips-2022 best_models_configs/bibtex_strat_*: two 400-unit
# layers for the task net and one for the energy's feature net), each with the settings chosen on bibtex dev for
# its 150-unit row: the rows beside SEAL Table 1 in docs/baselines.md.
SEAL_SIZES = {**_H400, 'model.energy_feature_hidden': (400,), 'model.energy_feature_dim': 400}
for _system in list(BASELINES):
  BASELINES[f'{_system}-h400'] = {**BASELINES[_system], **SEAL_SIZES}
  if ('bibtex', _system) in DEV_CHOSEN:
    DEV_CHOSEN[('bibtex', f'{_system}-h400')] = DEV_CHOSEN[('bibtex', _system)]
# docs/sweeps/bibtex-dvn-h400.md: at 400 units DVN's dev curve was still rising at 80 epochs (best epoch 57); 160
# epochs reached dev @0.5 46.03 against 45.05 (the GBI and learning-rate variants lost on dev)
DEV_CHOSEN[('bibtex', 'dvn-h400')] = {**DEV_CHOSEN[('bibtex', 'dvn')], 'num_epochs': 160}
# docs/sweeps/bibtex-spen-h400.md: Adam at 3e-4 reached dev @0.5 42.33 against 40.82 at 1e-3 (the GBI variants, a
# longer schedule and both changes together: 41.1-41.9)
DEV_CHOSEN[('bibtex', 'spen-h400')] = {**DEV_CHOSEN[('bibtex', 'spen')], 'optimizer.learning_rate': 3e-4}
# docs/sweeps/bibtex-seal-nce-h400.md: 20 task-net samples (SEAL's chosen number) reached dev @0.5 45.83 against 45.00
# with 10; energy weights 0.1 and 1 (against 0.3): 45.49, 45.55
DEV_CHOSEN[('bibtex', 'seal-dynamic nce-h400')] = {**DEV_CHOSEN[('bibtex', 'seal-dynamic nce')],
                                                   'seal.num_samples': 20}
ROWS = {**SYSTEMS, **BASELINES}
# configs/custom.py, a user's own file: the grid of scripts/custom_defaults.py (run through that config on every shipped
# dataset and the two scaled fixtures), the variant chosen per method on dev across them (least mean regret,
# docs/custom_defaults.md; tests/test_custom_defaults.py checks that it is the table's choice), and the tuner's trials.
_GCR1 = {'implicit.solver.name': 'gcr', 'implicit.solver.iterations': 1}
CUSTOM_GRID = {
    **{f'mbce-d{d}-lr{lr:g}': {'method': 'feedforward', 'model.dropout': d, 'optimizer.learning_rate': lr}
       for d in (0.0, 0.2, 0.5) for lr in (1e-3, 3e-3)},
    **{f'cd-d{d}-{name}': {'method': 'implicit', 'model.dropout': d, **solver}
       for d in (0.0, 0.2, 0.5) for name, solver in (('gcr1', _GCR1), ('ncg5', NORMAL_CG))},
}
# method -> (variant, epochs)
CUSTOM = {'implicit': ('cd-d0.2-gcr1', 80), 'feedforward': ('mbce-d0.0-lr0.003', 40)}
# python -m implicit_jax.tune: per method, the trials after the config itself, most promising first (so that a small
# budget runs those), in the order of their mean regret in docs/custom_defaults.md: dropout and the learning rate for
# MBCE; dropout for implicit CD, whose solver stays the config's (the fused GCR pass costs about half of normal_cg's
# 11 HVPs, and which of the two is ahead depends on the dropout). tests/test_custom_defaults.py checks the order.
TUNE = {
    'feedforward': [{'model.dropout': d, 'optimizer.learning_rate': lr}
                    for d, lr in ((0.0, 3e-3), (0.2, 3e-3), (0.0, 1e-3), (0.2, 1e-3), (0.5, 3e-3), (0.5, 1e-3))],
    'implicit': [{'model.dropout': d} for d in (0.2, 0.5, 0.0)],
}
VARIANTS = {p: {'data.protocol': p} for p in PROTOCOLS if p != 'official'}


def once_per_batch(system: str) -> bool:
  """Whether the row's method updates its network once per batch (MBCE and the baselines), against the implicit
  method's T_inner inner steps per batch: such rows train the dataset config's ``once_per_batch_epochs``."""
  return system.startswith('mbce') or system in BASELINES


def overrides(dataset: str, system: str, protocol: str = 'official') -> dict:
  """The flat overrides of row ``system`` on configs/<dataset>.py, after its epoch budget."""
  return {**ROWS[system], **DEV_CHOSEN.get((dataset, system), {}),
          **({} if protocol == 'official' else VARIANTS[protocol])}


def apply(config, arg: str | None, once_per_batch_epochs: int):
  """``config`` (a dataset config) with the row ``arg`` = ``SYSTEM[,resplit]`` applied; as it is for no ``arg``.
  ``once_per_batch_epochs``: the epochs of the rows whose method updates its network once per batch (MBCE and the
  baselines), the budget the implicit method's T_inner inner steps per batch get in ``config.num_epochs``."""
  if not arg:
    return config
  system, variants = experiments.parse(arg, ROWS, VARIANTS, f'configs/{config.data.name}.py')
  if len(variants) > 1:
    raise ValueError(f'configs/{config.data.name}.py: one split protocol per row, got {variants}')
  if once_per_batch(system):
    config.num_epochs = once_per_batch_epochs
  config.update_from_flattened_dict(overrides(config.data.name, system, *variants))
  return config


def config_name(dataset: str, system: str, protocol: str = 'official') -> str:
  """The row's config as the tables name it: ``configs/<dataset>.py:<system>[,<protocol>]``."""
  return f'configs/{dataset}.py:{experiments.arg_name(system)}' + (f',{protocol}' if protocol != 'official' else '')


# Shankar & Piratla, Table 1 (example F1 x 100; their split: stratified 60/20/20 re-split).
PAPER = {
    'bibtex': {'mbce': 42.47, 'implicit-ssvm': 44.55, 'implicit-dvn': 44.94, 'implicit-cd': 46.21},
    'delicious': {'mbce': 30.12, 'implicit-ssvm': 30.34, 'implicit-dvn': 28.87, 'implicit-cd': 35.12},
}


def row_config(configs, dataset: str, seed: int, protocol: str, data_dir: str, system: str | None = None):
  """configs/<dataset>.py (``configs``: the folder), or its row ``system`` (configs/<dataset>.py:<system>[,resplit]),
  with the run's seed (which also seeds the dev split), split protocol and data directory."""
  from implicit_jax.engine import config as config_lib  # pylint: disable=import-outside-toplevel
  if system is None:
    config = config_lib.from_file(Path(configs) / f'{dataset}.py')
  else:
    path, arg = config_name(dataset, system, protocol).split(':', 1)
    config = config_lib.from_file(Path(configs) / Path(path).name, arg=arg)
    config.config_file = f'{path}:{arg}'
  config.seed = config.data.split_seed = seed
  config.data.protocol = protocol
  if dataset != 'bibtex' or protocol != 'official':  # bibtex's official split ships inside the package
    config.data.data_dir = data_dir
  return config


def recipe(dataset: str, system: str, protocol: str, rs, folder: Path, root: Path) -> str:
  """A table row's "config" cell (records.recipe): configs/<dataset>.py:<system> where each of its records ``rs``
  is that row at its seed, else the records, files of ``folder``, each its own recipe: the runs of a row changed
  since they were made (another solver, width, dropout, sample count or epoch budget). ``root``: the checkout
  whose configs/ and docs/ the table is built from."""
  differs = [key for r in rs for key in records.row_differences(
      r, row_config(Path(root) / 'configs', dataset, r['seed'], protocol, '', system))]
  pattern = f'{Path(folder).relative_to(root)}/{run_name(dataset, system, protocol)}-seed*.json'
  return records.recipe(config_name(dataset, system, protocol), pattern, differs)


def run_name(dataset, system, protocol) -> str:
  """A run's file and workdir stem; official-split runs keep the names they had before other protocols."""
  name = f'{dataset}-{system.replace(" ", "_")}'
  return name if protocol == 'official' else f'{dataset}-{protocol}-{system.replace(" ", "_")}'


device_of = records.device_of  # the scripts' name for it here


def paired(runs_a, runs_b, field):
  """``(seeds, [a - b])``: ``field`` of two systems' runs differenced seed by seed, on the seeds both have."""
  a, b = ({r['seed']: r[field] for r in runs} for runs in (runs_a, runs_b))
  seeds = sorted(set(a) & set(b))
  return seeds, [a[k] - b[k] for k in seeds]


def system_of(result):
  """The row of ``SYSTEMS`` a run record is, from its config (records made before ``config_file`` existed do not
  name it)."""
  c = result['config']
  size = '-h400' if list(c['model']['inference_hidden']) == [400, 400] else ''
  if c['method'] == 'feedforward':
    return 'mbce' + size
  solver = c['implicit']['solver']['name']
  shown = ('neumann', 'gcr') + ABLATION_ROUTES
  steps = c['implicit'].get('inner_steps', 5)
  prox = '-prox' if c['implicit'].get('proximal', 0.0) else ''
  refresh = c['implicit']['solver'].get('refresh', 1)
  # 'h': the reused term's two kinds of step as two programs (refresh_by, absent from the records before it)
  two = 'h' if refresh != 1 and c['implicit']['solver'].get('refresh_by', 'program') == 'host' else ''
  return (f'implicit-{c["implicit"]["primary_loss"]}' + (f'-{solver}' if solver in shown else '') +
          (f'-T{steps}' if steps != 5 else '') + (f'-r{refresh}{two}' if refresh != 1 else '') + prox + size)
