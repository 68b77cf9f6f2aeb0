r"""Segmentation speed: images per second of every horses method, in training and in prediction, and GBI against
feed-forward prediction on the same energy.

Usage: python -m benchmarks.horses_throughput [--data_dir ../shared/data] [--reps 10] [--out docs/benchmarks.md | -]

configs/horses.py (the networks and settings of docs/horses.md), on its first training batch (8 images) for the
training steps and the first 32 test images for prediction. One process; the contenders of each table are timed
interleaved and their medians compared. A third table shows what unrolling the loops buys on this CPU: the
implicit step and GBI with the inner steps, solver iterations and GBI steps as XLA loops (``unroll=False``)
against the straight-line code the config uses.
"""

import os

from benchmarks import common  # pylint: disable=wrong-import-position

import jax  # pylint: disable=wrong-import-position
import numpy as np  # pylint: disable=wrong-import-position

from implicit_jax import inference, methods, tasks  # pylint: disable=wrong-import-position
from implicit_jax.engine import xla_options  # pylint: disable=wrong-import-position

SYSTEMS = {  # as in configs/horses.py (experiments/reproduce_horses.py)
    'FCN (CE)': {'method': 'feedforward'},
    'implicit CD': {'method': 'implicit', 'implicit.primary_loss': 'cd'},
    'implicit DVN-style': {'method': 'implicit', 'implicit.primary_loss': 'dvn'},
    'DVN (GBI)': {'method': 'dvn'},
    'SEAL-dynamic regression': {'method': 'seal_dynamic', 'seal.energy_loss': 'regression'},
    'SEAL-dynamic NCE': {'method': 'seal_dynamic', 'seal.energy_loss': 'nce'},
}


def build(config, overrides, task):
  config = config.copy_and_resolve_references()
  config.update_from_flattened_dict(overrides)
  method = methods.build(task, config)
  return config, method, method.init(jax.random.key(0))


def main():
  p = common.parser(__doc__, reps=10)
  p.add_argument('--data_dir', default=os.environ.get('IMPLICIT_JAX_DATA_DIR', str(common.ROOT.parent / 'shared' /
                                                                                   'data')))
  args = p.parse_args()
  m = common.machine()
  base = common.load_config('horses')
  base.data.data_dir = args.data_dir
  task = tasks.get_task(base)
  batch = common.first_batch(task, base.batch_size)
  test = {'x': np.asarray(task.splits['test']['x'][:32])}
  key = jax.random.key(1)

  steps, predicts, built = {}, {}, {}
  for name, overrides in SYSTEMS.items():
    config, method, state = build(base, overrides, task)
    built[name] = (config, method, state)
    step = xla_options.jit(method.train_step)
    predict = xla_options.jit(method.predict)
    steps[name] = lambda step=step, state=state: step(state, batch, key)
    predicts[name] = lambda predict=predict, state=state: predict(state.params, test)
  train_times = common.time_interleaved(steps, args.reps)
  predict_times = common.time_interleaved(predicts, args.reps)
  fcn_train, fcn_predict = (common.median(t['FCN (CE)']) for t in (train_times, predict_times))
  rows = []
  for name in SYSTEMS:
    t, q = common.median(train_times[name]), common.median(predict_times[name])
    rows.append([name, f'{len(batch["x"]) / t:,.1f}', f'{t / fcn_train:.1f}x', f'{len(test["x"]) / q:,.0f}',
                 f'{q / fcn_predict:.1f}x'])

  # GBI against the feed-forward net on one energy: the implicit method's A_theta(x) and E_phi.
  config, method, state = built['implicit CD']
  gbi_cfg = config.gbi
  feed_forward = xla_options.jit(method.predict)
  gbi = xla_options.jit(inference.predictor(task.space, method.modules['energy'], gbi_cfg))
  gbi_times = common.time_interleaved({'ff': lambda: feed_forward(state.params, test),
                                       'gbi': lambda: gbi(state.params['phi'], test)}, args.reps)
  ff_t, gbi_t = common.median(gbi_times['ff']), common.median(gbi_times['gbi'])

  # Loops against straight-line code (the config's choice), for the two looping computations.
  _, looped, looped_state = build(base, {**SYSTEMS['implicit CD'], 'implicit.unroll': False}, task)
  looped_step = xla_options.jit(looped.train_step)
  unrolled_step = xla_options.jit(method.train_step)
  gbi_loop_cfg = gbi_cfg.copy_and_resolve_references()
  gbi_loop_cfg.unroll = False
  gbi_loop = xla_options.jit(inference.predictor(task.space, method.modules['energy'], gbi_loop_cfg))
  loop_reps = max(3, args.reps // 3)
  loop_times = common.time_interleaved({
      'step_loop': lambda: looped_step(looped_state, batch, key),
      'step_unrolled': lambda: unrolled_step(state, batch, key),
      'gbi_loop': lambda: gbi_loop(state.params['phi'], test),
      'gbi_unrolled': lambda: gbi(state.params['phi'], test)}, loop_reps)
  med = {k: common.median(v) for k, v in loop_times.items()}

  body = f"""## Segmentation: images per second (`benchmarks/horses_throughput.py`)

{common.section_header(m)}
configs/horses.py (FCN and conv energy at channels {tuple(base.model.channels)}, 32x32 images): training steps on a
batch of {len(batch['x'])} training images, prediction on {len(test['x'])} test images; medians of {args.reps}
interleaved calls, compilation excluded. Ratios are against the FCN trained with cross-entropy.

{common.table(['method', 'train images/s', 'train step vs FCN', 'predict images/s', 'predict vs FCN'], rows)}

**GBI against feed-forward prediction on the same energy** (the implicit method's E_phi and A_theta(x); GBI as
DVN predicts: {gbi_cfg.steps} {gbi_cfg.rule} steps of {gbi_cfg.step_size} from '{gbi_cfg.init}'):
feed-forward {len(test['x']) / ff_t:,.0f} images/s, GBI {len(test['x']) / gbi_t:,.0f} images/s:
**feed-forward is {gbi_t / ff_t:.1f}x faster**.

**Loops vs straight-line code on this CPU** (medians of {loop_reps}): the implicit CD step takes
{common.ms(med['step_loop'])} ms with its inner steps and MINRES iterations as XLA loops and
{common.ms(med['step_unrolled'])} ms unrolled ({med['step_loop'] / med['step_unrolled']:.1f}x); GBI prediction
{common.ms(med['gbi_loop'])} ms against {common.ms(med['gbi_unrolled'])} ms
({med['gbi_loop'] / med['gbi_unrolled']:.1f}x). XLA:CPU runs convolution gradients inside loop bodies far slower
than outside them (jax-ml/jax#12868), hence `implicit.unroll` and `gbi.unroll` in the convolutional config.
"""
  print(body)
  common.write_section(args.out, 'horses_throughput', body)


if __name__ == '__main__':
  main()
