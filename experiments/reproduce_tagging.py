"""Sequence labeling: every method on Twitter POS, CoNLL-2003 NER and NER+, over seeds, beside the published numbers.

  python -m experiments.reproduce_tagging --dataset=pos --data_dir=../shared/data --seeds=0,1,2  # train what is missing
  python -m experiments.reproduce_tagging --sweep=pos-ff --seeds=0                               # a dev sweep
  python -m experiments.reproduce_tagging --table_only                                           # the tables alone
  python -m experiments.reproduce_tagging --pending | xargs -P 12 -I{} sh -c '{}'  # the NER / NER+ runs left, 12 at
  python -m experiments.reproduce_tagging --table_only                            # a time (they write no tables)

A run is configs/<dataset>.py:<system> (the rows as configs/pos.py writes them) on a seed; ner_fixed is ner with the
word vectors frozen, as InfNet+ ran NER. Its record, docs/tagging/runs/<dataset>-<system>-seed<k>.json, is not run
again but with --supersede where it keeps no predictions (rerun from itself, the old one to
docs/tagging/runs_superseded/). A sweep (sweeps.toml [tagging.*]) writes docs/tagging/sweeps/<sweep>/ and <sweep>.md.
The tables: docs/tagging.md (and docs/results.md's tagging, margins and tagging-ssvm blocks; README's summary).
"""

import functools
import os
import sys

import numpy as np

os.environ.setdefault('JAX_COMPILATION_CACHE_DIR', '/tmp/reproduce_tagging_xla_cache')
from implicit_jax import runner  # pylint: disable=wrong-import-position
from implicit_jax.engine import cli  # pylint: disable=wrong-import-position
import experiments  # pylint: disable=wrong-import-position
from experiments import records, summary, tables  # pylint: disable=wrong-import-position

ROOT = records.ROOT
# configs/pos.py's rows (system -> (label, overrides), in table order) and TRIED_ON, those of some datasets only
_ROWS = experiments.config_rows('pos')  # the file run once
SYSTEMS, TRIED_ON = _ROWS.SYSTEMS, _ROWS.TRIED_ON
# Runs of the implicit rows' design until 2026-11-26 (five inner steps at 1e-3, normal_cg with 5 iterations: 11
# HVPs, the term on every step), no paper's system: no config holds that design any more, so each record is its own
# recipe. The tables set them apart and pair each with its row of today's design. name -> (label, today's row).
EARLIER = {'implicit-ssvm-before': ('implicit SSVM, before (T_inner 5, normal_cg)', 'implicit-ssvm'),
           'implicit-cd-before': ('implicit CD, before (T_inner 5, normal_cg)', 'implicit-cd')}
IMPLICIT = ('implicit-cd', 'implicit-cd-r1', 'implicit-ssvm', *EARLIER)
LABELS = {system: label for system, (label, _) in {**SYSTEMS, **EARLIER}.items()}
DATASETS = {'pos': 'Twitter POS (token accuracy)', 'ner': 'CoNLL-2003 NER (chunk F1; trainable word vectors)',
            'ner_fixed': 'CoNLL-2003 NER, fixed word vectors as InfNet+ (chunk F1; configs/ner_fixed.py)',
            'ner_plus': 'CoNLL-2003 NER+ (chunk F1; caps, POS and chunk inputs)'}
# The dev metric that picked each run's best epoch. NER keeps strict chunk F1: every committed NER record was selected
# on it and none keeps predictions to rescore, so conlleval's ('f1_conlleval', data.chunk_select) needs every record
# of a row rerun; until then a row mixing the two would compare epochs chosen by different rules (row_line refuses).
SELECT = {'pos': 'accuracy', 'ner': 'f1', 'ner_fixed': 'f1', 'ner_plus': 'f1'}
CONLLEVAL = 'f1_conlleval'  # the papers' chunk metric, in the records from when predictions were kept
HEADLINE = {dataset: key if dataset == 'pos' else CONLLEVAL for dataset, key in SELECT.items()}  # the papers' metric
# Published test numbers (x 100), published.toml. InfNet (2018) is InfNet+ Table 2's "SPENs with inference networks
# (Tu and Gimpel, 2018)" margin-rescaled row on all three datasets. The implicit paper's Table 9 InfNet (89.7 on POS)
# cites Tu & Gimpel 2019 (arXiv:1904.01138, not among the papers here) and equals InfNet+'s "separated" row; it is
# kept, under its own citation, because that is what the paper compares with.
PUBLISHED = experiments.TEXT['tagging']['published']
PUBLISHED['ner_fixed'] = dict(PUBLISHED['ner'])  # InfNet+ ran NER with fixed vectors (issue 33): beside both settings
for _published in PUBLISHED.values():  # the papers' implicit CD number stands beside both schedules of the term
  if 'implicit-cd' in _published:
    _published['implicit-cd-r1'] = _published['implicit-cd']
TOLERANCE = 1.5
TEXT = experiments.TEXT['tagging']['text']  # the prose under the tables
RUNS = ROOT / 'docs' / 'tagging' / 'runs'
# Records replaced by a rerun of the same config and seed (issue 33: NER / NER+ records made before conlleval's F1 and
# the predictions were kept), kept to show how far a rerun moves a committed figure.
SUPERSEDED = ROOT / 'docs' / 'tagging' / 'runs_superseded'
SWEEP_DIR = ROOT / 'docs' / 'tagging' / 'sweeps'
SWEEPS = {name: (sweep['dataset'], sweep['variants']) for name, sweep in experiments.sweeps('tagging').items()}


def systems(dataset: str) -> list[str]:
  """``dataset``'s rows, in table order: SYSTEMS but those tried on other datasets only (TRIED_ON)."""
  return [s for s in SYSTEMS if dataset in TRIED_ON.get(s, (dataset,))]


def config_name(dataset: str, system: str) -> str:
  return f'configs/{dataset}.py:{system}'


def base_config(dataset, seed, data_dir, row, epochs: int = 0):
  """``row`` a system (configs/<dataset>.py:<row>) or a sweep variant's overrides on configs/<dataset>.py."""
  name, values = (config_name(dataset, row), {}) if isinstance(row, str) else (f'configs/{dataset}.py', row)
  return experiments.row_config(name, {**values, 'seed': seed, 'data.data_dir': data_dir,
                                       **({'num_epochs': epochs} if epochs else {})})


def pending(datasets, seeds, folder=None) -> list[tuple[str, str, int]]:
  """(dataset, system, seed) of every row beside the published numbers (not one that repeats an earlier row's
  config) whose record is absent or keeps no predictions to rescore."""
  paths = {(d, s, k): (folder or RUNS) / f'{d}-{s}-seed{k}.json' for d in datasets for s in systems(d)
           if s not in duplicates(d) for k in seeds}
  return [run for run, path in paths.items() if not path.exists() or not records.rescorable(records.load(path))]


def run_of(dataset, system, seed, args, sweep: str = '') -> runner.Run:
  """The run of ``dataset``'s row ``system`` (of ``sweep``'s variant ``system``) on ``seed``."""
  dataset, row = (SWEEPS[sweep][0], SWEEPS[sweep][1][system]) if sweep else (dataset, system)
  record = SWEEP_DIR / sweep / f'{system}-seed{seed}.json' if sweep else RUNS / f'{dataset}-{system}-seed{seed}.json'
  return runner.Run(f'{sweep or dataset} {system} seed {seed}',
                    lambda: base_config(dataset, seed, args.data_dir, row, args.epochs), record,
                    f'{args.workdir}/{sweep or dataset}-{system}-{seed}')


def run(runs, args) -> list[runner.Outcome]:
  """--supersede reruns a record that keeps no predictions from itself (the word vectors read from the package
  where its file is not here), the old one moving to SUPERSEDED."""
  return experiments.run(runs, args, supersede=SUPERSEDED if args.supersede else None,
                         recipe=records.recipe_here(args.data_dir, adapt=records.package_vectors))


def scored(dataset, rs) -> tuple[str, float]:
  """The metric a row is set beside the papers' on (conlleval F1 where every record holds it), its test mean x 100."""
  metric = CONLLEVAL if dataset != 'pos' and all(f'test_{CONLLEVAL}' in r for r in rs) else SELECT[dataset]
  return metric, 100 * np.mean([r[f'test_{metric}'] for r in rs])


def by_seed(runs, dataset: str, system: str, metric: str) -> dict:
  return {r['seed']: r[f'test_{metric}'] for r in runs.get(f'{dataset}-{system}', []) if f'test_{metric}' in r}


def versus(runs, dataset, system, other, metric, form: str = '{} ({}/{})') -> tuple[list, list, str]:
  """The seeds both rows hold, ``system - other`` on each (test ``metric`` x 100), and ``form`` filled with the
  mean difference, how many are positive and of how many ('' without a seed in common)."""
  seeds, diffs = records.paired_diffs(by_seed(runs, dataset, system, metric), by_seed(runs, dataset, other, metric))
  return seeds, diffs, form.format(f'{np.mean(diffs):+.2f}', sum(d > 0 for d in diffs), len(diffs)) if seeds else ''


def stray_cell(rs) -> str:
  """Test chunks conlleval counts and strict BIOES does not (mean over the records that hold both counts): for the
  most part a stray I-/E- tag, which conlleval opens as a chunk and strict drops (docs/tagging.md)."""
  have = [r['test_num_pred_conlleval'] - r['test_num_pred'] for r in rs if 'test_num_pred_conlleval' in r]
  return f'{np.mean(have):.0f}' if have else '–'


def dataset_section(dataset, runs) -> tuple[list, list]:
  """``dataset``'s section of docs/tagging.md (its tables, paired differences and notes) and its flagged rows."""
  key = SELECT[dataset]
  of = lambda system: runs.get(f'{dataset}-{system}', [])
  twins = duplicates(dataset)
  header = TEXT['head_pos' if dataset == 'pos' else 'head_ner'].format(key=key, tolerance=f'{TOLERANCE:g}')
  flagged = []

  def paired(system, base):
    return records.paired(f'{LABELS[system]} minus {"BiLSTM" if base == "bilstm" else LABELS[base]}',
                          by_seed(runs, dataset, system, key), by_seed(runs, dataset, base, key), f'test {key}')

  def cells(system, metric):  # ``system`` against the BiLSTM seed by seed
    seeds, diffs, total = versus(runs, dataset, system, 'bilstm', metric)
    each = ', '.join(f'{d:+.2f}' if seeds == list(range(len(seeds))) else f'seed {k} {d:+.2f}'
                     for k, d in zip(seeds, diffs))
    return [each, total] if seeds else ['–', '–']
  lines = [f'## {DATASETS[dataset]}', '', header,
           *(row_line(dataset, system, of(system), flagged) for system in systems(dataset) if system not in twins)]
  if earlier := [row_line(dataset, system, of(system), flagged) for system in EARLIER if of(system)]:
    lines += ['', TEXT['earlier_note'], '', header, *earlier, '']
    lines += [line for before, (_, now) in EARLIER.items() if (line := paired(now, before))]
  lines.append('')
  if dataset != 'pos':  # every row against the BiLSTM, on conlleval's F1 (the papers' metric) and on strict F1
    shown = [s for s in LABELS if s != 'bilstm' and s not in twins and of(s)]
    lines += [TEXT['paired_head'], *(f'| {LABELS[s]} | ' + ' | '.join(cells(s, CONLLEVAL) + cells(s, 'f1')) + ' |'
                                     for s in shown), '']
  else:
    lines += [line for system in (*IMPLICIT, 'crf', 'infnet-plus-stacked') if (line := paired(system, 'bilstm'))]
  lines += [TEXT['duplicate'].format(row=config_name(dataset, system), twin=config_name(dataset, twin),
                                     label=LABELS[system]) for system, twin in twins.items()]
  if gpu := [LABELS[system] for system in LABELS if gpu_mark(of(system))]:
    pairing = TEXT['gpu_both' if gpu_mark(of('bilstm')) else 'gpu_mixed']
    lines.append(TEXT['gpu'].format(rows=', '.join(gpu), pairing=pairing))
  lines += superseded_lines(dataset, runs)
  return lines + [line for system in IMPLICIT if (line := diagnostics_line(LABELS[system], of(system)))] + [''], flagged


def row_line(dataset, system, rs, flagged) -> str:
  """The table row of ``system``'s records ``rs``; its label joins ``flagged`` when its mean is more than TOLERANCE
  from every published number ('**no**' in the within cell; on NER the metric named)."""
  rs = sorted(rs, key=lambda r: r['seed'])
  key, chunked, label = SELECT[dataset], dataset != 'pos', LABELS[system]
  pub = PUBLISHED[dataset].get(system, {})
  shown = ', '.join(f'{v:.1f} ({k})' for k, v in pub.items()) or '—'
  if not rs:
    return f'| {label} | 0 | not run |{" |" * (2 * chunked)} | {shown} | | | `{config_name(dataset, system)}` |'
  # the dev metric that chose each record's epoch: NER's data.chunk_select, strict 'f1' in records before it
  chosen = {r.get('config', {}).get('data', {}).get('chunk_select', 'f1') if chunked else key for r in rs}
  if mixed := sorted(chosen - {key}):
    raise SystemExit(f'{dataset}-{system}: records selected on dev {mixed}, the table on dev {key}: rerun the '
                     'row\'s other records alike, or set SELECT with every record rerun')
  mark = '—'
  if pub:
    metric, mean = scored(dataset, rs)
    gap = mean - min(pub.values(), key=lambda v: abs(mean - v))
    mark = 'yes' if abs(gap) <= TOLERANCE else f'**no** ({abs(gap):.1f} {"above" if gap > 0 else "below"})'
    mark += '' if dataset == 'pos' else ' (conlleval)' if metric == CONLLEVAL else ' (strict)'
    if abs(gap) > TOLERANCE:
      flagged.append(label)
  cells = [records.mean_std([r[f'test_{key}'] for r in rs]), records.mean_std([r[f'dev_{key}'] for r in rs])]
  if chunked:  # conlleval's F1 over the seeds whose records hold it, older ones counted, not guessed
    have = [r[f'test_{CONLLEVAL}'] for r in rs if f'test_{CONLLEVAL}' in r]
    part = '' if len(have) == len(rs) else f' ({len(have)} of {len(rs)} seeds)'
    cells = [records.mean_std(have) + part if have else 'not recorded', *cells, stray_cell(rs)]
  name = None if system in EARLIER else config_name(dataset, system)
  differs = [k for r in rs if name and 'config' in r
             for k in records.row_differences(r, base_config(dataset, r['seed'], '', system))]
  cells += [shown, mark, f'{np.median([r["train_seconds"] for r in rs]):.0f}{gpu_mark(rs)}',
            records.recipe(name, f'{RUNS.relative_to(ROOT)}/{dataset}-{system}-seed*.json', differs)]
  return f'| {label} | {len(rs)} | {" | ".join(cells)} |'


@functools.cache
def duplicates(dataset: str) -> dict[str, str]:
  """Each row whose config on ``dataset`` is an earlier row's, to that row: configs/ner_plus.py computes the implicit
  term on every step, so its implicit-cd-r1 is its implicit-cd."""
  configs = {s: repr({k: v for k, v in base_config(dataset, 0, '', s).to_dict().items() if k != 'config_file'})
             for s in systems(dataset)}
  return {s: first for s, c in configs.items() if (first := next(o for o in configs if configs[o] == c)) != s}


def superseded_lines(dataset, runs) -> list[str]:
  """How far the reruns of replaced records (SUPERSEDED) moved: same config and seed, same device kind."""
  olds = [(tables.stem(path, {}), records.load(path)) for path in sorted(SUPERSEDED.glob(f'{dataset}-*.json'))]
  pairs = [(name, old, new) for name, old in olds for new in runs.get(name, []) if new['seed'] == old['seed']]
  return ([TEXT['reruns'].format(n=len(pairs)) + records.rerun_moves(pairs, 'test_f1', 'test F1 strict')]
          if pairs else [])


def gpu_mark(rs) -> str:
  """' (GPU)' or ' (k of n on a GPU)': their seconds are not the 2-core CPU's of the other rows."""
  k = sum(records.device_of(r) == 'gpu' for r in rs)
  return '' if not k else ' (GPU)' if k == len(rs) else f' ({k} of {len(rs)} on a GPU)'


def term_ratio(summary_: dict) -> float:
  return summary_['implicit_norm']['median'] / summary_['explicit_norm']['median']


def diagnostics_line(label, rs) -> str:
  """What the implicit term was during training: the IFT premise (stationarity) and its weight against the
  explicit term, each the median over a run's logged steps, then the mean over seeds."""
  summaries = [r['train_summary'] for r in rs if 'stationarity' in r.get('train_summary', {})]
  if not summaries:
    return ''
  stationarity = {k: np.mean([t['stationarity'][k] for t in summaries]) for k in ('median', 'first', 'last')}
  return TEXT['diagnostics'].format(label=label, seeds=f'{len(summaries)} seed' + 's' * (len(summaries) > 1),
                                    cosine=np.mean([t['cosine']['median'] for t in summaries]),
                                    ratio=np.mean([term_ratio(t) for t in summaries]), **stationarity)


def base_phrase(dataset, groups) -> str:
  """Where the BiLSTM, the base every method starts from, sits against its published numbers."""
  if not (rs := groups.get(f'{dataset}-bilstm', [])):
    return 'our BiLSTM has no record'
  (metric, mean), pub = scored(dataset, rs), PUBLISHED[dataset]['bilstm']
  side = 'above' if mean > max(pub.values()) else 'below' if mean < min(pub.values()) else 'between'
  gap = {'above': ', so every method shares a stronger base',
         'below': ', so a flagged row shares part of its gap with the base every method starts from'}.get(side, '')
  where = ' and '.join(f'{v:.1f} ({k})' for k, v in pub.items())
  return f'our BiLSTM ({mean:.2f}, {metric}) is itself {side} its published {where}{gap}'


def fields(groups) -> dict:
  """docs/tagging.md's fields: the runs' dates and devices, a section for each dataset with records, its flags."""
  every = [r for rs in groups.values() for r in rs]
  parts = {d: dataset_section(d, groups) for d in DATASETS if any(name.startswith(f'{d}-') for name in groups)}
  flagged = [TEXT['flagged'].format(dataset=d, tolerance=f'{TOLERANCE:g}', rows=', '.join(flags))
             + TEXT[f'flag_{d}'].format(base=base_phrase(d, groups)) for d, (_, flags) in parts.items() if flags]
  return {'first': min(r['date'] for r in every)[:10], 'last': max(r['date'] for r in every)[:10],
          'devices': ', '.join(sorted({r['device'] for r in every})), 'flagged': '\n\n'.join(flagged),
          'sections': '\n'.join(line for lines, _ in parts.values() for line in lines)}


def ssvm_lines(groups) -> list[str]:
  """results.md's bullet on implicit SSVM, every number from the records of its rows and implicit CD's."""
  datasets = [d for d in ('ner', 'ner_plus', 'pos') if f'{d}-implicit-ssvm' in groups and f'{d}-implicit-cd' in groups]
  if not datasets:
    return []
  names = {'ner': 'NER (conlleval F1)', 'ner_plus': 'NER+ (conlleval F1)', 'pos': 'POS (accuracy)'}
  figure = lambda d, system: records.mean_std([r[f'test_{HEADLINE[d]}'] for r in groups[f'{d}-{system}']])
  gain = lambda d, other: versus(groups, d, 'implicit-ssvm', other, HEADLINE[d], '{}, {} of {} seeds positive')[2]
  each = '; '.join(f'on {names[d]} {figure(d, "implicit-ssvm")} against implicit CD\'s {figure(d, "implicit-cd")} '
                   f'({gain(d, "implicit-cd")}), over the BiLSTM {gain(d, "bilstm")}' for d in datasets)
  ssvm, cd = ([np.mean([term_ratio(r['train_summary']) for r in groups[f'{d}-{s}']]) for d in datasets]
              for s in ('implicit-ssvm', 'implicit-cd'))
  return [TEXT['ssvm'].format(each=each, ssvm=f'{100 * min(ssvm):.1f}-{100 * max(ssvm):.1f}',
                              cd=f'{100 * min(cd):.0f}-{100 * max(cd):.0f}')]


# The lines of docs/tagging.md that docs/results.md's tagging block copies, by how each is spaced there (markdown:
# headings, paragraphs and tables need blank lines between them; headings in bold).
COPIED = {'|': '{}', '- ': '{}', '## ': '\n**{}**\n', '**Emb': '{}\n', 'Flagged': '\n{}', 'Paired': '\n{}\n',
          'Earlier': '\n{}'}


def blocks(groups, fields) -> dict:
  """docs/results.md's tagging block (the lines of the page it COPIES), its margins block and SSVM bullet."""
  kept = [form.format(line.removeprefix('## ')) for line in fields['page'].splitlines()
          for start, form in COPIED.items() if line.startswith(start)]
  return {('docs/results.md', 'tagging'): TEXT['results_head'].format(spread=fields['spread']) + '\n'.join(kept),
          ('docs/results.md', 'margins'): '\n' + '\n'.join(margins_lines(groups)) + '\n',
          ('docs/results.md', 'tagging-ssvm'): '\n'.join(ssvm_lines(groups))}


def sweep_table(sweep: str) -> tables.Table:
  """docs/tagging/sweeps/<sweep>.md: a row for each record of the sweep's variants, in their order."""
  dataset, variants = SWEEPS[sweep]
  key, folder = SELECT[dataset], f'docs/tagging/sweeps/{sweep}'
  fields = lambda groups: {'sweep': sweep, 'dataset': dataset, 'key': key, 'table': '\n'.join(
      f'| {variant} | {records.portable(", ".join(f"{k}={v}" for k, v in overrides.items()))} | {r["seed"]} | '
      f'{r["best_epoch"]} | {100 * r[f"dev_{key}"]:.2f} | {100 * r[f"test_{key}"]:.2f} | {r["train_seconds"]:.0f} |'
      for variant, overrides in variants.items() for r in groups.get(variant, []))}
  return tables.Table(f'tagging-{sweep}', f'{folder}.md', (f'{folder}/*.json',), fields,
                      key=tables.variant_key(variants), template='tagging_sweep.md',
                      command=f'python -m experiments.reproduce_tagging --sweep={sweep} --table_only')


def margins_lines(runs) -> list[str]:
  """docs/results.md's "where the papers' margins go": the implicit paper's implicit CD minus its BiLSTM beside
  ours, paired by seed on the papers' metric, and the row best on dev here (summary.MIN_RUNS seeds) against it."""
  lines = [TEXT['margins_head']]
  for dataset, title in DATASETS.items():
    metric = HEADLINE[dataset]
    groups = {system: runs.get(f'{dataset}-{system}', []) for system in systems(dataset)}
    cell = lambda system: versus(runs, dataset, system, 'bilstm', metric, '{} ({}/{} seeds)')[2] or 'not recorded'
    cd, base = PUBLISHED[dataset]['implicit-cd'], PUBLISHED[dataset]['bilstm']
    paper = ', '.join(f'{cd[t] - base[t]:+.1f} ({t})' for t in cd if t in base) or '–'
    best = summary.best({s: rs for s, rs in groups.items() if s != 'bilstm'}, f'dev_{SELECT[dataset]}')
    means = {system: 100 * np.mean([r[f'test_{metric}'] for r in rs]) for system, rs in groups.items()
             if len(rs) >= summary.MIN_RUNS and all(f'test_{metric}' in r for r in rs)}
    above = [f'{LABELS[system].split(" (")[0]} {m:.2f}' for system, m in sorted(means.items(), key=lambda i: -i[1])
             if 'implicit-cd' in means and m > means['implicit-cd']]
    lines.append(f'| {title.split(" (")[0]}{" (conlleval F1)" if dataset != "pos" else " (accuracy)"} | {paper} | '
                 f'{cell("implicit-cd")} | {LABELS[best] if best else "–"} | {cell(best) if best else "–"} | '
                 f'{", ".join(above) or ("none" if "implicit-cd" in means else "–")} |')
  return lines


def summary_rows(runs) -> list[str]:
  """README summary rows: per dataset, the best implicit row against the best other one on the dev metric."""
  rows = []
  for dataset, title in DATASETS.items():
    key, groups = SELECT[dataset], {s: rs for s in systems(dataset) if (rs := runs.get(f'{dataset}-{s}'))}
    a, b = summary.sides(groups, f'dev_{key}')
    if a and b:
      published = ', '.join(f'{v:.1f}' for v in PUBLISHED[dataset].get('implicit-cd', {}).values()) or '–'
      rows.append(summary.row('tagging', title, (config_name(dataset, a), groups[a]),
                              (config_name(dataset, b), groups[b]), f'test_{key}', published,
                              extra='' if dataset == 'pos' else f'test_{CONLLEVAL}'))
  return rows


SWEEP_TABLES = {sweep: sweep_table(sweep) for sweep in SWEEPS}
TABLES = [tables.Table('tagging', 'docs/tagging.md', ('docs/tagging/runs/*.json',), fields, blocks=blocks,
                       summary=('tagging', summary_rows)), *SWEEP_TABLES.values()]


def main():
  args = experiments.parse(__doc__, {
      '--dataset': {'default': 'pos', 'choices': sorted(DATASETS)},
      '--systems': {'default': ','.join(SYSTEMS), 'type': experiments.names(list(SYSTEMS))},
      '--sweep': {'default': '', 'choices': [''] + sorted(SWEEPS)},
      '--only': {'default': '', 'help': '--sweep: comma-separated variants (default: all)'},
      '--epochs': {'type': int, 'default': 0, 'help': 'override the config\'s num_epochs'},
      '--workdir': {'default': '/tmp/reproduce_tagging'},
      '--supersede': {'action': 'store_true', 'help': 'rerun a record that keeps no predictions from itself'},
      '--no_table': {'action': 'store_true', 'help': 'write the records only (for runs in parallel)'},
      '--pending': {'action': 'store_true', 'help': 'print the command of each NER / NER+ run left, and exit'}})
  if args.pending:
    left = pending(('ner', 'ner_plus'), args.seeds)
    for dataset, system, seed in left:
      print(f'python -m experiments.reproduce_tagging --dataset={dataset} --systems={system} --seeds={seed} '
            f'--supersede --no_table --data_dir={args.data_dir} --workdir={args.workdir}')
    # On stderr, so that stdout stays one command a line for xargs, and an empty list reads as done, not as a failure.
    print(f'{len(left)} NER / NER+ run(s) left on seeds {",".join(map(str, args.seeds))}', file=sys.stderr)
  elif args.sweep:
    chosen = experiments.chosen_variants(args, args.only, SWEEPS[args.sweep][1])
    if not args.table_only:
      experiments.run([run_of('', variant, seed, args, args.sweep) for seed in args.seeds for variant in chosen], args)
    print(tables.build(SWEEP_TABLES[args.sweep]))
  else:
    if not args.table_only:
      run([run_of(args.dataset, system, seed, args) for seed in args.seeds for system in args.systems], args)
    if args.table_only or not args.no_table:
      print(tables.build(TABLES[0]))


if __name__ == '__main__':
  sys.exit(cli.guarded(main))
