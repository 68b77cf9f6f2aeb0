r"""bibtex (MULAN split, embedded in the package): the implicit method with the contrastive-divergence loss.

Run:    python -m implicit_jax.main --config=configs/bibtex.py --workdir=/tmp/implicit_jax/bibtex
Others: --config.method=feedforward (MBCE baseline), --config.implicit.primary_loss=ssvm|dvn|nce,
        --config.method=spen|dvn|infnet|infnet_plus|seal_dynamic|... (the rivals, each reading its section),
        --config.data.protocol=resplit (stratified 60/20/20 of all rows, the paper's and SEAL's protocol).
Rows:   --config=configs/bibtex.py:ROW trains a row of the results tables (docs/mlc_results.md, mlc_ablation.md,
        baselines.md name each row's ROW); --config.seed=K --config.data.split_seed=K its seed K (the seed also
        draws the dev split). ROW = SYSTEM[,resplit]: SYSTEM is a name of SYSTEMS or BASELINES below, e.g. mbce,
        implicit-cd (normal_cg: the design before the GCR pass), implicit-cd-gcr (five inner steps: this config
        until issue 45), implicit-cd-gcr-T1-r3 (the same step in one program: this config until 2026-11-28),
        implicit-cd-gcr-T1-r3h (this config as it is), implicit-cd-h400, seal-dynamic_nce (a space written _).
        ",resplit": the paper's stratified 60/20/20 re-split of all rows. The other multi-label configs
        (delicious.py, genbase.py, cal500.py, spo_fun.py) take the same rows (``row`` below).
Proximal inner problem (--config.implicit.proximal=3 --config.implicit.inner_steps=10
  --config.implicit.inner_curvature_step=5 --config.implicit.inner_optimizer.learning_rate=100
  --config.implicit.solver.name=cg): stationarity 0.10 instead of 0.72, higher dev F1 @0.5 but lower dev-tuned F1,
  so not the default (docs/sweeps/bibtex-proximal.md, docs/mlc_ablation.md).
"""

from implicit_jax.engine import config as config_lib
from implicit_jax.engine import rows
from implicit_jax.tasks.mlc.datasets import PROTOCOLS


def get_config(arg=None):
  c = config_lib.base_config(task='mlc', method='implicit')
  c.data.name = 'bibtex'
  c.chosen_on = 'bibtex'  # its settings are bibtex's: a file of one's own goes through configs/custom.py
  c.model.inference_hidden = (150, 150)
  c.model.energy_feature_hidden = (150,)
  c.model.energy_feature_dim = 150
  c.model.global_hidden = 16
  c.model.dropout = 0.5
  c.implicit.primary_loss = 'cd'
  c.implicit.negatives.num_samples = 5
  # One inner Adam step on theta per batch at 1.5e-3, so that the inference net moves once per batch as MBCE's does
  # (sweep bibtex-fast, docs/sweeps/bibtex-fast.md, issue 45: dev @0.5 +0.50 over five steps at 3e-4, the rows'
  # design below, paired mean of 3 seeds, at about half its step).
  c.implicit.inner_steps = 1
  c.implicit.inner_optimizer.learning_rate = 1.5e-3
  # The implicit term by one fused GCR pass (bilevel.implicit_gcr) instead of normal_cg's 11 HVPs: dev tied over 3
  # seeds at half the step (sweep bibtex-fast).
  c.implicit.solver.name = 'gcr'
  c.implicit.solver.iterations = 1
  # The term solved on every third step and reused in between, its solving and reusing steps as two programs the
  # host picks (the reusing one without d_theta L_prim): dev tied with one program, paired on one machine over 3
  # seeds, at about a tenth less a step (docs/benchmarks.md).
  c.implicit.solver.reuse = 'r3h'
  # 80 epochs: the budget of MBCE and the baselines, which also update their network once per batch (60 lost 1.15 of
  # seed 0's test F1).
  c.num_epochs = 80
  c.log_every = 500
  # An epoch takes about a second here: a checkpoint at each epoch end (and one per new best) cost a sixth of the
  # main job. One every checkpoint_every (1000) steps, a few seconds of training, and one after the last epoch.
  c.checkpoint_epoch_ends = False
  if arg:
    row(c, 'bibtex', arg, implicit_epochs=40, once_per_batch_epochs=80)
  return c


# The rows of the multi-label tables, as flat overrides of a dataset's config (this one, delicious.py, genbase.py,
# cal500.py, spo_fun.py). Every row starts from ROW_BASE, the implicit design the rows were run with (five inner
# Adam steps at 3e-4, the term solved on every step: this config's until issue 45), and its epoch budget: the
# dataset's ``implicit_epochs`` for the implicit method (T_inner updates per batch), ``once_per_batch_epochs`` (twice
# those) for MBCE and the baselines.
ROW_BASE = {'implicit.inner_steps': 5, 'implicit.inner_optimizer.learning_rate': 3e-4, 'implicit.solver.reuse': 'none'}
_CD = {'method': 'implicit', 'implicit.primary_loss': 'cd'}
# normal_cg with 5 iterations (11 HVPs): the solver of the other multi-label configs (bibtex's fused GCR pass was
# chosen on bibtex dev only), and of the rows below, which the tables show beside the GCR row on bibtex.
NORMAL_CG = {'implicit.solver.name': 'normal_cg', 'implicit.solver.iterations': 5}
_H400 = {'model.inference_hidden': (400, 400)}
# One inner step at 1.5e-3, the term by one GCR pass on every third step and reused in between, 80 epochs: this
# config's design (rows implicit-cd-gcr-T1-r3 and -r3h).
_T1_R3 = {**_CD, 'implicit.solver.name': 'gcr', 'implicit.solver.iterations': 1, 'implicit.inner_steps': 1,
          'implicit.inner_optimizer.learning_rate': 1.5e-3, 'implicit.solver.reuse': 'r3', 'num_epochs': 80}
# system name -> overrides. Order = table order.
SYSTEMS = {
    'mbce': {'method': 'feedforward'},
    'implicit-cd': {**_CD, **NORMAL_CG},
    'implicit-ssvm': {'method': 'implicit', 'implicit.primary_loss': 'ssvm', **NORMAL_CG},
    'implicit-dvn': {'method': 'implicit', 'implicit.primary_loss': 'dvn', **NORMAL_CG},
    'implicit-nce': {'method': 'implicit', 'implicit.primary_loss': 'nce', **NORMAL_CG},
    # The implicit term by one fused GCR pass (MINRES's first iterate, its HVP and cross term in one
    # reverse-over-forward pass), five inner steps: this config from 2026-11-26 to issue 45 (sweep bibtex-fast: dev
    # tied with normal_cg; one inner step lost on dev at this design).
    'implicit-cd-gcr': {**_CD, 'implicit.solver.name': 'gcr', 'implicit.solver.iterations': 1},
    # One inner step at 1.5e-3, the term by one GCR pass on every third step and reused in between, 80 epochs (sweep
    # bibtex-fast, issue 45: dev @0.5 +0.50 over 'implicit-cd-gcr', paired mean of 3 seeds (2 above), at about half
    # its step), in one program: this config until 2026-11-28.
    'implicit-cd-gcr-T1-r3': _T1_R3,
    # The same with its two kinds of step (solving, reusing) as two programs the host picks: this config as it is.
    'implicit-cd-gcr-T1-r3h': {**_T1_R3, 'implicit.solver.reuse': 'r3h'},
    # The paper's own solver (Algorithm 1, supplement section 2): K = 5 Neumann terms, 5 HVPs (+1 for the logged
    # residual) against normal_cg's 11; the configuration benchmarks/epoch.py times.
    'implicit-cd-neumann': {**_CD, 'implicit.solver.name': 'neumann', 'implicit.solver.iterations': 5},
    # MINRES: the residual of H u = v minimised over the Krylov space at one HVP per iteration (5 HVPs).
    'implicit-cd-minres': {**_CD, 'implicit.solver.name': 'minres', 'implicit.solver.iterations': 5},
    # SEAL's task-net width (two 400-unit layers), which the bibtex-h400/bibtex-cd/delicious-cd sweeps chose on dev
    # @0.5 for both MBCE and implicit CD; MBCE again with the same network, so the pair stays like for like.
    'mbce-h400': {'method': 'feedforward', **_H400},
    'implicit-cd-h400': {**_CD, **_H400, **NORMAL_CG},
    # The paper's other primary losses at implicit CD's 400-unit design.
    'implicit-ssvm-h400': {'method': 'implicit', 'implicit.primary_loss': 'ssvm', **_H400, **NORMAL_CG},
    'implicit-dvn-h400': {'method': 'implicit', 'implicit.primary_loss': 'dvn', **_H400, **NORMAL_CG},
}
# The implicit-term ablation (docs/mlc_ablation.md): implicit CD with everything equal but the route of the outer
# gradient: no implicit term, H^-1 ~ alpha I, MINRES, and backprop through the T_inner steps; both widths.
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

# The other methods (docs/baselines.md), on the same networks, split and seeds. Sampled energy losses draw K = 10
# samples of the task net on every dataset (SEAL's K is not stated); margin and regression draw none.
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
# (dataset, system) -> the settings chosen for the row on that dataset's dev (docs/sweeps/<dataset>-<method>.md),
# applied after the row's overrides.
DEV_CHOSEN = {
    ('bibtex', 'spen'): {'gbi.steps': 50, 'gbi.step_size': 0.3},       # dev @0.5 40.11 vs 38.98 committed
    ('bibtex', 'dvn'): {'gbi.rule': 'mirror', 'gbi.step_size': 1.0},   # dev @0.5 42.08 vs 40.83
    # docs/sweeps/bibtex-seal.md (80 epochs): the energy's weight in the task-net loss, lambda1 (lambda2 = 1)
    ('bibtex', 'seal-dynamic nce'): {'seal.energy_weight': 0.3},          # dev @0.5 39.89 vs 39.17
    ('bibtex', 'seal-static nce'): {'seal.energy_weight': 0.1},           # dev @0.5 40.05 vs 33.17
    ('bibtex', 'seal-static margin'): {'seal.energy_weight': 0.1},        # dev @0.5 39.95 vs 36.49
}
# The baselines at SEAL's network sizes (iesl/seal-neurips-2022 best_models_configs/bibtex_strat_*: two 400-unit
# layers for the task net and one for the energy's feature net), each with the settings chosen on bibtex dev for its
# 150-unit row: the rows beside SEAL Table 1 in docs/baselines.md.
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
# SPEN with Belanger & McCallum's (2016) pretraining stage (issue 64): the 400-unit row as chosen, its energy's
# feature network and local term first trained as independent logistic classifiers (spen.pretrain_epochs), the
# stage's settings chosen on dev (docs/sweeps/bibtex-spen-pretrain-h400.md, seed 0: 10 epochs of it, then 10 of the
# global term alone, dev @0.5 40.69, against 40.56 without the clamped epochs and 40.36 with 30 of pretraining; every
# one under the row without the stage, 42.33).
BASELINES['spen-pretrain-h400'] = dict(BASELINES['spen-h400'])
DEV_CHOSEN[('bibtex', 'spen-pretrain-h400')] = {**DEV_CHOSEN[('bibtex', 'spen-h400')], 'spen.pretrain_epochs': 10,
                                                'spen.clamp_epochs': 10}
# DVN with bibtex's dev-chosen GBI (mirror descent, step 1), for the datasets whose row does not choose it (issue 64:
# on delicious dev, docs/sweeps/delicious-dvn.md, seed 0: 21.58 @0.5 against the row's 13.59, and 14.70 for a third of
# the learning rate). On bibtex it is that dataset's dvn row.
BASELINES['dvn-mirror'] = {'method': 'dvn', 'gbi.rule': 'mirror', 'gbi.step_size': 1.0}
# SEAL-static margin with the energy weighed 0.1 in the task net's loss, bibtex's dev choice, for the datasets whose
# row does not choose it (issue 64: on delicious dev, docs/sweeps/delicious-seal-static-margin.md, seed 0: 27.56 @0.5
# against the row's 24.24, and 24.88 with 80 epochs). On bibtex it is that dataset's seal-static margin row.
BASELINES['seal-static margin-w0.1'] = {**BASELINES['seal-static margin'], 'seal.energy_weight': 0.1}
# SEAL-static NCE with the energy weighed 0.1, bibtex's dev choice, for the datasets whose row does not choose it
# (issue 64: on delicious dev, docs/sweeps/delicious-seal-static-nce.md, seed 0: 27.13 @0.5 against the row's 23.37).
# On bibtex it is that dataset's seal-static nce row.
BASELINES['seal-static nce-w0.1'] = {**BASELINES['seal-static nce'], 'seal.energy_weight': 0.1}
# SEAL-dynamic NCE with twice the epochs, for delicious (issue 64: on delicious dev,
# docs/sweeps/delicious-seal-dynamic-nce.md, seed 0: 28.61 @0.5 against the row's 27.14, and 27.61 with bibtex's
# weight 0.3 and 20 samples).
BASELINES['seal-dynamic nce-e80'] = {**BASELINES['seal-dynamic nce'], 'num_epochs': 80}
# The same with four times the epochs: twice the epochs took its best epoch last (79 of 80); 160 reached 28.83 @0.5
# (best epoch 149), the sweep's best on dev.
BASELINES['seal-dynamic nce-e160'] = {**BASELINES['seal-dynamic nce'], 'num_epochs': 160}
# docs/sweeps/bibtex-seal-nce-h400.md: 20 task-net samples (SEAL's chosen number) reached dev @0.5 45.83 against 45.00
# with 10; energy weights 0.1 and 1 (against 0.3): 45.49, 45.55
DEV_CHOSEN[('bibtex', 'seal-dynamic nce-h400')] = {**DEV_CHOSEN[('bibtex', 'seal-dynamic nce')],
                                                   'seal.num_samples': 20}
ROWS = {**SYSTEMS, **BASELINES}
# Variant ``resplit``: the paper's protocol (all rows pooled, stratified 60/20/20 by the seed).
VARIANTS = {p: {'data.protocol': p} for p in PROTOCOLS if p != 'official'}


def once_per_batch(system: str) -> bool:
  """Whether the row's method updates its network once per batch (MBCE and the baselines), against the implicit
  method's T_inner inner steps per batch."""
  return system.startswith('mbce') or system in BASELINES


def overrides(dataset: str, system: str, protocol: str = 'official', implicit_epochs: int = 40,
              once_per_batch_epochs: int = 80) -> dict:
  """The flat overrides of row ``system`` on configs/<dataset>.py: ROW_BASE, its epoch budget, the row, the settings
  chosen for it on the dataset's dev, the split protocol."""
  epochs = once_per_batch_epochs if once_per_batch(system) else implicit_epochs
  return {**ROW_BASE, 'num_epochs': epochs, **ROWS[system], **DEV_CHOSEN.get((dataset, system), {}),
          **({} if protocol == 'official' else VARIANTS[protocol])}


def row(config, dataset: str, arg: str, implicit_epochs: int, once_per_batch_epochs: int):
  """``config`` (configs/<dataset>.py as it is) with the row ``arg`` = ``SYSTEM[,resplit]`` applied."""
  system, variants = rows.parse(arg, ROWS, VARIANTS, f'configs/{dataset}.py')
  if len(variants) > 1:
    raise ValueError(f'configs/{dataset}.py: one split protocol per row, got {variants}')
  config.update_from_flattened_dict(overrides(dataset, system, *variants, implicit_epochs=implicit_epochs,
                                              once_per_batch_epochs=once_per_batch_epochs))
  return config
