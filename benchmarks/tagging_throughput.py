r"""Sequence-labeling speed: tokens per second of every tagging method in training and prediction, the implicit
step against a BiLSTM-CE step with a cost model from unit costs, and the implicit step's loops unrolled.

Usage: python benchmarks/tagging_throughput.py [--data_dir ../shared/data] [--reps 10] [--methods a,b]
           [--out docs/benchmarks.md | -]

configs/pos.py (Twitter POS; one-layer BiLSTM of 100 units, GloVe 50d), in one process: training steps on its first
32 training tweets, prediction on 256 test tweets cut to their bucket. The contenders of each table are timed
interleaved and their medians compared; tokens are the real (unpadded) ones. The methods are those of
scripts/reproduce_tagging.py.
"""

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / 'scripts'))

import common  # pylint: disable=wrong-import-position
import step_cost  # pylint: disable=wrong-import-position

import jax  # pylint: disable=wrong-import-position
import numpy as np  # pylint: disable=wrong-import-position

from implicit_jax import methods, tasks  # pylint: disable=wrong-import-position
from implicit_jax.engine import data, xla_options  # pylint: disable=wrong-import-position
from reproduce_tagging import SYSTEMS  # pylint: disable=wrong-import-position

INFNET_PLUS = ('InfNet+ (Tu, Pang & Gimpel 2020) reports 66-92 training examples/s on Twitter POS for its '
               'inference-network methods, on a GPU.')


def main():
  p = common.parser(__doc__, reps=10)
  p.add_argument('--data_dir', default=os.environ.get('IMPLICIT_JAX_DATA_DIR', str(common.ROOT.parent / 'shared' /
                                                                                   'data')))
  p.add_argument('--methods', default=','.join(SYSTEMS), help='systems of scripts/reproduce_tagging.py')
  args = p.parse_args()
  chosen = args.methods.split(',')
  unknown = sorted(set(chosen) - set(SYSTEMS))
  if unknown:
    p.error(f'--methods: unknown {unknown}; choose from {list(SYSTEMS)}')
  if 'bilstm' not in chosen:
    chosen.insert(0, 'bilstm')  # the reference of every ratio
  m = common.machine()
  base = common.load_config('pos')
  base.data.data_dir = args.data_dir
  task = tasks.get_task(base)
  batch = common.first_batch(task, base.batch_size)
  train_tokens = int(batch['mask'].sum())
  test, _ = next(data.prediction_batches(task, task.splits['test'], 256))
  test_tokens = int(test['mask'].sum())
  key = jax.random.key(1)

  steps, predicts = {}, {}
  for name in chosen:
    config = base.copy_and_resolve_references()
    config.update_from_flattened_dict(SYSTEMS[name][1])
    method = methods.build(task, config)
    state = method.init(jax.random.key(0))
    step, predict = xla_options.jit(method.train_step), xla_options.jit(method.predict)
    steps[name] = lambda step=step, state=state: step(state, batch, key)
    predicts[name] = lambda predict=predict, state=state: predict(state.params, test)
  train_times = common.time_interleaved(steps, args.reps)
  predict_times = common.time_interleaved(predicts, args.reps)
  ref_train, ref_predict = common.median(train_times['bilstm']), common.median(predict_times['bilstm'])
  rows = []
  for name in chosen:
    t, q = common.median(train_times[name]), common.median(predict_times[name])
    rows.append([SYSTEMS[name][0], f'{train_tokens / t:,.0f}', f'{len(batch["x"]) / t:,.1f}',
                 f'{t / ref_train:.1f}x', f'{test_tokens / q:,.0f}', f'{q / ref_predict:.1f}x'])

  # The implicit CD step against its unit costs (benchmarks/step_cost.py's model), and with its loops unrolled.
  implicit = base.copy_and_resolve_references()
  implicit.update_from_flattened_dict(SYSTEMS['implicit-cd'][1])
  problem = common.Problem(implicit, task=task)
  print(f'rebuilt L_aux/L_prim vs the real step: max rel diff {problem.check_against_step():.2e}', flush=True)
  step, step_batch, replicated = problem.jitted_step()
  stepper = step_cost.Stepper(step, problem.state, step_batch, replicated)
  unrolled_config = implicit.copy_and_resolve_references()
  unrolled_config.implicit.unroll = True
  unrolled = common.Problem(unrolled_config, task=task)
  u_step, u_batch, u_replicated = unrolled.jitted_step()
  unrolled_stepper = step_cost.Stepper(u_step, unrolled.state, u_batch, u_replicated)
  units, _ = step_cost.unit_functions(problem)
  contenders = {'step': stepper, 'step_unrolled': unrolled_stepper, 'bilstm': steps['bilstm'],
                **{f'unit_{k}': f for k, f in units.items()}}
  times = common.time_interleaved(contenders, args.reps)
  med = {k: common.median(v) for k, v in times.items()}
  iters = stepper.mean_iterations()[0]
  t_inner = implicit.implicit.inner_steps
  parts = {'inner': t_inner * med['unit_grad'], 'hvp': iters * med['unit_hvp'],
           'rest': med['unit_lin'] + med['unit_mixed'] + med['unit_prim']}
  predicted = sum(parts.values())
  model = common.table(
      ['T_inner', 'HVPs', 'T_inner t_grad ms', 'n_hvp t_hvp ms', 't_lin + t_mixed + t_prim ms', 'predicted ms',
       'measured ms', 'efficiency', 'BiLSTM-CE step ms', 'implicit / BiLSTM-CE'],
      [[t_inner, f'{iters:.3g}', common.ms(parts['inner']), common.ms(parts['hvp']), common.ms(parts['rest']),
        common.ms(predicted), common.ms(med['step']), f'{predicted / med["step"]:.2f}', common.ms(med['bilstm']),
        f'{med["step"] / med["bilstm"]:.1f}x']])
  units_table = common.table(['unit', 'median ms', 'p25-p75 ms'],
                             [[k, common.ms(med[f'unit_{k}']), common.spread(times[f'unit_{k}'])] for k in units])

  body = f"""## Sequence labeling: tokens per second (`benchmarks/tagging_throughput.py`)

{common.section_header(m)}
configs/pos.py (Twitter POS, one-layer BiLSTM of {base.model.hidden} units per direction, GloVe 50d, energy with its
own BiLSTM): training steps on the first {len(batch['x'])} training tweets ({train_tokens} real tokens, padded to
{batch['x'].shape[1]}), prediction on {len(test['x'])} test tweets ({test_tokens} tokens, cut to their bucket
{test['x'].shape[1]}); medians of {args.reps} interleaved calls, compilation excluded. Ratios are against the BiLSTM
trained with cross-entropy; every jitted step compiles once per bucket and never again (tests/test_tagging.py,
`test_one_compilation_per_padded_shape`).

{common.table(['method', 'train tokens/s', 'train tweets/s', 'train step vs BiLSTM', 'predict tokens/s',
               'predict vs BiLSTM'], rows)}

{INFNET_PLUS} Ours on this CPU: the rows above (train tweets/s); the inference-network methods predict at the
BiLSTM's speed, being one.

**The implicit CD step against a cost model** (benchmarks/step_cost.py's units on this task: `grad` one inner
step, `lin` the linearisation every HVP reuses, `hvp` one HVP in theta, `mixed` the mixed VJP into phi, `prim` the
gradient of L_prim; solver {implicit.implicit.solver.name}, {implicit.implicit.solver.iterations} iterations):

{model}

{units_table}

**Loops unrolled** (`implicit.unroll=True`: inner steps and solver iterations as straight-line code): the implicit
step takes {common.ms(med['step_unrolled'])} ms against {common.ms(med['step'])} ms with XLA loops
({med['step'] / med['step_unrolled']:.2f}x).
"""
  print(body)
  common.write_section(args.out, 'tagging_throughput', body)


if __name__ == '__main__':
  main()
