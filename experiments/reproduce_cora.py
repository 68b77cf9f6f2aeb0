"""Cora citation fields, indirectly supervised: every method at 5, 10 and 50 labeled citations over 5 labeled
draws, beside the paper's Table 4 (docs/cora.md; block results:cora of docs/results.md; rows of README's summary).

  python -m experiments.reproduce_cora --data_dir=../shared/data               # train what is missing, write the table
  python -m experiments.reproduce_cora --systems=bilstm,crf --sizes=5 --draws=0,1
  python -m experiments.reproduce_cora --table_only
  python -m experiments.reproduce_cora --sweep=cd-10                           # the dev sweep behind configs/cora.py

A run is configs/cora.py:<system> with ``data.labeled`` = size and ``data.draw`` = seed = the draw (the labeled
subset and the run's initialisation vary together); its record, docs/cora/runs/cora-<system>-l<size>-d<draw>.json, is
not made again, so the script resumes. The rules decoder (``rules.decode``: the best reward under contiguous fields)
needs no training and no labels: its test accuracy is computed here, the same for every draw.
"""

import functools
import os
import sys
from pathlib import Path

import numpy as np

os.environ.setdefault('JAX_COMPILATION_CACHE_DIR', '/tmp/reproduce_cora_xla_cache')
# pylint: disable=wrong-import-position
from implicit_jax import runner
from implicit_jax.engine import cli
import experiments
from experiments import records, summary, tables
# pylint: enable=wrong-import-position

ROOT = experiments.ROOT
# configs/cora.py's rows: system -> (label, overrides; None: no training, computed here), in table order; the others
_ROWS = experiments.config_rows('cora')  # the file run once
SYSTEMS, TRAINED = _ROWS.SYSTEMS, _ROWS.TRAINED
SIZES = (5, 10, 50)
DRAWS = (0, 1, 2, 3, 4)
PUBLISHED = experiments.TEXT['cora']['published']  # paper Table 4: token accuracy at 5 / 10 / 50 labeled
RUNS = ROOT / 'docs' / 'cora' / 'runs'
DATA_DIR = os.environ.get('IMPLICIT_JAX_DATA_DIR', str(ROOT.parent / 'shared' / 'data'))
# (row, other) for the paired differences on test: implicit CD against the others, and the reward's part at each
# design (implicit CD against the same without the unlabeled citations).
PAIRED = [('implicit-cd', other) for other in ('bilstm', 'implicit-cd-labeled', 'dvn', 'rspen')] + [
    ('implicit-cd-t5', 'implicit-cd-labeled-t5')]
# (row, the row it was chosen against) for the lines on how the design and the schedules were chosen.
CHOICES = [(row, 'implicit-cd-t5') for row in ('implicit-cd', 'implicit-cd-gcr', 'implicit-cd-gcr-t5', 'implicit-cd-r3',
                                               'implicit-cd-t1-r3', 'implicit-cd-t1-lr5-r3')]
CHOICES += [('dvn', 'dvn-e15'), ('rspen', 'rspen-e15')]
# sweep -> (size, draw, {variant: overrides}), experiments/sweeps.toml [cora.*]; choices read the dev column only.
# The cd-* sweeps ran on configs/cora.py's implicit design until 2026-11-28 (row implicit-cd-t5): their records are
# their recipe.
SWEEPS = {name: (s['size'], s['draw'], s['variants']) for name, s in experiments.sweeps('cora').items()}


def config_name(system: str) -> str:
  return f'configs/cora.py:{system}'


def base_config(size, draw, data_dir, row):
  """The run's config: ``row`` a system, configs/cora.py:<row>, or a sweep variant's overrides (a dict) on
  configs/cora.py; with the labeled set's size and draw (the draw also seeds the run)."""
  name, values = (config_name(row), {}) if isinstance(row, str) else ('configs/cora.py', row)
  return experiments.row_config(name, {**values, 'seed': draw, 'data.labeled': size, 'data.draw': draw,
                                       'data.data_dir': data_dir})


def run_of(system, size, draw, args) -> runner.Run:
  """The run of row ``system`` at ``size`` labeled citations, draw ``draw``: its record under RUNS."""
  return runner.Run(f'{system} labeled {size} draw {draw}', lambda: base_config(size, draw, args.data_dir, system),
                    RUNS / f'cora-{system}-l{size}-d{draw}.json', f'{args.workdir}/{system}-l{size}-d{draw}')


def sweep_table(name) -> tables.Table:
  """docs/cora/sweeps/<name>.md: a row for each record of its variants (sweeps/<name>/<variant>.json), in order."""
  size, draw, variants = SWEEPS[name]
  sweep_fields = lambda groups: {'name': name, 'size': size, 'draw': draw, 'rows': '\n'.join(
      f'| {variant} | {o} | {100 * r["dev_accuracy"]:.2f} | {r["best_epoch"]} | {100 * r["test_accuracy"]:.2f} |'
      for variant, o in variants.items() for r in groups.get(variant, []))}
  return tables.Table(f'cora-sweep-{name}', f'docs/cora/sweeps/{name}.md', (f'docs/cora/sweeps/{name}/*.json',),
                      sweep_fields, template='cora_sweep.md', key=tables.variant_key(variants),
                      command=f'python -m experiments.reproduce_cora --sweep={name} --table_only')


@functools.cache
def rules_accuracy(data_dir) -> float | None:
  """Test token accuracy of ``rules.decode`` (labels and draws play no part); None without the Cora data."""
  from implicit_jax.tasks import citations  # pylint: disable=import-outside-toplevel
  from implicit_jax.tasks.citations import rules  # pylint: disable=import-outside-toplevel
  if not Path(data_dir, 'cora_citation').is_dir():
    return None
  test = citations.load(experiments.row_config('configs/cora.py', {'data.data_dir': data_dir}).data)[0]['test']
  hits = [rules.decode(ev[:n], joined[:n]) == y[:n]
          for ev, joined, y, n in zip(test['evidence'], test['joined'], test['y'], test['mask'].sum(-1).astype(int))]
  return float(np.mean(np.concatenate(hits)))


def system_of(path: Path) -> str:
  """The row of a record ``cora-<system>-l<size>-d<draw>.json``."""
  return path.stem[len('cora-'):].rsplit('-l', 1)[0]


def paired(a, b, field: str = 'test_accuracy') -> str:
  """``a - b`` of ``field`` over the draws both have (x 100): mean (per draw), and how many are positive."""
  common, d = records.paired_diffs({r['config']['data']['draw']: r[field] for r in a},
                                   {r['config']['data']['draw']: r[field] for r in b})
  if not common:
    return 'no common draws'
  return (f'{np.mean(d):+.2f} (per draw {", ".join(f"{x:+.2f}" for x in d)}; '
          f'{sum(x > 0 for x in d)}/{len(d)} positive)')


def pair_lines(groups, pairs, *metrics) -> list[str]:
  """``- N labeled: A minus B: `` and ``paired`` of each (name, field) of ``metrics``, for each size and each
  (A, B) of ``pairs`` that both have records there."""
  return [f'- {size} labeled: {SYSTEMS[row][0]} minus {SYSTEMS[base][0]}: '
          + '; '.join(name + paired(groups[(row, size)], groups[(base, size)], field) for name, field in metrics)
          for size in SIZES for row, base in pairs if groups.get((row, size)) and groups.get((base, size))]


def fields(groups, data_dir: str = DATA_DIR) -> dict:
  """docs/cora.md's fields, the rules row from the Cora data in ``data_dir``."""
  from implicit_jax.tasks.citations import rules  # pylint: disable=import-outside-toplevel
  return {'spread': records.spread('labeled draws'), 'rows': '\n'.join(table_rows(groups, rules_accuracy(data_dir))),
          'published': '\n'.join(f'| {name} | {a} | {b} | {c} |' for name, (a, b, c) in PUBLISHED.items()),
          'rules': '\n'.join(f'- `{r.name}` -> {r.field}: {r.doc}' for r in rules.TOKEN_RULES),
          'boundary': f'{rules.BOUNDARY_WEIGHT:g}', 'contiguous': f'{rules.CONTIGUOUS_WEIGHT:g}',
          'paired': '\n'.join(pair_lines(groups, PAIRED, ('', 'test_accuracy'))),
          'choices': '\n'.join(choice_lines(groups)), 'flattened': '; '.join(
              f'{SYSTEMS[s][0]} {np.mean([records.last_tenth_gain(r, "dev_accuracy") for r in rs]):+.2f} (best '
              f'epoch {np.median([r["best_epoch"] for r in rs]):.0f} of {rs[0]["config"]["num_epochs"]})'
              for s, rs in ((s, [r for size in SIZES for r in groups.get((s, size), [])]) for s in SYSTEMS) if rs)}


def table_rows(groups, rules_acc: float | None) -> list[str]:
  """The table's rows in SYSTEMS order: test accuracy at each size, dev at every size, seconds, the row's config."""
  rows = []
  for system, (label, _) in SYSTEMS.items():
    if system == 'rules':
      if rules_acc is not None:
        rows.append(f'| {label} | ' + f'{100 * rules_acc:.2f} | ' * 3 + '– | 0 | – (no training: `rules.decode`) |')
      continue
    cells = [groups.get((system, size), []) for size in SIZES]
    tests = [f'{records.mean_std([r["test_accuracy"] for r in rs])} ({len(rs)})' if rs else 'not run' for rs in cells]
    secs = [r['train_seconds'] for rs in cells for r in rs]
    rows.append(f'| {label} | {" | ".join(tests)} | '
                f'{" / ".join(records.mean_std([r["dev_accuracy"] for r in rs]) for rs in cells)} | '
                f'{np.nanmedian(secs) if secs else float("nan"):.0f} | `{config_name(system)}` |')
  return rows


def choice_lines(groups) -> list[str]:
  """Each design against the one it was chosen against (CHOICES), on dev and test, and what DVN's and R-SPEN's 30
  epochs add to their first 15."""
  lines = pair_lines(groups, CHOICES, ('dev ', 'dev_accuracy'), ('test ', 'test_accuracy'))
  # A 30-epoch run repeats today's 15-epoch run for its first 15 epochs, so what the longer schedule adds is read off
  # its own history; a 15-epoch record made by earlier code may differ from those epochs (round-off, then chaos).
  best = lambda r, epochs=10**9: max(h['dev_accuracy'] for h in records.history(r)
                                     if 'dev_accuracy' in h and h['epoch'] <= epochs)
  for row in ('dvn', 'rspen'):
    gains = {size: [100 * (best(r) - best(r, 15)) for r in groups.get((row, size), [])] for size in SIZES}
    if all(gains.values()):
      lines.append(f'- {SYSTEMS[row][0]}: best dev over 30 epochs minus the best over the first 15 of the same run, at '
                   + ', '.join(f'{size} labeled {np.mean(g):+.2f} ({sum(x > 0 for x in g)}/{len(g)} higher)'
                               for size, g in gains.items()))
  return lines


def plot(groups, data_dir: str = DATA_DIR) -> None:
  """docs/cora/accuracy.png: each method's test accuracy against the labeled citations, the paper's and the rules'."""
  try:
    from matplotlib.figure import Figure  # pylint: disable=import-outside-toplevel
  except ImportError:
    print('matplotlib absent: no figure')
    return
  fig = Figure(figsize=(6.4, 4.2))
  ax = fig.add_subplot()
  for k, (system, (label, overrides)) in enumerate(SYSTEMS.items()):
    sizes = [s for s in SIZES if (system, s) in groups]
    if overrides is None or not sizes:
      continue
    acc = [100 * np.array([r['test_accuracy'] for r in groups[(system, s)]]) for s in sizes]
    shift = 1.0 + 0.025 * (k - len(SYSTEMS) / 2)  # side by side, so the error bars stay readable
    ax.errorbar([s * shift for s in sizes], [a.mean() for a in acc], yerr=[a.std(ddof=1) for a in acc], marker='o',
                capsize=3, label=label)
  ax.plot(SIZES, PUBLISHED['implicit CD'], 'k--', marker='x', label='implicit CD, paper (1000 unlabeled)')
  if rules_accuracy(data_dir) is not None:
    ax.axhline(100 * rules_accuracy(data_dir), color='gray', ls=':', label='rules alone')
  ax.set_xscale('log')
  ax.minorticks_off()
  ax.set_xticks(SIZES, [str(s) for s in SIZES])
  ax.set(xlabel='labeled citations', ylabel='test token accuracy (%)',
         title='Cora citation fields: mean and sample std (ddof 1) over 5 labeled draws')
  ax.legend(fontsize=7, loc='lower right')
  fig.tight_layout()
  fig.savefig(ROOT / 'docs' / 'cora' / 'accuracy.png', dpi=120)


def blocks(groups, fields) -> dict:  # pylint: disable=redefined-outer-name,unused-argument
  """docs/results.md's cora block: the page's tables and its paired lines (the rule list left out)."""
  kept = [line for line in fields['page'].splitlines() if line.startswith(('|', '- ')) and not line.startswith('- `')]
  return {('docs/results.md', 'cora'): (
      f'\nTest token accuracy x 100, {fields["spread"]}, from the committed runs '
      '([cora.md](cora.md): split, rules, the 500-against-1000 data difference).\n\n'
      + '\n'.join(kept).replace('\n| published', '\n\n| published', 1).replace('\n- ', '\n\n- ', 1))}


def summary_rows(groups) -> list[str]:
  """README's rows, one per labeled-set size: the best implicit row against the best other one on dev accuracy."""
  rows = []
  for k, size in enumerate(SIZES):
    cell = {s: groups[(s, size)] for s in TRAINED if groups.get((s, size))}
    a, b = summary.sides(cell, 'dev_accuracy')
    if a and b:
      rows.append(summary.row('cora', f'Cora, {size} labeled, token accuracy', (config_name(a), cell[a]),
                              (config_name(b), cell[b]), 'test_accuracy', f'{PUBLISHED["implicit CD"][k]:.1f}'))
  return rows


def table(data_dir: str = DATA_DIR) -> tables.Table:
  """docs/cora.md, its figure, results.md's block and README's rows; the rules row from ``data_dir``'s Cora data."""
  return tables.Table('cora', 'docs/cora.md', ('docs/cora/runs/*.json',), functools.partial(fields, data_dir=data_dir),
                      key=lambda path, record: (system_of(path), record['config']['data']['labeled']),
                      command='python -m experiments.reproduce_cora --table_only', blocks=blocks,
                      summary=('cora', summary_rows), after=functools.partial(plot, data_dir=data_dir))


TABLES = [table(), *(sweep_table(name) for name in SWEEPS)]


def main():
  args = experiments.parse(__doc__, {
      '--seeds': None, '--systems': {'default': ','.join(SYSTEMS), 'type': experiments.names(list(SYSTEMS))},
      '--sizes': {'default': ','.join(map(str, SIZES)), 'type': experiments.integers},
      '--draws': {'default': ','.join(map(str, DRAWS)), 'type': experiments.integers},
      '--workdir': {'default': '/tmp/reproduce_cora'},
      '--sweep': {'default': '', 'choices': [''] + sorted(SWEEPS), 'help': 'run and write this sweep instead'}})
  if args.sweep:
    size, draw, variants = SWEEPS[args.sweep]
    runs = [runner.Run(f'sweep {args.sweep} {variant}', functools.partial(base_config, size, draw, args.data_dir, o),
                       ROOT / 'docs' / 'cora' / 'sweeps' / args.sweep / f'{variant}.json',
                       f'{args.workdir}/sweep-{args.sweep}-{variant}') for variant, o in variants.items()]
  else:  # a row without a config (rules) is not run
    runs = [run_of(system, size, draw, args) for size in args.sizes for draw in args.draws for system in args.systems
            if SYSTEMS[system][1] is not None]
  if not args.table_only:
    experiments.run(runs, args)
  print(tables.build(sweep_table(args.sweep) if args.sweep else table(args.data_dir)))


if __name__ == '__main__':
  sys.exit(cli.guarded(main))
