"""Weizmann horses 32x32: every segmentation method over seeds, beside the published mean IoU (docs/horses.md).

  python -m experiments.reproduce_horses --data_dir=../shared/data --seeds=0,1,2  # train what is missing, then the page
  python -m experiments.reproduce_horses --data_dir=../shared/data --scale=seal --systems=fcn,implicit-cd --no_table
  python -m experiments.reproduce_horses --table_only                              # the page from the records

A run is configs/horses.py:<system>[,<scale>] at a seed (the split stays split_seed 0). Its record goes to the
scale's folder (SCALES: docs/horses/runs*/<system>-seed<k>.json) and a run with a record is not made again, so the
script resumes. Each --scale is a section of the page; the '<system>-crops' rows (data.crop=24) run only when named.
"""

import dataclasses
import functools
import os
import sys

import numpy as np

# Runs of one system differ only in the seed: their programs are the same, so compile each once.
os.environ.setdefault('JAX_COMPILATION_CACHE_DIR', '/tmp/reproduce_horses_xla_cache')
# pylint: disable=wrong-import-position
from implicit_jax import runner
from implicit_jax.engine import cli
import experiments
from experiments import records, summary, tables
# pylint: enable=wrong-import-position

ROOT = experiments.ROOT
# configs/horses.py's rows, ``<system>[,<variant>]``: without a variant the config as committed (half the published
# channels, 12 epochs: every method on a 2-core CPU); ``full`` the published channels and 100 epochs; ``seal`` and
# ``seal-data`` SEAL's protocol. SYSTEMS in table order; the crop rows, those of one scale only.
HORSES = experiments.config_rows('horses')
SYSTEMS, CROPPED, CROPS_SYSTEMS = HORSES.SYSTEMS, HORSES.CROPPED, HORSES.CROPS_SYSTEMS
FULL_ONLY, SEAL_ONLY, SEAL_VARIANTS = HORSES.FULL_ONLY, HORSES.SEAL_ONLY, HORSES.SEAL_VARIANTS
# Runs of configs/horses.py's implicit design until 2026-11-26 (two inner steps at 1.5e-3, MINRES with 3 HVPs): no
# config holds it any more, so each record is its own recipe. name -> label; shown after implicit-cd-t1-gcr.
EARLIER = {'implicit-cd-before': 'implicit CD, before (T_inner 2, minres)',
           'implicit-dvn': 'implicit DVN-style regression (T_inner 2, minres)'}
ORDER = [s for system in SYSTEMS for s in (system, *(EARLIER if system == 'implicit-cd-t1-gcr' else ()))]  # table order
LABELS = {system: label for system, (label, _) in SYSTEMS.items()} | EARLIER
# The published numbers and the sections' prose: experiments/published.toml, [horses.*]. PUBLISHED: test mean IoU
# x 100 of Shankar & Piratla Table 10 and SEAL Table 4; SEAL_T4_SPREAD: the latter's +- (the claims ledger's
# allowance where it exceeds its 2 points).
_TEXT = experiments.TEXT['horses']
PUBLISHED = _TEXT['published'] | {f'{s}-crops': _TEXT['published'][s] for s in CROPPED}
SEAL_T4_SPREAD = _TEXT['seal_t4_spread']
SEAL_UNFINISHED = _TEXT['seal_unfinished']  # systems of --scale=seal that left no record, and why
# --scale -> (the config's variant, the folder of its records); each scale is a section of docs/horses.md.
SCALES = {scale: (scale if scale != 'half' else '', ROOT / 'docs' / 'horses' / f'runs{folder}')
          for scale, folder in (('half', ''), ('full', '_full'), ('seal', '_seal'), ('seal-data', '_seal_data'))}
TOLERANCE = 2.0  # IoU points from a published number


def config_name(system: str, scale: str = 'half') -> str:
  return f'configs/horses.py:{system}' + (f',{scale}' if scale != 'half' else '')


def run_of(system, seed, args) -> runner.Run:
  """The run of row ``system`` on ``seed`` at ``--scale``: its record in the scale's folder."""
  scale = getattr(args, 'scale', 'half')
  values = {'seed': seed, 'data.data_dir': args.data_dir, **({'num_epochs': args.epochs} if args.epochs else {})}
  config = functools.partial(experiments.row_config, config_name(system, scale), values)
  return runner.Run(f'{system} seed {seed}', config, SCALES[scale][1] / f'{system}-seed{seed}.json',
                    workdir_of(args.workdir, scale, system, seed))


def workdir_of(workdir: str, scale: str, system: str, seed: int) -> str:
  """Where a run trains under ``--workdir`` (and horses_figure.py reads it back)."""
  return f'{workdir}/{scale}-{system}-{seed}'


def section_fields(scale: str, groups) -> dict:
  """The fields of the docs/horses.md section of one scale."""
  first = next(iter(groups.values()))[0]
  cfg, info = first['config'], first['task_info']
  every = [r for rs in groups.values() for r in rs]
  rows, flagged, unrun = table_rows(scale, groups)
  seconds = {s: np.median([r['train_seconds'] for r in rs]) for s, rs in groups.items()}
  kinds = {s: '/'.join(sorted({records.device_of(r).upper() for r in rs})) for s, rs in groups.items()}
  mixed = len(set(kinds.values())) > 1  # then each time names its device, and none compares with another's
  return {
      # its own line under "Made by ...": a template paragraph would join the two (records.unwrap)
      'dated': f'(runs dated {min(r["date"] for r in every)[:10]} to {max(r["date"] for r in every)[:10]}; '
               f'devices: {", ".join(sorted({r["device"] for r in every}))}).',
      'epochs': cfg['num_epochs'], 'batch': cfg['batch_size'], 'steps': first.get('steps'),
      'channels': tuple(cfg['model']['channels']), 'energy_channels': tuple(cfg['model'].get('energy_channels', ())),
      'split': info['split'], 'size': info['size'], 'dev': len(info.get('ids', {}).get('dev', ())),
      'rows': '\n'.join(rows), 'unrun': _TEXT['text']['seal_data_unrun'].format(rows=', '.join(unrun)) if unrun else '',
      'paired': '\n'.join(paired_lines(scale, groups)),
      'flagged': (f'Flagged (more than {TOLERANCE:g} IoU from every published number): {", ".join(flagged)}. '
                  + _TEXT['flagged_why'][scale]) if flagged else '',
      'flattened': '' if scale == 'half' else '; '.join(
          f'{LABELS[s]} {np.mean([records.last_tenth_gain(r, "dev_mean_iou") for r in rs]):+.2f} '
          f'(best epoch {np.median([r["best_epoch"] for r in rs]):.0f})' for s, rs in groups.items()),
      'seconds': ', '.join(f'{LABELS[s]} {seconds[s]:.0f}' + (f' ({kinds[s]})' if mixed else '')
                           for s in ORDER if s in seconds),
      'shared': ' The runs shared their device with other runs: a cost indication, not a speed measurement.'
                if mixed else ''}


def table_rows(scale: str, groups) -> tuple[list[str], list[str], list[str]]:
  """The section's rows in ORDER, the labels of those flagged (more than TOLERANCE from every published number)
  and, on SEAL's data, of the rows of SEAL's protocol not run there yet."""
  rows, flagged, unrun = [], [], []
  elsewhere = set(SECTIONS['seal'].load()) | set(SEAL_UNFINISHED) if scale == 'seal-data' else set()
  for system in ORDER:
    label, name = LABELS[system], None if system in EARLIER else config_name(system, scale)
    rs = sorted(groups.get(system, []), key=lambda r: r['seed'])
    if not rs:
      if system in elsewhere:  # on SEAL's data, a row of SEAL's protocol
        unrun.append(label)
        why = 'not run yet (the line below the table)'
      elif scale == 'half' and name and system not in CROPS_SYSTEMS + FULL_ONLY + SEAL_ONLY:  # others: once run
        why = 'not run'
      elif scale == 'seal' and system in SEAL_UNFINISHED:
        there = SECTIONS['seal-data'].load().get(system)
        seal_data = (f'test mean IoU {records.mean_std([r["test_mean_iou"] for r in there])} over {len(there)} seeds '
                     'in the section above' if there else 'no record there yet')
        why = f'no record: {SEAL_UNFINISHED[system].format(seal_data=seal_data)}'
      else:
        continue
      rows.append(f'| {label} | 0 | {why} | | | | | `{name}` |')
      continue
    pub = PUBLISHED[system]
    gap = min((abs(100 * np.mean([r['test_mean_iou'] for r in rs]) - v) for v in pub.values()), default=0)
    mark = '—' if not pub else 'yes' if gap <= TOLERANCE else f'**no** ({gap:.1f} away)'
    if gap > TOLERANCE:
      flagged.append(label)
    scores = [records.mean_std([r[k] for r in rs]) for k in ('test_mean_iou', 'test_global_iou', 'dev_mean_iou')]
    shown = ', '.join(f'{v:.2f} ({k})' for k, v in pub.items()) or '—'
    # the row's config where its records are that config at their seeds, else the records
    differs = [k for r in rs if name
               for k in records.row_differences(r, experiments.row_config(name, {'seed': r['seed']}))]
    recipe = records.recipe(name, f'{SCALES[scale][1].relative_to(ROOT)}/{system}-seed*.json', differs)
    rows.append(f'| {label} | {len(rs)} | {" | ".join(scores)} | {shown} | {mark} | {recipe} |')
  return rows, flagged, unrun


def paired_lines(scale: str, groups) -> list[str]:
  """The section's paired differences on test mean IoU (the implicit rows against the rivals, each crop row against
  the same without crops), then the config's design against the one it replaced, on dev (what chose it) and test."""
  minus = lambda a, b: (f'{LABELS[a]} minus {LABELS[b]}', a, b)
  pairs = [(f'{LABELS[s]} minus FCN', s, 'fcn') for s in ('implicit-cd', 'implicit-cd-before', 'implicit-cd-t1-gcr',
                                                        'implicit-dvn', 'seal-regression', 'seal-nce', 'dvn')]
  if scale == 'full':  # the implicit paper's claim is over SEAL too: the same pairing against its rows here
    pairs += [minus('implicit-cd', s) for s in ('seal-regression', 'seal-regression-crops')]
  if scale in SEAL_VARIANTS:
    pairs = [minus(i, s) for i in ('implicit-cd', 'implicit-regression')
             for s in ('fcn', 'seal-regression', 'seal-regression-w', 'seal-nce', 'dvn')]
    pairs += [(f'{LABELS[s]} minus FCN', s, 'fcn') for s in ('seal-regression', 'seal-regression-w', 'seal-nce')]
  pairs += [(f'{LABELS[s]} minus the same without crops', s, s[:-len('-crops')]) for s in CROPS_SYSTEMS]
  of = lambda system, key='test_mean_iou': {r['seed']: r[key] for r in groups.get(system, [])}
  lines = [records.paired(what, of(other), of(base), 'test mean IoU') for what, other, base in pairs]
  design = f'{LABELS["implicit-cd"]} minus {LABELS["implicit-cd-r1"]}'
  lines += [records.paired(design, of('implicit-cd', f'{key}_mean_iou'), of('implicit-cd-r1', f'{key}_mean_iou'),
                           f'{key} mean IoU') for key in ('dev', 'test')]
  return [line for line in lines if line]


def draw_curves(groups) -> None:  # pylint: disable=unused-argument
  """docs/horses/curves_<scale>.png of each later section that has records: dev mean IoU per epoch of every system
  (mean over seeds, band = min..max)."""
  from matplotlib.figure import Figure  # pylint: disable=import-outside-toplevel
  for scale, table in SECTIONS.items():
    runs = table.load()
    if not runs:
      continue
    fig = Figure(figsize=(7, 4.2))
    ax = fig.add_subplot()
    for system, rs in runs.items():
      curves = [[h['dev_mean_iou'] for h in records.history(r)] for r in rs]
      n = min(len(c) for c in curves)
      curves = 100 * np.array([c[:n] for c in curves])
      epochs = np.arange(1, n + 1)
      line, = ax.plot(epochs, curves.mean(0), label=f'{LABELS[system]} ({len(rs)} seeds)')
      ax.fill_between(epochs, curves.min(0), curves.max(0), color=line.get_color(), alpha=0.15)
    ax.set(xlabel='epoch', ylabel='dev mean IoU x 100', title=f'Weizmann horses, --scale={scale}: dev curves')
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(ROOT / 'docs' / 'horses' / f'curves_{scale}.png', dpi=110)


# SEAL Table 4's rows that we run (the weight-as-printed regression is our variant of one of them) and the implicit
# paper's: a section with all of them can carry the README's row and the claims ledger.
SUMMARY_ROWS = ('fcn', 'dvn', 'seal-regression', 'seal-nce', 'implicit-cd')


def summary_scale() -> str:
  """The section of the README's summary row and the claims ledger: SEAL's data once it has 3 seeds of every row
  in SUMMARY_ROWS, else SEAL's protocol on the seeded split."""
  runs = SECTIONS['seal-data'].load()
  return 'seal-data' if all(len(runs.get(s, [])) >= 3 for s in SUMMARY_ROWS) else 'seal'


def readme_rows(groups) -> list[str]:  # pylint: disable=unused-argument
  """The README summary row, from the SEAL-protocol section that summary_scale chooses (the setting of the published
  rival numbers), not from the half-width section the page's ``groups`` hold."""
  scale = summary_scale()
  return summary_rows(SECTIONS[scale].load(), scale)


def summary_rows(runs, scale: str) -> list[str]:
  """The README summary row of one section, ``scale``'s records ``runs``: the best implicit row against the best
  other one, on dev mean IoU."""
  a, b = summary.sides(runs, 'dev_mean_iou')
  if not (a and b):
    return []
  devices = sorted({records.device_of(r).upper() for r in runs[a] + runs[b]})
  data = ', SEAL\'s data' if scale == 'seal-data' else ''
  task = (f'Weizmann horses 32x32, mean IoU (docs/horses.md, section "At SEAL\'s protocol{data}": 24x24 crops, '
          f'36-crop test, {HORSES.VARIANTS[scale]["num_epochs"]} epochs, {" and ".join(devices)})')
  return [summary.row('horses', task, (config_name(a, scale), runs[a]), (config_name(b, scale), runs[b]),
                      'test_mean_iou', f'{PUBLISHED["implicit-cd"]["implicit T10"]:.1f}')]


def reading_fields() -> dict:
  """The fields of results.md's reading of the SEAL-protocol and full-width sections (pages/horses.reading.md),
  every number from the sections' records and the published ones."""
  data, seal, full = (SECTIONS[scale].load() for scale in ('seal-data', 'seal', 'full'))
  half, short = TABLES[0].load(), _TEXT['short']
  _iou = lambda rs: 100 * float(np.mean([r['test_mean_iou'] for r in rs]))
  _spread = lambda rs: records.mean_std([r['test_mean_iou'] for r in rs])
  _tenth = lambda rs: np.mean([records.last_tenth_gain(r, 'dev_mean_iou') for r in rs])  # the dev curve's late rise

  def _paired(a, b) -> tuple[float, str, bool]:
    # a - b paired by seed: its mean, the mean as text with the seeds it is positive on unless all, and whether all
    _, d = records.paired_diffs(*({r['seed']: r['test_mean_iou'] for r in rs} for rs in (a, b)))
    up, n = sum(x > 0 for x in d), len(d)
    return float(np.mean(d)), f'{np.mean(d):+.2f}' + ('' if up == n else f' ({up} of {n} seeds positive)'), up == n

  def _over(a, runs, systems) -> str:  # "+1.91 over the FCN, +0.97 over SEAL regression and +4.83 over DVN"
    parts = [f'{_paired(a, runs[s])[1]} over {short[s]}' for s in systems]
    return ', '.join(parts[:-1]) + f' and {parts[-1]}' if len(parts) > 1 else parts[0]

  def _devices(runs: dict) -> str:  # which rows ran on which device
    by = {}
    for system, rs in runs.items():
      kind, _, name = sorted({r['device'] for r in rs})[0].partition(': ')
      by.setdefault('a CPU' if kind == 'cpu' else f'one {name}', []).append(short[system])
    return '; '.join(f'{", ".join(labels)} on {device}' for device, labels in by.items())
  _span = lambda values: '-'.join(dict.fromkeys(f'{v:.1f}' for v in (min(values), max(values))))  # low-high, or one
  pub = {s: PUBLISHED[s]['SEAL T4'] for s in ('fcn', 'dvn', 'seal-regression', 'seal-nce')}
  paper_cd = PUBLISHED['implicit-cd']['implicit T10']
  rivals = ('fcn', 'seal-regression', 'dvn', 'seal-nce')
  near = [s for s in rivals if abs(_iou(data[s]) - pub[s]) <= TOLERANCE
          and np.std([r['test_mean_iou'] for r in data[s]], ddof=1) * 100 < 1.5]
  far = [s for s in rivals if s not in near]
  nce = sorted(100 * r['test_mean_iou'] for r in data['seal-nce'])
  epochs = data['seal-nce'][0]['config']['num_epochs']
  lead = all(_paired(data[i], data[s])[2] for i in ('implicit-cd', 'implicit-regression') for s in rivals)
  seal_rivals = ('fcn', 'seal-regression', 'seal-regression-w', 'seal-nce')
  gains = {s: _iou(full[s]) - _iou(half[s]) for s in ('implicit-cd', 'implicit-dvn', 'seal-regression', 'fcn', 'dvn')}
  return {
      'data_devices': _devices(data), 'tolerance': f'{TOLERANCE:g}',
      'data_near': {0: 'None', 1: 'One', 2: 'Two', 3: 'Three', 4: 'All four'}[len(near)],
      'data_near_rows': ', '.join(f'{short[s]} ({_spread(data[s])} against {pub[s]:.2f})' for s in near),
      'data_far': '; '.join(f'{short[s]} misses ({_spread(data[s])} against {pub[s]:.2f})' for s in far),
      'nce_low': f'its lowest seed ends {np.mean(nce[1:]) - nce[0]:.1f} points under the mean of the other two',
      'nce_late': f'{sum(r["best_epoch"] > epochs - 3 for r in data["seal-nce"])} of {len(data["seal-nce"])}',
      'data_epochs': str(epochs), 'dvn_tenth': f'{_tenth(data["dvn"]):+.2f}',
      'data_lead': ('Both implicit rows lead every rival on every seed' if lead
                    else 'The implicit rows against each rival'),
      'cd_over': _over(data['implicit-cd'], data, ('fcn', 'seal-regression', 'dvn')),
      'reg_over': _over(data['implicit-regression'], data, ('fcn', 'seal-regression', 'dvn')),
      'over_seal': f'{_paired(data["implicit-cd"], data["seal-regression"])[0]:+.2f}',
      'paper_over_seal': f'{paper_cd - pub["seal-regression"]:+.1f}', 'paper_cd': f'{paper_cd:.1f}',
      'cd_under': f'{paper_cd - _iou(data["implicit-cd"]):.1f}',
      'seal_over_fcn': _paired(data['seal-regression'], data['fcn'])[1],
      'seal_published_over_fcn': f'{pub["seal-regression"] - pub["fcn"]:+.2f}',
      'seal_epochs': str(seal['fcn'][0]['config']['num_epochs']), 'seal_devices': _devices(seal).split(' on ')[-1],
      'fcn_rise': f'{_iou(seal["fcn"]) - _iou(full["fcn"]):.1f}',
      'fcn_full_sd': _spread(full['fcn']).split(' ± ')[1], 'fcn_seal_sd': _spread(seal['fcn']).split(' ± ')[1],
      'fcn_seal': _spread(seal['fcn']),
      'sr_rise': f'{_iou(seal["seal-regression"]) - _iou(full["seal-regression"]):.1f}',
      'seal_under': _span([pub[s] - _iou(seal[s]) for s in ('fcn', 'seal-regression', 'seal-nce')]),
      'pub_fcn': f'{pub["fcn"]:.2f}', 'pub_sr': f'{pub["seal-regression"]:.2f}', 'pub_nce': f'{pub["seal-nce"]:.2f}',
      'seal_cd': _spread(seal['implicit-cd']),
      'seal_lead': ('leads every rival on every seed' if all(_paired(seal['implicit-cd'], seal[s])[2]
                                                             for s in seal_rivals) else 'against each rival'),
      'seal_cd_over': _over(seal['implicit-cd'], seal, seal_rivals),
      'seal_over_seal': _span([_paired(seal['implicit-cd'], seal[s])[0] for s in ('seal-regression',
                                                                                 'seal-regression-w')]),
      'sr_fcn': (f'{_paired(seal["seal-regression"], seal["fcn"])[1]}, and with its energy weight as printed '
                 f'{_paired(seal["seal-regression-w"], seal["fcn"])[1]}'),
      'seal_tenths': ', '.join(f'{short[s]} {_tenth(rs):+.2f}' for s, rs in seal.items()),
      'full_epochs': str(full['fcn'][0]['config']['num_epochs']), 'full_devices': _devices(full).split(' on ')[-1],
      'full_gains': ', '.join(f'{short[s]} {g:+.2f}' for s, g in gains.items()),
      'full_cd': _spread(full['implicit-cd']), 'full_cd_sr': _paired(full['implicit-cd'], full['seal-regression'])[1],
      'full_src': _spread(full['seal-regression-crops']),
      'full_cd_src': _paired(full['implicit-cd'], full['seal-regression-crops'])[1],
      'full_cd_src_mean': f'{_paired(full["implicit-cd"], full["seal-regression-crops"])[0]:+.2f}',
      'full_reg_cd': _paired(full['implicit-dvn'], full['implicit-cd'])[1],
      'full_fcn': _spread(full['fcn']),
      'full_fcn_seeds': ', '.join(f'{v:.2f}' for v in sorted(100 * r['test_mean_iou'] for r in full['fcn'])),
      'full_fcn200': _spread(full['fcn-200']),
      'full_dvn_best': f'{np.median([r["best_epoch"] for r in full["dvn"]]):.0f}',
      'full_cd_under': f'{paper_cd - _iou(full["implicit-cd"]):.1f}',
      'full_under': _span([pub[s.removesuffix('-crops')] - _iou(full[s])
                           for s in ('fcn', 'seal-regression', 'seal-regression-crops')]),
  }


def blocks(groups, fields) -> dict:  # pylint: disable=unused-argument
  """docs/results.md's horses block: the tables and paired differences of each section, the full-width one's
  schedule before its table; and its reading of the later sections, from pages/horses.reading.md."""
  kept = [line for line in fields['page'].splitlines() if line.startswith(('|', '- ', '**CPU'))]
  for name, part in fields['parts'].items():
    lines = part['page'].splitlines()
    head = _TEXT['block_heads'][name]
    if name == 'horses-full':  # its schedule, as the section says it
      head += next(line for line in lines if line.startswith('**Published')).replace('**', '')
    kept += ['', head, ''] + [line for line in lines if line.startswith(('|', '- '))]
  reading = tables.page('horses.reading.md', reading_fields()).strip()
  return {('docs/results.md', 'horses-reading'): reading, ('docs/results.md', 'horses'): (
      f'\nTest mean IoU x 100 at threshold 0.5, {fields["spread"]}, from the committed runs '
      '([horses.md](horses.md): commands, split, protocol differences, flags).\n\n' + '\n'.join(kept))}


def section(scale: str, **more) -> tables.Table:
  """The docs/horses.md section of one scale, from its records (SCALES), its template pages/horses[.<scale>].md and
  its command list docs/horses[.<scale>].commands.txt."""
  half = scale == 'half'
  return tables.Table(f'horses-{scale}', 'docs/horses.md', (f'{SCALES[scale][1].relative_to(ROOT)}/*.json',),
                      functools.partial(section_fields, scale), template='' if half else f'horses.{scale}.md',
                      section='' if half else scale, **more)


SECTIONS = {scale: section(scale) for scale in ('seal-data', 'seal', 'full')}  # the later sections, in page order
TABLES = [dataclasses.replace(section('half'), name='horses', parts=tuple(SECTIONS.values()), blocks=blocks,
                              summary=('horses', readme_rows), after=draw_curves)]


def main():
  args = experiments.parse(__doc__, {
      '--systems': {'type': experiments.names(list(SYSTEMS)),
                    'help': f'default: every system but the crop rows ({",".join(CROPS_SYSTEMS)}), which run when '
                            f'named, and at --scale=half but {",".join(FULL_ONLY)} (rows of --scale=full only)'},
      '--epochs': {'type': int, 'default': 0, 'help': 'override configs/horses.py num_epochs'},
      '--scale': {'default': 'half', 'choices': sorted(SCALES),
                  'help': "half: configs/horses.py as committed (CPU); full: published channels, 100 epochs; seal: "
                          "SEAL's protocol (24x24 crops, 36-crop test, its split sizes and chosen settings); "
                          "seal-data: the same on SEAL's split and Li et al.'s resizing (data.split, data.resize)"},
      '--workdir': {'default': '/tmp/reproduce_horses'},
      '--no_table': {'action': 'store_true',
                     'help': 'train and write the records only (parallel runs: one table at the end, --table_only)'}})
  if not args.table_only:
    systems = args.systems or [
        s for s in SYSTEMS if s not in CROPS_SYSTEMS and (args.scale == 'full' or s not in FULL_ONLY)
        and (args.scale in SEAL_VARIANTS or s not in SEAL_ONLY)]
    for only, scales in ((FULL_ONLY, ('full',)), (SEAL_ONLY, SEAL_VARIANTS)):
      if args.scale not in scales and set(systems) & set(only):
        args.error(f'--systems: {sorted(set(systems) & set(only))} run at --scale={" or ".join(scales)} only')
    experiments.run([run_of(system, seed, args) for seed in args.seeds for system in systems], args)
    if args.no_table:
      return
  print(tables.build(TABLES[0]))


if __name__ == '__main__':
  sys.exit(cli.guarded(main))
