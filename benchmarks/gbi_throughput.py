r"""Inference throughput: the feed-forward inference network vs gradient-based inference on the same energy.

Usage: python -m benchmarks.gbi_throughput [--steps 20] [--batch 1024] [--reps 20] [--out docs/benchmarks.md | -]

The bibtex model: ``A_theta(x)`` (one forward pass, what the implicit method and MBCE predict with) against GBI
on ``E_phi(x, .)`` (what SPEN and DVN predict with: ``--steps`` projected-gradient steps from 0.5, each one
energy gradient), on the same batch of test rows, both jitted. SEAL reports GBI 3.63x slower on average.
Parameter values do not change the cost, so freshly initialised ones are used.
"""

from benchmarks import common  # pylint: disable=wrong-import-position

import jax  # pylint: disable=wrong-import-position
import numpy as np  # pylint: disable=wrong-import-position

from implicit_jax import inference, methods, tasks  # pylint: disable=wrong-import-position
from implicit_jax.engine import xla_options  # pylint: disable=wrong-import-position


def main():
  p = common.parser(__doc__)
  p.add_argument('--steps', type=int, default=20, help='GBI steps (default 20, config.gbi.steps)')
  p.add_argument('--batch', type=int, default=1024, help='test rows per call (default 1024)')
  args = p.parse_args()
  m = common.machine()
  config = common.load_config('bibtex:base')
  config.gbi.steps = args.steps
  task = tasks.get_task(config)
  method = methods.build(task, config)
  params = method.init(jax.random.key(0)).params
  x = {'x': np.asarray(task.splits['test']['x'][:args.batch])}
  feed_forward = xla_options.jit(method.predict)
  gbi = xla_options.jit(inference.predictor(task.space, method.modules['energy'], config.gbi))
  times = common.time_interleaved({'feed-forward A_theta(x)': lambda: feed_forward(params, x),
                                   f'GBI, {args.steps} steps': lambda: gbi(params['phi'], x)}, args.reps)
  rows, rates = [], {}
  for name, ts in times.items():
    rates[name] = len(x['x']) / common.median(ts)
    rows.append([name, common.ms(common.median(ts)), common.spread(ts), f'{rates[name]:,.0f}'])
  ratio = rates['feed-forward A_theta(x)'] / rates[f'GBI, {args.steps} steps']
  body = f"""## Inference throughput: feed-forward vs gradient-based inference

{common.section_header(m)}
bibtex model, {len(x['x'])} test rows per call, same energy for GBI (projected gradient from 0.5, step
{config.gbi.step_size}). Median of {args.reps} interleaved calls.

{common.table(['prediction', 'median (ms)', 'p25-p75 (ms)', 'examples/s'], rows)}

**Feed-forward is {ratio:.1f}x the throughput of GBI** with {args.steps} steps (SEAL reports GBI 3.63x slower
on average, with its own step counts and GPU). The gap is smaller than the step count suggests because XLA
hoists the energy's feature network b(x), which does not depend on y, out of the GBI loop: each step only
re-evaluates the y-dependent terms.
"""
  print(body)
  common.write_section(args.out, 'gbi_throughput', body)


if __name__ == '__main__':
  main()
