r"""The implicit method's training step beside every rival of its task, one process per task family.

Usage: python -m benchmarks.implicit_cost --task mlc|pos|ner|horses|horses-seal-data|cora [--data_dir ../shared/data]
           [--reps 10] [--rivals A,B] [--write [--out docs/benchmarks.md]]
       python -m benchmarks.implicit_cost --summary   # one table over the tasks, docs and README

For one task family: the task's config (configs/bibtex.py, pos.py, ner.py, horses.py, cora.py at 10 labeled;
horses-seal-data: horses.py at SEAL's protocol on SEAL's data, each rival with SEAL's chosen settings), one
training batch (the training loop's first batch with the config's seed; POS: the first batch in the bucket of 32
tokens, as benchmarks/tagging_throughput.py), and every method of the task's reproduce script built as train.py
builds it: the loop's jitted step (``train.make_train_step``: donated state, dropout and negatives drawn inside),
called on its own output state. Medians of ``--reps`` interleaved calls (A, B, ..., then ..., B, A) after a warm-up
call that compiles (the mean for a term solved every k-th step and reused between, whose steps alternate); ratios are
against the rival the goal names (``TASKS``), measured in the same process on the same batch.

The implicit rows: ``before`` is the design the tables were made with until 2026-11-26 (spelled out in
``BEFORE``), ``committed`` whatever the task's config holds now, ``committed, term every 3rd step`` the same with
``solver.reuse`` 'r3' (``, two programs``: 'r3h'), ``gcr`` the implicit term by one fused GCR pass after one inner
step (``FAST``, bilevel.implicit_gcr), ``no term`` the no-term ablation on that inner step (the floor of any
implicit term); ``committed until issue 45`` the design a config held before that issue changed it (``PREVIOUS``).

``--rivals=A,B`` times those rivals only (the goal's is always timed; ``--rivals=`` the goal's alone). On an
accelerator the section and figures file take the suffix ``_<backend>`` (``implicit_cost_mlc_gpu``), and the table
adds steps per second, XLA's FLOP count of the step and the share of the float32 matrix rate measured in the process.
"""

from __future__ import annotations

import json
import os
import textwrap

from benchmarks import common  # pylint: disable=wrong-import-order
from benchmarks import step_cost
from benchmarks import tagging_throughput

import numpy as np  # pylint: disable=wrong-import-position

from implicit_jax.engine import config as config_lib  # pylint: disable=wrong-import-position
from implicit_jax.engine import data  # pylint: disable=wrong-import-position
# The rows of the results tables (their labels and overrides).
import experiments  # pylint: disable=wrong-import-position
from experiments import mlc  # pylint: disable=wrong-import-position

# The rows of configs/cora.py, configs/horses.py and configs/pos.py (every sequence-labeling dataset's)
cora, horses, tagging = (experiments.config_rows(name) for name in ('cora', 'horses', 'pos'))

SUMMARY_DIR = common.ROOT / 'docs' / 'benchmarks' / 'implicit_cost'
# The fast design: one inner step, the implicit term by one fused GCR pass (MINRES's first iterate).
FAST = {'implicit.inner_steps': 1, 'implicit.solver.name': 'gcr', 'implicit.solver.iterations': 1,
        'implicit.solver.reuse': 'none'}
NONE = {'implicit.inner_steps': 1, 'implicit.solver.name': 'none', 'implicit.solver.reuse': 'none'}
# Each task's implicit design before the gcr route (the committed configs of 2026-11-25, as its tables ran it).
BEFORE = {  # each with the term solved on every step (below), as every config ran until 2026-11-26
    'mlc': {'implicit.inner_steps': 5, 'implicit.solver.name': 'normal_cg', 'implicit.solver.iterations': 5},
    'pos': {'implicit.inner_steps': 5, 'implicit.solver.name': 'normal_cg', 'implicit.solver.iterations': 5},
    'ner': {'implicit.inner_steps': 5, 'implicit.solver.name': 'normal_cg', 'implicit.solver.iterations': 5},
    'horses': {'implicit.inner_steps': 2, 'implicit.solver.name': 'minres', 'implicit.solver.iterations': 3},
    # Cora's with its inner rate (1e-3), on which normal_cg's iterations depend (its tolerance stops them).
    'cora': {k: v for k, v in cora.SYSTEMS['implicit-cd-t5'][1].items() if k.startswith('implicit.')},
}
BEFORE['horses-seal-data'] = BEFORE['horses']  # one config, another scale
# The committed design a task's config held before issue 45 changed it (bibtex: five inner steps, one GCR pass).
PREVIOUS = {'mlc': {'implicit.inner_steps': 5, 'implicit.solver.name': 'gcr', 'implicit.solver.iterations': 1,
                    'implicit.solver.reuse': 'none'}}
# task -> (config, the rival of the goal, goal ratio, rows: label -> overrides)
_TAGGING = {label: o for label, o in tagging.SYSTEMS.values()
            if not o.get('method', '').startswith('implicit')}
_CD = {'method': 'implicit', 'implicit.primary_loss': 'cd'}
# SEAL's protocol on SEAL's data (the README's horses row, docs/horses.md): the variant's scale and split, and each
# rival with the optimiser and sampling settings of SEAL's chosen config, as configs/horses.py:<system>,seal-data.
_SEAL_DATA = horses.VARIANTS['seal-data']


def _seal_data_row(system: str) -> dict:
  return horses.overrides(system, ['seal-data'])


TASKS = {
    'mlc': ('bibtex', 'MBCE', 4.0, {
        'MBCE': {'method': 'feedforward'},
        **{name: o for name, o in mlc.BASELINES.items()},
    }),
    'pos': ('pos', 'InfNet+ stacked', 2.0, _TAGGING),
    'ner': ('ner', 'InfNet+ stacked', 2.0, _TAGGING),
    'horses': ('horses', 'SEAL-dynamic (regression)', 2.0, {
        label: o for label, o in horses.SYSTEMS.values() if not o['method'].startswith('implicit')}),
    'horses-seal-data': ('horses', 'SEAL-dynamic (regression)', 2.0, {
        horses.SYSTEMS[s][0]: _seal_data_row(s) for s in ('fcn', 'dvn', 'seal-regression', 'seal-nce',
                                                          'seal-regression-w')}),
    'cora': ('cora', 'R-SPEN-style rank by reward', 3.0, {  # a schedule's rows (dvn-e15) take the same step
        cora.SYSTEMS[s][0]: cora.SYSTEMS[s][1] for s in ('bilstm', 'crf', 'dvn', 'rspen')}),
}


def implicit_rows(task: str) -> dict:
  cd = {**_CD, 'implicit.cost': 'iou'} if task.startswith('horses') else _CD
  if task == 'horses-seal-data':
    cd = {**_SEAL_DATA, **cd}
  previous = {'implicit CD, committed until issue 45': {**cd, **PREVIOUS[task]}} if task in PREVIOUS else {}
  return {'implicit CD, before': {**cd, **BEFORE[task], 'implicit.solver.reuse': 'none'},
          **previous,
          'implicit CD, committed': dict(cd),
          'implicit CD, committed, term every 3rd step': {**cd, 'implicit.solver.reuse': 'r3'},
          'implicit CD, committed, term every 3rd step, two programs': {**cd, 'implicit.solver.reuse': 'r3h'},
          'implicit CD, gcr (T_inner 1, 1 pass)': {**cd, **FAST},
          'implicit CD, no term (T_inner 1)': {**cd, **NONE}}


def base_config(task: str, data_dir: str):
  name = TASKS[task][0]
  config = config_lib.from_file(common.ROOT / 'configs' / f'{name}.py')
  config.data.data_dir = data_dir
  if task == 'cora':  # 10 labeled citations, draw 0 (the draw also seeds the run)
    config.seed = config.data.draw = 0
    config.data.labeled = 10
  return config


def first_batch(task_obj, config, task: str) -> dict:
  """The training loop's first batch; POS: the first in the bucket of 32 tokens, tagging_throughput.py's."""
  if task == 'pos':
    return tagging_throughput.bucket_batch(task_obj, config.batch_size, config.seed)
  return next(data.train_batches(task_obj, config.batch_size, np.random.default_rng([config.seed, 0])))


def fill(text: str) -> str:
  return textwrap.fill(text, 115, break_long_words=False, break_on_hyphens=False)


def main():
  p = common.parser(__doc__, reps=10)
  p.add_argument('--task', choices=sorted(TASKS))
  p.add_argument('--summary', action='store_true', help='rebuild the summary section (and README block) from the '
                 'tasks\' last --write runs, then exit')
  shared = common.ROOT.parent / 'shared' / 'data'
  p.add_argument('--data_dir', default=os.environ.get('IMPLICIT_JAX_DATA_DIR') or str(shared))
  p.add_argument('--write', action='store_true', help='write the section into --out (otherwise print only)')
  p.add_argument('--rivals', help='comma-separated labels of the rivals to time beside the implicit rows (default: '
                 'all of the task\'s; the goal\'s rival is always timed), e.g. --rivals= for the goal\'s alone')
  args = p.parse_args()
  if args.summary:
    print(summary(args.out))
    return
  if not args.task:
    p.error('--task is required (or --summary)')
  _, reference, goal, rivals = TASKS[args.task]
  if args.rivals is not None:
    chosen = {label for label in args.rivals.split(',') if label}
    unknown = chosen - set(rivals)
    if unknown:
      p.error(f'--rivals: unknown {", ".join(sorted(unknown))}; the {args.task} rivals are {", ".join(rivals)}')
    rivals = {label: o for label, o in rivals.items() if label in chosen | {reference}}
  m = common.machine()
  print(common.machine_line(m), flush=True)
  base = base_config(args.task, args.data_dir)
  rows = {**rivals, **implicit_rows(args.task)}
  configs = {}
  for label, overrides in rows.items():
    config = base.copy_and_resolve_references()
    config.update_from_flattened_dict(overrides)
    configs[label] = config
  # Rows that read the data otherwise (Cora's labeled-only taggers) get their own task and first batch.
  steps = step_cost.training_steppers(configs, lambda task, config: first_batch(task, config, args.task))
  print(f'timing {len(steps)} steps, {args.reps} reps (the warm-up round compiles)', flush=True)
  times = common.time_interleaved(steps, args.reps, warmup=step_cost.warmup_calls(steps))
  med = step_cost.seconds_per_step(times, steps)
  ref = med[reference]
  tag = common.device_tag()
  # On an accelerator, what a user there sees: steps per second, and the share of the device's float32 matrix rate
  # (measured here) that the step's XLA-counted FLOPs reach.
  flops = {label: steps[label].flops() for label in rows} if tag else {}
  peak = common.matmul_rate() if tag else None
  table_rows = []
  for label in rows:
    c = configs[label]
    design = step_cost.design_of(c)
    if c.method == 'implicit' and c.implicit.solver.name != 'none':
      residual = np.median([float(mt['residual']) for mt in steps[label].metrics])
      design += f', residual {residual:.2f}'
    ratio = med[label] / ref
    mark = ''
    if label.startswith('implicit') and 'no term' not in label:
      mark = 'yes' if ratio <= goal else 'no'
    device_cols = ([f'{1 / med[label]:.0f}', f'{flops[label] / 1e9:.3g}',
                    f'{100 * flops[label] / med[label] / peak:.2g}%'] if tag else [])
    table_rows.append([label, f'`{c.method}`', design, common.ms(med[label]), common.spread(times[label]),
                       *device_cols, f'{ratio:.2f}x', mark])
  device_header = (['steps/s', 'GFLOP/step (XLA\'s count)', f'share of the f32 matmul rate ({peak / 1e12:.0f} '
                    f'TFLOP/s measured)'] if tag else [])
  table = common.table(['system', 'method', 'implicit design (median solver residual over the timed steps)',
                        'train ms/step', 'p25-p75 ms', *device_header, f'vs {reference}',
                        f'within the goal ({goal:g}x)'], table_rows)
  own_data = len({id(s.batch) for s in steps.values()}) > 1
  where = {'cora': ' at 10 labeled citations',
           'horses-seal-data': ":<system>,seal-data (SEAL's protocol on SEAL's data, each rival with SEAL's chosen "
                               "settings: the README's row)"}.get(args.task, '')
  setup = (f'configs/{TASKS[args.task][0]}.py{where}, one '
           f'training batch of {len(steps[reference].batch["x"])} examples; every row is the training loop\'s jitted '
           f'step on it, medians of {args.reps} interleaved calls after a compiling call (the mean, for a term '
           f'refreshed every k-th step, whose steps alternate). Goal: the implicit step at most {goal:g}x '
           f'{reference}\'s.' + (' The labeled-only rows train on the labeled citations alone: their batch is the '
                                  'first of that split.' if own_data else ''))
  if tag:
    setup += (f' On the {m["backend"].upper()} ({m["device"]}): XLA counts a loop\'s body once, so for a step with '
              f'loops inside (T_inner above 1, an iterative solver) its FLOPs and their share are lower bounds; it '
              f'counts both branches of a conditional, so a term refreshed inside one program counts both forms.')
  where_run = f' on the {m["backend"].upper()}' if tag else ''
  body = (f'## Implicit step against its rivals: {args.task}{where_run} (`python -m benchmarks.implicit_cost --task '
          f'{args.task}`)\n\n{common.section_header(m)}\n{fill(setup)}\n\n{table}\n')
  print(body, flush=True)
  if args.write:
    common.write_section(args.out, f'implicit_cost_{args.task}{tag}', body)
    SUMMARY_DIR.mkdir(parents=True, exist_ok=True)
    record = {'task': args.task, 'reference': reference, 'goal': goal, 'reps': args.reps,
              'command': common.command_line(), 'machine': common.machine_line(m),
              'date': common.section_header(m).split('— ', 1)[1].split('.\n', 1)[0],
              'ms': {k: med[k] * 1e3 for k in rows}, 'design': {r[0]: r[2] for r in table_rows}}
    if tag:
      record.update(flops=flops, matmul_flops_per_s=peak)
    (SUMMARY_DIR / f'{args.task}{tag}.json').write_text(json.dumps(record, indent=1) + '\n', encoding='utf-8')


def summary(out: str) -> str:
  """One table over the task families from their last ``--write`` runs (docs/benchmarks/implicit_cost/*.json):
  the implicit step before and now, against the goal's rival, measured in one process per task; and where some
  tasks were measured on a GPU (``<task>_gpu.json``), the same table of those beside it."""
  body = summary_table(out, '')
  if any(SUMMARY_DIR.glob('*_gpu.json')):
    body += '\n' + summary_table(out, '_gpu')
  return body


def summary_table(out: str, tag: str) -> str:
  """The summary section of the runs of one backend (``common.device_tag``); README gets the CPU's."""
  rows = []
  for task in TASKS:
    path = SUMMARY_DIR / f'{task}{tag}.json'
    if not path.exists():
      rows.append([task, '', '', 'not measured', '', '', '', '', '', '', ''])
      continue
    r = json.loads(path.read_text(encoding='utf-8'))
    ms, ref = r['ms'], r['ms'][r['reference']]

    def x(t, ref=ref):  # two digits that a ratio under one keeps
      return f'{t / ref:.1f}x' if t >= ref else f'{t / ref:.2f}x'

    now = ms['implicit CD, committed']
    every3, host3 = (ms.get(f'implicit CD, committed, term every 3rd step{k}') for k in ('', ', two programs'))
    every3, host3 = (x(t) if t else 'not measured' for t in (every3, host3))
    rows.append([task, r['reference'], f'{r["goal"]:g}x', x(ms['implicit CD, before']), x(now), every3, host3,
                 x(ms['implicit CD, gcr (T_inner 1, 1 pass)']),
                 'yes' if now / ref <= r['goal'] else 'no',
                 r['design']['implicit CD, committed'].split(', residual')[0], r['date']])
  table = common.table(['task', 'rival (the goal\'s)', 'goal', 'implicit CD before', 'implicit CD committed',
                        'committed, term every 3rd step (mean step)', 'the same, two programs',
                        'T_inner 1 + one GCR pass', 'committed within goal', 'committed design', 'measured'], rows)
  body = ('## The implicit step against the goal\'s rival, every task '
          '(`python -m benchmarks.implicit_cost --summary`)\n\n'
          + fill('Step time of implicit CD over the rival\'s, each task measured in one process on one batch '
                 '(the task sections below, `--task`). "horses" is configs/horses.py as committed (half the '
                 'published channels, whole images: the CPU default); "horses-seal-data" the README\'s horses row, '
                 'SEAL\'s protocol on SEAL\'s data, every rival with SEAL\'s chosen settings (SEAL regression: 47 '
                 'perturbations of the logits a step, where the CPU default draws one). "before": the design of the '
                 'configs until 2026-11-26; '
                 '"committed": the task\'s config now; "term every 3rd step": the committed design with the implicit '
                 'term solved on every third step and reused in between (solver.reuse \'r3\'), timed as the mean '
                 'step, one program choosing each step\'s kind inside it; "two programs": the same with one compiled '
                 'step that solves and one that reuses, the host picking (solver.reuse=\'r3h\'); '
                 'the T_inner 1 + one GCR pass row is the cheapest design that solves the term on every step. A '
                 'design is committed only where it held on dev.') + f'\n\n{table}\n')
  if tag:
    body = ('## The implicit step against the goal\'s rival on the GPU '
            '(`python -m benchmarks.implicit_cost --summary`)\n\n'
            + fill('As the table above, from the task sections measured on a GPU (`--task` there; each names its '
                   'device, an H100 or an H200: a ratio is of one process on one device). Steps per second and the '
                   'share of the device\'s matrix rate are in those sections.') + f'\n\n{table}\n')
  common.write_section(out, f'implicit_cost_summary{tag}', body)
  readme = common.ROOT / 'README.md'
  if not tag and out != '-' and '<!-- bench:implicit_cost_summary -->' in readme.read_text(encoding='utf-8'):
    common.write_section(str(readme), 'implicit_cost_summary',
                         f'Written by `python -m benchmarks.implicit_cost --summary`; each task\'s measurement, '
                         f'machine and every rival: [docs/benchmarks.md](docs/benchmarks.md).\n\n{table}')
  return body


if __name__ == '__main__':
  main()
