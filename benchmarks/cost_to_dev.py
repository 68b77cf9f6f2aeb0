r"""What a user feels: the training cost of each method to reach a dev score, implicit CD against its family's rival.

Usage: python -m benchmarks.cost_to_dev [--pairs bibtex,pos,...] [--data_dir ../shared/data] [--reps 10] [--write]
       python -m benchmarks.cost_to_dev --table_only [--of cpu|gpu]   # the section again from its figures file

For each pair of committed run records (``PAIRS``: the implicit CD rows of the results tables and the rival that
``benchmarks/implicit_cost.py`` holds them to), seed by seed:

* the **target** is the best dev score that both runs reach (the lower of their two best dev scores, read from the
  records' per-epoch dev histories, the score each run selects on);
* the **steps** of each run are the training steps it had taken when its dev score first reached the target (dev is
  evaluated once per epoch, so a step count is the end of an epoch);
* its **cost** is those steps times its step time, the median of ``--reps`` interleaved calls of the training loop's
  jitted step built from the record's own config (the record is the recipe), both rows measured in this process on
  the same first training batch; **compile** is the first call's time less one step (paid once per run).

Steps are deterministic (the records), and the step times are a ratio taken side by side, so the ratio of the two
costs hardly depends on the machine of one kind; a CPU and a GPU differ (docs/benchmarks.md's findings), so on an
accelerator the figures go to ``cost_to_dev_<backend>.json`` and their own section, and ``--table_only --of=gpu``
rebuilds that section anywhere. A term solved every k-th step and reused between (``solver.reuse``) is timed as the
mean step.
"""

from __future__ import annotations

import json
import os
import re
import textwrap
import time

from benchmarks import common  # pylint: disable=wrong-import-order
from benchmarks import step_cost

import jax  # pylint: disable=wrong-import-position
import numpy as np  # pylint: disable=wrong-import-position

from implicit_jax.engine import config as config_lib  # pylint: disable=wrong-import-position
from implicit_jax.engine import data  # pylint: disable=wrong-import-position
from experiments import records  # pylint: disable=wrong-import-position

DOCS = common.ROOT / 'docs'
# name -> (what it is, implicit records, rival's label, rival records, the dev score both select on). Records are
# globs under docs/; the rival is the one of the goals in implicit_cost.py.
PAIRS = {
    'bibtex': ('bibtex, 150-unit nets (the main job)', 'mlc/runs/bibtex-implicit-cd-gcr-T1-r3h-seed*.json', 'MBCE',
               'mlc/runs/bibtex-mbce-seed*.json', 'dev_f1'),
    'bibtex-r3': ('bibtex, 150-unit nets, the same step in one program (the main job until 2026-11-28)',
                  'mlc/runs/bibtex-implicit-cd-gcr-T1-r3-seed*.json', 'MBCE', 'mlc/runs/bibtex-mbce-seed*.json',
                  'dev_f1'),
    'bibtex-T5': ('bibtex, 150-unit nets, five inner steps (the main job until issue 45)',
                  'mlc/runs/bibtex-implicit-cd-gcr-seed*.json', 'MBCE', 'mlc/runs/bibtex-mbce-seed*.json', 'dev_f1'),
    'bibtex-h400': ('bibtex, 400-unit nets', 'mlc/runs/bibtex-implicit-cd-h400-seed*.json', 'MBCE',
                    'mlc/runs/bibtex-mbce-h400-seed*.json', 'dev_f1'),
    'pos': ('Twitter POS', 'tagging/runs/pos-implicit-cd-seed*.json', 'InfNet+ stacked',
            'tagging/runs/pos-infnet-plus-stacked-seed*.json', 'dev_accuracy'),
    'ner': ('CoNLL NER', 'tagging/runs/ner-implicit-cd-seed*.json', 'InfNet+ stacked',
            'tagging/runs/ner-infnet-plus-stacked-seed*.json', 'dev_f1_conlleval'),
    'horses': ("horses, SEAL's protocol", 'horses/runs_seal/implicit-cd-seed*.json', 'SEAL-dynamic (regression)',
               'horses/runs_seal/seal-regression-seed*.json', 'dev_mean_iou'),
    'horses-seal-data': ("horses, SEAL's protocol on SEAL's data (the README's row)",
                         'horses/runs_seal_data/implicit-cd-seed*.json', 'SEAL-dynamic (regression)',
                         'horses/runs_seal_data/seal-regression-seed*.json', 'dev_mean_iou'),
    'cora': ('Cora, 10 labeled', 'cora/runs/cora-implicit-cd-l10-d*.json', 'R-SPEN-style rank by reward',
             'cora/runs/cora-rspen-l10-d*.json', 'dev_accuracy'),
    'cora-T5': ('Cora, 10 labeled, five inner steps and 15 epochs (configs/cora.py until issue 45)',
                'cora/runs/cora-implicit-cd-t5-l10-d*.json', 'R-SPEN-style rank by reward, 15 epochs',
                'cora/runs/cora-rspen-e15-l10-d*.json', 'dev_accuracy'),
}


def load_runs(pattern: str, metric: str) -> dict:
  """seed -> (record path, [(step, dev score)]) of the records matching ``pattern`` under docs/."""
  runs = {}
  for path in sorted(DOCS.glob(pattern)):
    record = records.load(path)
    curve = [(int(h['step']), float(h[metric])) for h in records.history(record) if metric in h]
    if not curve:
      raise SystemExit(f'{path.relative_to(common.ROOT)}: no dev history of {metric!r}: cannot tell when it reached '
                       f'a score')
    runs[int(record['seed'])] = (path, curve)
  if not runs:
    raise SystemExit(f'docs/{pattern}: no record matches')
  return runs


def first_reach(curve, target: float) -> int:
  """The step at which the dev score first reached ``target``."""
  return next(step for step, score in curve if score >= target)


def reach(implicit: dict, rival: dict) -> list[dict]:
  """Per seed that both rows ran: the target (the best dev score both reach) and each run's steps to it."""
  out = []
  for seed in sorted(set(implicit) & set(rival)):
    a, b = implicit[seed][1], rival[seed][1]
    target = min(max(s for _, s in a), max(s for _, s in b))
    out.append({'seed': seed, 'target': target, 'implicit_steps': first_reach(a, target),
                'rival_steps': first_reach(b, target)})
  return out


def step_config(path, data_dir: str):
  config = config_lib.from_record(path)
  config.data.data_dir = data_dir
  records.package_vectors(config)
  return config


def time_steps(configs: dict, reps: int) -> tuple[dict, dict]:
  """(seconds per step, compile seconds) of each config's training step, interleaved in this process on the first
  training batch of its data (``step_cost.training_steppers``)."""
  first = lambda task, config: next(data.train_batches(task, config.batch_size,
                                                       np.random.default_rng([config.seed, 0])))
  fns = step_cost.training_steppers(configs, first)
  first_calls = {}  # the calls that compile: one per form of the step
  for label, fn in fns.items():
    t0 = time.perf_counter()
    for _ in range(fn.period):
      jax.block_until_ready(fn())
    first_calls[label] = time.perf_counter() - t0
  per_step = step_cost.seconds_per_step(common.time_interleaved(fns, reps, warmup=1), fns)
  return per_step, {label: max(first_calls[label] - fns[label].period * per_step[label], 0.0) for label in configs}


def measure(name: str, data_dir: str, reps: int) -> dict:
  what, imp_glob, rival_label, rival_glob, metric = PAIRS[name]
  implicit, rival = load_runs(imp_glob, metric), load_runs(rival_glob, metric)
  seeds = reach(implicit, rival)
  if not seeds:
    raise SystemExit(f'{name}: the implicit and rival records share no seed')
  seed = seeds[0]['seed']
  configs = {'implicit': step_config(implicit[seed][0], data_dir), 'rival': step_config(rival[seed][0], data_dir)}
  print(f'{name}: timing the steps of {implicit[seed][0].name} and {rival[seed][0].name}, {reps} reps', flush=True)
  per_step, compile_s = time_steps(configs, reps)
  for s in seeds:
    s['implicit_seconds'] = s['implicit_steps'] * per_step['implicit']
    s['rival_seconds'] = s['rival_steps'] * per_step['rival']
    s['ratio'] = s['implicit_seconds'] / s['rival_seconds']
  return {'pair': name, 'what': what, 'metric': metric, 'rival': rival_label,
          'design': step_cost.design_of(configs['implicit']),
          'implicit_records': f'docs/{imp_glob}', 'rival_records': f'docs/{rival_glob}',
          'implicit_ms': per_step['implicit'] * 1e3, 'rival_ms': per_step['rival'] * 1e3,
          'implicit_compile_s': compile_s['implicit'], 'rival_compile_s': compile_s['rival'], 'seeds': seeds}


def fmt_steps(values) -> str:
  return ' / '.join(str(v) for v in values)


def out_json(tag: str):
  """The figures of the last ``--write`` runs: docs/benchmarks/cost_to_dev.json on the CPU, ``cost_to_dev_gpu.json``
  on a GPU (``common.device_tag``)."""
  return DOCS / 'benchmarks' / f'cost_to_dev{tag}.json'


def with_compile(result: dict, seed: dict) -> float:
  """A seed's cost ratio with each run's compile of one batch shape added to its side."""
  return ((seed['implicit_seconds'] + result['implicit_compile_s'])
          / (seed['rival_seconds'] + result['rival_compile_s']))


def measured_on(result: dict, tag: str) -> str:
  """When a pair was measured, and on an accelerator on which device (a GPU section's pairs may come from runs on
  several kinds): each pair's ratio is of one process on one device."""
  device = re.search(r'backend, ([^)]+)\)', result['machine'])
  return f'{result["date"]}, {device.group(1)}' if tag and device else result['date']


def section(results: list[dict], tag: str = '') -> str:
  """The section from the pairs' figures; each run that measured some of them named with its command and machine."""
  rows = []
  for r in results:
    seeds = r['seeds']
    ratios = [s['ratio'] for s in seeds]
    cheaper = sum(x <= 1.0 for x in ratios)
    fewer = sum(s['implicit_steps'] <= s['rival_steps'] for s in seeds)
    rows.append([r['what'], r['rival'], r['design'], r['metric'],
                 ' / '.join(f'{100 * s["target"]:.2f}' for s in seeds),
                 fmt_steps(s['implicit_steps'] for s in seeds), fmt_steps(s['rival_steps'] for s in seeds),
                 f'{r["implicit_ms"]:.3g} / {r["rival_ms"]:.3g} ({r["implicit_ms"] / r["rival_ms"]:.2f}x)',
                 f'{np.median([s["implicit_seconds"] for s in seeds]):.3g} / '
                 f'{np.median([s["rival_seconds"] for s in seeds]):.3g}',
                 f'{fewer}/{len(seeds)}', f'{np.median(ratios):.2f}x', f'{cheaper}/{len(seeds)}',
                 f'{np.median([with_compile(r, s) for s in seeds]):.2f}x',
                 f'{r["implicit_compile_s"]:.1f} / {r["rival_compile_s"]:.1f}', measured_on(r, tag)])
  table = common.table(['pair', 'rival', 'implicit design (its records\')', 'dev score', 'target, x 100 (per seed)',
                        'implicit steps to it', 'rival steps to it', 'ms / step, implicit / rival (ratio)',
                        'seconds to it, median over seeds, implicit / rival',
                        'seeds where implicit needs no more steps', 'cost ratio (median of seeds)',
                        'seeds where implicit costs no more', 'cost ratio with one compile each (median)',
                        'compile s, implicit / rival', 'measured'], rows)
  text = ('Per seed, the target is the best dev score both runs reach (the lower of the two bests); steps are the '
          'training steps each run had taken when its dev score first reached it (dev is evaluated once per epoch), '
          'from the committed records; cost is steps times the step time of the record\'s own config, the median of '
          'the interleaved calls of each training step in one process on the same first training batch (the mean, '
          'for a term refreshed every k-th step). The cost ratio is implicit over rival (under 1: the implicit run '
          'reached the target for less). Compile: the first call less one step, paid once per run (per batch shape: '
          'a run whose batches take several shapes pays it once per shape); the cost ratio with one compile adds it '
          'to each side, what a short run feels.')
  fill = textwrap.fill(text, 115, break_long_words=False, break_on_hyphens=False)
  runs = {}
  for r in results:  # one run of the script measures several pairs, a minute or so apart
    runs.setdefault((records.portable(r['command']), r['machine']), []).append(r['date'])
  header = '\n'.join(f'Command: `{command}` — {min(dates)}{f" to {max(dates)}" if len(set(dates)) > 1 else ""}.'
                     f'\n\nMachine: {machine}.\n' for (command, machine), dates in sorted(runs.items(),
                                                                                     key=lambda kv: min(kv[1])))
  where = f' on the {tag[1:].upper()}' if tag else ''
  return f'## Cost to a dev score{where} (`benchmarks/cost_to_dev.py`)\n\n{header}\n{fill}\n\n{table}\n'


def main():
  p = common.parser(__doc__, reps=10)
  p.add_argument('--pairs', default=','.join(PAIRS), help=f'comma-separated, of {", ".join(PAIRS)}')
  shared = common.ROOT.parent / 'shared' / 'data'
  p.add_argument('--data_dir', default=os.environ.get('IMPLICIT_JAX_DATA_DIR') or str(shared))
  p.add_argument('--write', action='store_true', help='write the section into --out and the figures to '
                 'docs/benchmarks/cost_to_dev.json (otherwise print only)')
  p.add_argument('--table_only', action='store_true', help='rebuild the section from docs/benchmarks/cost_to_dev.json '
                 '(no timing), then exit')
  p.add_argument('--of', choices=('cpu', 'gpu'), help='with --table_only: whose figures (default: this machine\'s '
                 'backend), e.g. --of=gpu on the CPU rebuilds the GPU section from cost_to_dev_gpu.json')
  args = p.parse_args()
  if args.of is not None and not args.table_only:
    p.error('--of reads a backend\'s figures and goes with --table_only; a measuring run writes its own backend\'s')
  names = [n for n in args.pairs.split(',') if n]
  unknown = [n for n in names if n not in PAIRS]
  if unknown:
    p.error(f'--pairs: unknown {", ".join(unknown)}; choose of {", ".join(PAIRS)}')
  if not os.path.isdir(args.data_dir):
    p.error(f'--data_dir {args.data_dir}: no such folder (the benchmark data, ../shared/data)')
  m = common.machine()
  print(common.machine_line(m), flush=True)
  tag = common.device_tag() if args.of is None else ('' if args.of == 'cpu' else f'_{args.of}')
  path = out_json(tag)
  kept = json.loads(path.read_text(encoding='utf-8')) if path.exists() else {}
  body = lambda: section([kept[n] for n in PAIRS if n in kept], tag)  # the pairs kept so far, in PAIRS' order
  if args.table_only:
    if not kept:
      p.error(f'--table_only: no {path.relative_to(common.ROOT)} yet (run without it first)')
    common.write_section(args.out, f'cost_to_dev{tag}', body())
    return
  for name in names:
    result = measure(name, args.data_dir, args.reps)
    result.update(command=common.command_line(), machine=common.machine_line(m),
                  date=common.section_header(m).split('— ', 1)[1].split('.\n', 1)[0])
    kept[name] = result
    print(json.dumps({k: v for k, v in result.items() if k != 'seeds'}), flush=True)
    if args.write:  # after each pair: a run stopped midway keeps the pairs it measured
      path.parent.mkdir(parents=True, exist_ok=True)
      path.write_text(json.dumps(kept, indent=1) + '\n', encoding='utf-8')
      common.write_section(args.out, f'cost_to_dev{tag}', body())
  print(body(), flush=True)


if __name__ == '__main__':
  main()
