"""Weizmann horses 32x32: every segmentation method over seeds, beside the published mean IoU.

  python -m experiments.reproduce_horses --data_dir=../shared/data --seeds=0,1,2     # train what is missing, then
                                                                                  # write docs/horses.md
  python -m experiments.reproduce_horses --table_only                                 # the table from the records

Each run is configs/horses.py with the system's overrides and the seed (the split stays split_seed 0: one split, several
initialisations and data orders). A run's compact record goes to docs/horses/runs/<system>-seed<k>.json (the per-step
log stays in its workdir under /tmp); a system and seed with a record is not run again, so the script resumes where it
was stopped. The table reports test mean IoU (threshold 0.5) as mean ± sample std (ddof 1) over seeds, global IoU beside
it, the implicit method's paired difference with the FCN, and flags every baseline more than 2 IoU from each of its
published numbers.

SEAL's crop protocol (data.crop=24: random 24x24 crops in training, 36 crops averaged at test) is a system of its own,
'<system>-crops' for fcn, dvn, seal-regression, seal-nce and implicit-cd, run only when named:

  python -m experiments.reproduce_horses --data_dir=../shared/data --seeds=0,1,2 --systems=fcn-crops,seal-regression-crops
"""

import argparse
import os
import sys
from pathlib import Path

import numpy as np

# Runs of one system differ only in the seed: their programs are the same, so compile each once.
os.environ.setdefault('JAX_COMPILATION_CACHE_DIR', '/tmp/reproduce_horses_xla_cache')
ROOT = Path(__file__).resolve().parents[1]
from implicit_jax import runner  # pylint: disable=wrong-import-position
from implicit_jax.engine import cli  # pylint: disable=wrong-import-position
import experiments  # pylint: disable=wrong-import-position
from experiments import records  # pylint: disable=wrong-import-position
from implicit_jax.engine import config as config_lib  # pylint: disable=wrong-import-position
# The rows: configs/horses.py:<system>[,full] applies experiments/horses.py's overrides (SYSTEMS:
# system -> (label, overrides), in table order; VARIANTS: the scales).
from experiments import horses, summary  # pylint: disable=wrong-import-position
from experiments.horses import (  # pylint: disable=wrong-import-position
    CROPPED, CROPS_SYSTEMS, FULL_ONLY, SEAL_ONLY, SYSTEMS)

# Runs of configs/horses.py's implicit design until 2026-11-26 (two inner steps at 1.5e-3, MINRES with 3 HVPs): no
# config holds it any more, so each record is its own recipe. name -> label; shown after the row named in EARLIER_AFTER.
EARLIER = {'implicit-cd-before': 'implicit CD, before (T_inner 2, minres)',
           'implicit-dvn': 'implicit DVN-style regression (T_inner 2, minres)'}
EARLIER_AFTER = 'implicit-cd-t1-gcr'
ORDER = [s for system in SYSTEMS for s in (system, *(EARLIER if system == EARLIER_AFTER else ()))]  # table order


def label_of(system: str) -> str:
  return SYSTEMS[system][0] if system in SYSTEMS else EARLIER[system]

# Published test mean IoU (x 100): Shankar & Piratla Table 10 (their split and resolution protocol of Lu & Huang
# 2020) and SEAL Table 4 (160 training images, 24x24 crops, 36-crop test averaging, DVN's protocol).
PUBLISHED = {
    'fcn': {'SEAL T4': 77.80},
    'fcn-200': {'SEAL T4': 77.80},
    'seal-regression-w': {'SEAL T4': 79.23},
    'dvn': {'implicit T10': 83.9, 'SEAL T4': 72.93},
    'seal-regression': {'SEAL T4': 79.23},
    'seal-nce': {'SEAL T4': 76.78},
    'implicit-cd': {'implicit T10': 89.4},
    'implicit-cd-before': {'implicit T10': 89.4},
    'implicit-cd-t1-gcr': {'implicit T10': 89.4},
    'implicit-cd-r1': {'implicit T10': 89.4},
    'implicit-dvn': {},
    'implicit-regression': {},
}
PUBLISHED.update({f'{s}-crops': PUBLISHED[s] for s in CROPPED})
OTHERS = 'Also published, not run here: cGLOW 81.2 and ALEN 85.7 (implicit paper Table 10).'
RUNS = ROOT / 'docs' / 'horses' / 'runs'
# --scale: 'half' is configs/horses.py as committed (half the published channels, 12 epochs: every method on a 2-core
# CPU); 'full' is the published channels and a schedule long enough for every dev curve to flatten (an accelerator's
# work): the config's variant 'full'. Each scale keeps its own records and table section.
SCALES = {
    'half': ('', RUNS),
    'full': ('full', ROOT / 'docs' / 'horses' / 'runs_full'),
    'seal': ('seal', ROOT / 'docs' / 'horses' / 'runs_seal'),
    'seal-data': ('seal-data', ROOT / 'docs' / 'horses' / 'runs_seal_data'),
}
TOLERANCE = 2.0  # IoU points from a published number
# --scale=seal: how its runs were made (every system and seed a process of its own on one GPU), and what the section
# says of the protocol and of what still differs from SEAL's.
SEAL_COMMAND = ('bash experiments/horses_parallel.sh seal "fcn dvn seal-regression seal-regression-w seal-nce implicit-cd" '
                '"0 1 2" DATA_DIR OUT_DIR')
SEAL_PROTOCOL = ("**SEAL's protocol** (its code, iesl/seal-neurips-2022, and its development repository's chosen "
                 'configs: experiments/horses.py, VARIANTS["{scale}"] and SEAL_SETTINGS): channels (64, '
                 '128, 128) for both networks, 160 training and {dev} dev images, one random 24x24 crop per image and epoch '
                 'and no flips in training, each prediction averaged over 36 crops at test, every rival with the '
                 'optimiser settings of SEAL\'s chosen config (the FCN: Adam 2.01e-3, gradients clipped; SEAL '
                 'regression: 47 perturbations of the task net\'s logits, the energy term beside cross-entropy); '
                 '{epochs} epochs of batch {batch} ({steps} steps), best epoch on dev mean IoU (SEAL: up to 1000 '
                 'epochs, stopped after 20 without a better dev score, the learning rate halved after 10). The '
                 'implicit row keeps configs/horses.py\'s own settings. Dev curves (mean over seeds): '
                 '![dev curves](horses/curves_{scale}.png).')
# --scale=seal-data: the same on SEAL's data (its split and Li et al.'s resizing), on the CPU by this script.
SEAL_DATA = ('Split: {split} (ids in each record: implicit_jax/tasks/segmentation/seal_split.py, derived by '
             '`python -m experiments.seal_horse_split --seal_data=SEAL/data/weizmann_horse_seg --data_dir=DIR`). Images '
             'bicubic and masks bicubic cut at 0.3 (`data.resize=bicubic`), as Li et al.\'s 32x32 set that DVN and '
             'SEAL read was made: they reproduce 99.98% of its mask pixels, where the bilinear / nearest resize of '
             'the section below reproduces 97.28% and keeps 10% fewer horse pixels (thin legs and tails lost), '
             'which lowers every IoU. Standardised per channel (SEAL: [0, 1]).')
SEAL_DATA_DIFFERENCES = ('What still differs from SEAL: one of its 40 dev images, which the PNG files lack, the '
                         'schedule (a fixed 150 epochs with the best dev epoch, against early stopping and a learning '
                         'rate halved on plateaus; several dev curves still rose at the end, the line below), '
                         'per-channel standardisation, one sigmoid logit per pixel against two softmax logits, SEAL '
                         'regression\'s 10 x (6 energy + 1 task) updates per batch (here one of each), and for NCE '
                         '100 samples against 500 with an energy weight SEAL did not publish a choice of.')
# Rows of --scale=seal that --scale=seal-data has not run yet, and why.
SEAL_DATA_UNRUN = ("Not run on SEAL's data yet, a GPU's work (it samples the energy many times a step, 47 "
                   'perturbations of the logits, as SEAL regression does; on the seeded split below it is a variant of '
                   'SEAL regression, its energy weight as SEAL printed it): {rows}. Its rows on the seeded split and the '
                   'bilinear / nearest resize are in the section below.')
SEAL_DIFFERENCES = ('What still differs from SEAL: the split (SEAL\'s own 328 pre-resized images and index list; '
                    'here a seeded draw of the same sizes from the 327 PNG files, so 127 test images against its '
                    '128), the schedule (a fixed 150 epochs with the best dev epoch, against early stopping and a '
                    'learning rate halved on plateaus; several dev curves still rose at the end, the line below), '
                    'per-channel standardisation, one sigmoid logit per pixel against two softmax logits, SEAL '
                    'regression\'s 10 x (6 energy + 1 task) updates per batch (here one of each), and for NCE '
                    '100 samples against 500 with an energy weight SEAL did not publish a choice of.')
# Systems of --scale=seal that were run but left no record, and why (their logs: experiments/horses_parallel.sh).
SEAL_UNFINISHED = {
    'dvn': ('the 3 runs were stopped at 520 s, at epochs 120-125 of 150, their best dev mean IoU 2.1-6.8: inference '
            'by 30 projected gradient steps from the empty mask (gbi.init=zeros) barely leaves it, where SEAL\'s '
            'inference takes Adam steps of 1.95 and its training starts half the inference samples at the gold '
            'mask; the row now takes steps of 5 (a 40-epoch seed-0 run reached dev mean IoU 0.61), not yet run '
            'on 3 seeds (a GPU\'s work)'),
}


def scaled_config(system: str, scale: str = 'half'):
  """configs/horses.py:<system>[,full], the row at the scale (the seed and data_dir are the caller's)."""
  path, arg = horses.config_name(system, scale).split(':', 1)
  config = config_lib.from_file(ROOT / path, arg=arg)
  config.config_file = f'{path}:{arg}'
  return config


def run_of(system, seed, args) -> runner.Run:
  """The run of row ``system`` on ``seed`` at ``--scale``: its record in the scale's folder."""
  scale = getattr(args, 'scale', 'half')

  def config():
    config = scaled_config(system, scale)
    config.seed = seed
    config.data.data_dir = args.data_dir
    if args.epochs:
      config.num_epochs = args.epochs
    return config
  return runner.Run(f'{system} seed {seed}', config, SCALES[scale][1] / f'{system}-seed{seed}.json',
                    f'{args.workdir}/{scale}-{system}-{seed}')


def load_runs(scale: str = 'half') -> dict:
  runs = {}
  for path in sorted(SCALES[scale][1].glob('*.json')):
    record = records.load(path)
    runs.setdefault(path.stem.rsplit('-seed', 1)[0], []).append(record)
  return runs


def fmt(values) -> str:
  return records.mean_std(values)


def build_table(scale: str = 'half', write: bool = False) -> str:
  """The docs/horses.md section of one scale, from its records; ``write``: its command list too
  (docs/horses.commands.txt, docs/horses.<scale>.commands.txt)."""
  runs = load_runs(scale)
  if not runs:
    raise SystemExit(f'no run records under {SCALES[scale][1]}: run the script without --table_only first')
  any_run = next(iter(runs.values()))[0]
  cfg, info = any_run['config'], any_run['task_info']
  devices = sorted({r['device'] for rs in runs.values() for r in rs})
  if scale == 'half':
    title = '# Weizmann horses 32x32: mean IoU of every method'
    schedule = (f'**CPU-only, short training**: {cfg["num_epochs"]} epochs of batch {cfg["batch_size"]}, networks at '
                f'half the channels of DVN/SEAL ({tuple(cfg["model"]["channels"])} against (64, 128, 128)), selected '
                'on dev mean IoU. The published numbers come from far longer GPU training at full width; the gap to '
                'them is mostly that.')
  elif scale in horses.SEAL_VARIANTS:
    title = ("## At SEAL's protocol, on SEAL's data (`--scale=seal-data`)" if scale == 'seal-data' else
             "## At SEAL's protocol (`--scale=seal`)")
    schedule = SEAL_PROTOCOL.format(epochs=cfg['num_epochs'], batch=cfg['batch_size'], steps=any_run['steps'],
                                    scale=scale, dev=len(info['ids']['dev']))
  else:
    title = '## At the published width, long schedule (`--scale=full`)'
    schedule = (f'**Published channels {tuple(cfg["model"]["channels"])}** (energy '
                f'{tuple(cfg["model"]["energy_channels"])}), {cfg["num_epochs"]} epochs of batch {cfg["batch_size"]} '
                f'({any_run["steps"]} steps), otherwise configs/horses.py; best '
                'epoch on dev mean IoU. Dev curves (mean over seeds): '
                '![dev curves](horses/curves_full.png).')
  commands = records.write_commands(ROOT / 'docs' / 'horses.md', (r['command'] for rs in runs.values() for r in rs),
                                    section='' if scale == 'half' else scale, write=write)
  made_by = (f'Made by `{SEAL_COMMAND}`, which runs each system and seed as a process of its own: {commands}'
             if scale == 'seal' else f'Made by {commands}')
  lines = [
      title,
      '',
      made_by,
      f'(runs dated {min(r["date"] for rs in runs.values() for r in rs)[:10]} to '
      f'{max(r["date"] for rs in runs.values() for r in rs)[:10]}; devices: {", ".join(devices)}).',
      '',
      schedule,
      '',
      f'Mean IoU and global IoU x 100 at threshold 0.5, {records.spread()}.',
      '',
      (f'Split: {info["split"]} (ids in each record), SEAL\'s sizes (its split is an index list of its own 328 '
       'pre-resized images, which the project\'s 327 PNG files do not map onto). Images and masks resized to '
       f'{info["size"]}x{info["size"]} (bilinear / nearest), standardised per channel (SEAL: [0, 1]).'
       if scale == 'seal' else SEAL_DATA.format(split=info['split']) if scale == 'seal-data' else
       f'Split: {info["split"]} (ids in each record). Images and masks resized to {info["size"]}x{info["size"]} '
       '(bilinear / nearest), full images at train and test (no crops) except in the rows marked "24x24 crops", '
       'random left-right flips in training. SEAL trained on 160 images with 24x24 random crops and averaged 36 '
       'crops at test (DVN\'s protocol; SEAL\'s code, no flips); the "24x24 crops" rows do the same '
       '(`data.crop=24`: tasks/segmentation), flips kept. The implicit paper follows Lu & Huang (2020). Neither '
       'split is published, so the comparison is indicative.'),
      '',
      f'Test mean IoU x 100, {records.spread()}. "config": the row, seed K of which `python -m implicit_jax.main '
      f'--config=CONFIG --config.seed=K --config.data.data_dir=DIR --workdir=DIR2` reproduces. {records.RECIPE_NOTE}',
      '',
      '| method | seeds | test mean IoU | test global IoU | dev mean IoU | published mean IoU | within 2 | config |',
      '|---|---|---|---|---|---|---|---|',
  ]
  flagged, unrun = [], []
  elsewhere = set(load_runs('seal')) | set(SEAL_UNFINISHED) if scale == 'seal-data' else set()  # rows to name
  for system in ORDER:
    label = label_of(system)
    rs = sorted(runs.get(system, []), key=lambda r: r['seed'])
    if not rs and system in EARLIER:
      continue
    if not rs:
      if scale == 'half' and system not in CROPS_SYSTEMS + FULL_ONLY + SEAL_ONLY:  # optional: shown once run
        lines.append(f'| {label} | 0 | not run | | | | | `{horses.config_name(system, scale)}` |')
      if scale == 'seal' and system in SEAL_UNFINISHED:
        lines.append(f'| {label} | 0 | no record: {SEAL_UNFINISHED[system]} | | | | | '
                     f'`{horses.config_name(system, scale)}` |')
      if system in elsewhere:
        unrun.append(label)
        lines.append(f'| {label} | 0 | not run yet (the line below the table) | | | | | '
                     f'`{horses.config_name(system, scale)}` |')
      continue
    mean = 100 * np.mean([r['test_mean_iou'] for r in rs])
    pub = PUBLISHED[system]
    shown = ', '.join(f'{v:.2f} ({k})' for k, v in pub.items()) or '—'
    if pub:
      near = any(abs(mean - v) <= TOLERANCE for v in pub.values())
      mark = 'yes' if near else f'**no** ({min(abs(mean - v) for v in pub.values()):.1f} away)'
      if not near:
        flagged.append(label)
    else:
      mark = '—'
    lines.append(f'| {label} | {len(rs)} | {fmt([r["test_mean_iou"] for r in rs])} | '
                 f'{fmt([r["test_global_iou"] for r in rs])} | {fmt([r["dev_mean_iou"] for r in rs])} | {shown} | '
                 f'{mark} | {recipe_cell(system, scale, rs)} |')
  lines += ['', OTHERS, ''] + ([SEAL_DATA_UNRUN.format(rows=', '.join(unrun)), ''] if unrun else [])
  if scale == 'half':
    lines += ['Test images with the gold mask and the FCN, DVN and implicit CD masks (seed 0 runs): '
              '![examples](horses/examples.png) (`python -m experiments.horses_figure`).', '']
  iou = lambda system: {r['seed']: r['test_mean_iou'] for r in runs.get(system, [])}
  pairs = [(f'{label_of(s)} minus FCN', s, 'fcn') for s in ('implicit-cd', 'implicit-cd-before',
                                                               'implicit-cd-t1-gcr', 'implicit-dvn', 'seal-regression',
                                                               'seal-nce', 'dvn')]
  if scale == 'full':  # the implicit paper's claim is over SEAL too: the same pairing against its rows here
    pairs += [(f'{SYSTEMS["implicit-cd"][0]} minus {SYSTEMS[s][0]}', 'implicit-cd', s)
              for s in ('seal-regression', 'seal-regression-crops')]
  if scale in horses.SEAL_VARIANTS:
    pairs = [(f'{SYSTEMS[i][0]} minus {SYSTEMS[s][0]}', i, s) for i in ('implicit-cd', 'implicit-regression')
             for s in ('fcn', 'seal-regression', 'seal-regression-w', 'seal-nce', 'dvn')]
    pairs += [(f'{SYSTEMS[s][0]} minus FCN', s, 'fcn') for s in ('seal-regression', 'seal-regression-w', 'seal-nce')]
  pairs += [(f'{SYSTEMS[s][0]} minus the same without crops', s, s[:-len('-crops')]) for s in CROPS_SYSTEMS]
  for what, other, base in pairs:
    line = records.paired(what, iou(other), iou(base), 'test mean IoU')
    if line:
      lines.append(line)
  # The config's design against the one it replaced, on dev (what chose it) and on test.
  dev = lambda system: {r['seed']: r['dev_mean_iou'] for r in runs.get(system, [])}
  for metric, of in (('dev mean IoU', dev), ('test mean IoU', iou)):
    line = records.paired(f'{SYSTEMS["implicit-cd"][0]} minus {SYSTEMS["implicit-cd-r1"][0]}', of('implicit-cd'),
                          of('implicit-cd-r1'), metric)
    if line:
      lines.append(line)
  if flagged:
    why = ('All runs share the short CPU schedule and the half-width networks above; the published baselines trained '
           'to convergence at full width with crop augmentation and test-time crop averaging.' if scale == 'half' else
           SEAL_DIFFERENCES if scale == 'seal' else SEAL_DATA_DIFFERENCES if scale == 'seal-data' else
           'These runs have the published width and the long schedule (dev curves: the figure and the line below); what '
           'still differs is the split, the resolution protocol (implicit paper: Lu & Huang 2020) and, for SEAL and DVN, '
           'their crop augmentation and test-time averaging.')
    lines += ['', f'Flagged (more than {TOLERANCE:g} IoU from every published number): {", ".join(flagged)}. ' + why]
  if scale != 'half':
    gains = {s: np.mean([records.last_tenth_gain(r, 'dev_mean_iou') for r in rs]) for s, rs in runs.items()}
    best = {s: np.median([r['best_epoch'] for r in rs]) for s, rs in runs.items()}
    lines += ['', 'Has each dev curve flattened? The best dev mean IoU x 100 over the last tenth of the epochs minus '
              'the best before (above 0: a new best in the last tenth; mean over seeds; best epoch, median over '
              'seeds): ' + '; '.join(f'{label_of(s)} {gains[s]:+.2f} (best epoch {best[s]:.0f})' for s in runs) + '.']
  seconds = {s: np.median([r['train_seconds'] for r in rs]) for s, rs in runs.items()}
  kinds = {s: '/'.join(sorted({records.device_of(r).upper() for r in rs})) for s, rs in runs.items()}
  mixed = len(set(kinds.values())) > 1  # then each time names its device, and none compares with another's
  lines += ['', 'Median training time per run (s): ' + ', '.join(
      f'{label_of(s)} {seconds[s]:.0f}' + (f' ({kinds[s]})' if mixed else '') for s in ORDER if s in seconds) + '.'
      + (' The runs shared their device with other runs: a cost indication, not a speed measurement.' if mixed
         else ''), '']
  return '\n'.join(lines)


def recipe_cell(system: str, scale: str, rs) -> str:
  """The row's config where its records are that config at their seeds, else the records (records.recipe)."""
  pattern = f'{SCALES[scale][1].relative_to(ROOT)}/{system}-seed*.json'
  if system in EARLIER:
    return records.recipe(None, pattern)
  def row(seed):
    config = scaled_config(system, scale)
    config.seed = seed
    return config
  return records.recipe(horses.config_name(system, scale), pattern,
                        [key for r in rs if 'config' in r for key in records.row_differences(r, row(r['seed']))])


def plot_curves(scale: str, path: Path) -> None:
  """Dev mean IoU per epoch of every system of a scale (mean over seeds, band = min..max), from the records."""
  import matplotlib  # pylint: disable=import-outside-toplevel
  matplotlib.use('Agg')
  import matplotlib.pyplot as plt  # pylint: disable=import-outside-toplevel
  fig, ax = plt.subplots(figsize=(7, 4.2))
  for system, rs in load_runs(scale).items():
    curves = []
    for r in rs:
      curves.append([h['dev_mean_iou'] for h in records.history(r)])
    n = min(len(c) for c in curves)
    curves = 100 * np.array([c[:n] for c in curves])
    epochs = np.arange(1, n + 1)
    line, = ax.plot(epochs, curves.mean(0), label=f'{label_of(system)} ({len(rs)} seeds)')
    ax.fill_between(epochs, curves.min(0), curves.max(0), color=line.get_color(), alpha=0.15)
  ax.set_xlabel('epoch')
  ax.set_ylabel('dev mean IoU x 100')
  ax.set_title(f'Weizmann horses, --scale={scale}: dev curves')
  ax.grid(alpha=0.3)
  ax.legend(fontsize=7)
  fig.tight_layout()
  fig.savefig(path, dpi=110)
  plt.close(fig)


def main():
  parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument('--data_dir', default=os.environ.get('IMPLICIT_JAX_DATA_DIR', ''))
  parser.add_argument('--seeds', default='0,1,2', type=experiments.seeds)
  parser.add_argument('--systems', type=experiments.names(list(SYSTEMS)),
                      help=f'default: every system but the crop rows ({",".join(CROPS_SYSTEMS)}), which run when '
                      f'named, and at --scale=half but {",".join(FULL_ONLY)} (rows of --scale=full only)')
  parser.add_argument('--epochs', type=int, default=0, help='override configs/horses.py num_epochs')
  parser.add_argument('--scale', default='half', choices=sorted(SCALES),
                      help="half: configs/horses.py as committed (CPU); full: published channels, 100 epochs; "
                      "seal: SEAL's protocol (24x24 crops, 36-crop test, its split sizes and chosen settings); "
                      "seal-data: the same on SEAL's split and Li et al.'s resizing (data.split, data.resize)")
  parser.add_argument('--workdir', default='/tmp/reproduce_horses')
  parser.add_argument('--table_only', action='store_true')
  parser.add_argument('--no_table', action='store_true',
                      help='train and write the records only (parallel runs: one table at the end, --table_only)')
  args = parser.parse_args()
  if not args.table_only:
    systems = args.systems or [
        s for s in SYSTEMS if s not in CROPS_SYSTEMS and (args.scale == 'full' or s not in FULL_ONLY)
        and (args.scale in horses.SEAL_VARIANTS or s not in SEAL_ONLY)]
    for only, scales in ((FULL_ONLY, ('full',)), (SEAL_ONLY, horses.SEAL_VARIANTS)):
      if args.scale not in scales and set(systems) & set(only):
        parser.error(f'--systems: {sorted(set(systems) & set(only))} run at --scale={" or ".join(scales)} only')
    RUNS.mkdir(parents=True, exist_ok=True)
    runner.run_all([run_of(system, seed, args) for seed in args.seeds
                    for system in systems], writer=records.save)
    if args.no_table:
      return
  table, full_table = build_table(write=True), ''
  if load_runs('full'):
    plot_curves('full', ROOT / 'docs' / 'horses' / 'curves_full.png')
    full_table = build_table('full', write=True)
  seal_tables = []
  for scale in ('seal-data', 'seal'):
    if load_runs(scale):
      plot_curves(scale, ROOT / 'docs' / 'horses' / f'curves_{scale}.png')
      seal_tables.append((scale, build_table(scale, write=True)))
  records.write_page(ROOT / 'docs' / 'horses.md',
                     '\n'.join(t for t in (table, *(t for _, t in seal_tables), full_table) if t))
  update_readme(table, full_table, seal_tables)
  print(table)


# SEAL Table 4's rows that we run (the weight-as-printed regression is our variant of one of them) and the implicit
# paper's: a section with all of them can carry the README's row and the claims ledger.
SUMMARY_ROWS = ('fcn', 'dvn', 'seal-regression', 'seal-nce', 'implicit-cd')


def summary_scale() -> str:
  """The section of the README's summary row and the claims ledger: SEAL's data once it has 3 seeds of every row
  in SUMMARY_ROWS, else SEAL's protocol on the seeded split."""
  runs = load_runs('seal-data')
  return 'seal-data' if all(len(runs.get(s, [])) >= 3 for s in SUMMARY_ROWS) else 'seal'


def summary_rows(runs, scale: str = 'seal') -> list[str]:
  """The README summary row, from a SEAL-protocol section (docs/horses.md "At SEAL's protocol": the setting of
  the published rival numbers; the half-width CPU section and the earlier full-width one are not): the best implicit
  row against the best other one, on dev mean IoU."""
  implicit = {s: rs for s, rs in runs.items() if s.startswith('implicit')}
  rivals = {s: rs for s, rs in runs.items() if not s.startswith('implicit')}
  a, b = summary.best(implicit, 'dev_mean_iou'), summary.best(rivals, 'dev_mean_iou')
  if not (a and b):
    return []
  devices = sorted({records.device_of(r).upper() for r in implicit[a] + rivals[b]})
  data = ', SEAL\'s data' if scale == 'seal-data' else ''
  task = (f'Weizmann horses 32x32, mean IoU (docs/horses.md, section "At SEAL\'s protocol{data}": 24x24 crops, '
          f'36-crop test, {horses.VARIANTS[scale]["num_epochs"]} epochs, {" and ".join(devices)})')
  return [summary.row('horses', task, (horses.config_name(a, scale), implicit[a]),
                      (horses.config_name(b, scale), rivals[b]), 'test_mean_iou',
                      f'{PUBLISHED["implicit-cd"]["implicit T10"]:.1f}')]


def update_readme(table: str, full_table: str = '', seal_tables=()) -> None:
  """Copies the tables and the paired differences into docs/results.md's results:horses block (the half-width
  section, then the ``--scale=full`` one where it has records), and the horses row into README.md's summary table."""
  chosen = summary_scale()
  summary.update(ROOT / 'README.md', 'horses', summary_rows(load_runs(chosen), chosen))
  kept = [line for line in table.splitlines() if line.startswith(('|', '- ', '**CPU'))]
  for scale, seal_table in seal_tables:
    kept += ['', ("**At SEAL's protocol, on SEAL's data (`--scale=seal-data`)**: its split and Li et al.'s "
                  'resizing, 24x24 crops, 36-crop test, its chosen optimiser settings; what still differs: '
                  '[horses.md](horses.md#at-seals-protocol-on-seals-data---scaleseal-data).' if scale == 'seal-data'
                  else "**At SEAL's protocol (`--scale=seal`)**: 24x24 crops, 36-crop test, SEAL's split sizes and "
                  "its chosen optimiser settings; what still differs: "
                  '[horses.md](horses.md#at-seals-protocol---scaleseal).'), '']
    kept += [line for line in seal_table.splitlines() if line.startswith(('|', '- '))]
  if full_table:
    kept += ['', '**At the published width (`--scale=full`)**. '
             + next(line for line in full_table.splitlines() if line.startswith('**Published')).replace('**', ''),
             '']
    kept += [line for line in full_table.splitlines() if line.startswith(('|', '- '))]
  records.write_block(ROOT / 'docs' / 'results.md', 'horses', (
      f'\nTest mean IoU x 100 at threshold 0.5, {records.spread()}, from the committed runs '
      '([horses.md](horses.md): commands, split, protocol differences, flags).\n\n' + '\n'.join(kept)),
      required=False)


if __name__ == '__main__':
  sys.exit(cli.guarded(main))
