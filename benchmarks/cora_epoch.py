r"""Training seconds per epoch of every Cora method (configs/cora.py, 10 labeled citations, draw 0).

Usage: python -m benchmarks.cora_epoch [--data_dir ../shared/data] [--reps 3] [--out docs/benchmarks.md | -]

One epoch is the training split cut by ``engine.data.train_batches`` (the epoch's permutation, length buckets)
and fed to the jitted step of ``train.make_train_step``, as ``train.py`` runs it; a warm-up epoch pays the
compilations (one per bucket), then ``--reps`` epochs per method, interleaved across methods (A, B, C, then
C, B, A, ...), median reported. The semi-supervised methods (implicit CD, DVN, R-SPEN) train on the 250
labeled rows and the 290 unlabeled citations; the supervised ones (BiLSTM, CRF, implicit CD without the pool) on
the 250 labeled rows alone, as in the results table (docs/cora.md).
"""

import os

from benchmarks import common  # pylint: disable=wrong-import-position

import jax  # pylint: disable=wrong-import-position
import numpy as np  # pylint: disable=wrong-import-position

from implicit_jax import methods, tasks  # pylint: disable=wrong-import-position
from implicit_jax.engine import config as config_lib, data, train  # pylint: disable=wrong-import-position

VARIANTS = {
    'BiLSTM (labeled only)': {'method': 'feedforward', 'data.unlabeled': False},
    'BiLSTM-CRF (labeled only)': {'method': 'crf', 'data.unlabeled': False},
    'DVN (reward)': {'method': 'dvn'},
    'R-SPEN-style (reward rank)': {'method': 'rspen'},
    'implicit CD (labeled only)': {'method': 'implicit', 'data.unlabeled': False},
    'implicit CD (reward rank on unlabeled)': {'method': 'implicit'},
}


class Epoch:
  def __init__(self, overrides, data_dir):
    config = config_lib.from_file(common.ROOT / 'configs' / 'cora.py')
    config.update_from_flattened_dict(overrides)
    config.data.labeled, config.data.draw, config.data.data_dir = 10, 0, data_dir
    self.config, self.task = config, tasks.get_task(config)
    self.method = methods.build(self.task, config)
    _, replicated, self.sharded = train.data_parallel(config)
    rng = jax.random.key(config.seed)
    self.state = jax.device_put(self.method.init(jax.random.fold_in(rng, 0)), replicated)
    self.step = train.make_train_step(self.method, jax.random.fold_in(rng, 1), replicated, self.sharded)
    self.rows = len(self.task.splits['train']['y'])

  def run(self):
    # The step donates its state: each epoch continues from the last one's, as training does.
    for batch in data.train_batches(self.task, self.config.batch_size, np.random.default_rng([0, 1])):
      self.state, metrics = self.step(self.state, data.shard_batch(batch, self.sharded))
    return metrics


def main():
  p = common.parser(__doc__, reps=3)
  p.add_argument('--data_dir', default=os.environ.get('IMPLICIT_JAX_DATA_DIR', str(common.ROOT.parent / 'shared' /
                                                                                      'data')))
  args = p.parse_args()
  m = common.machine()
  epochs = {name: Epoch(overrides, args.data_dir) for name, overrides in VARIANTS.items()}
  times = common.time_interleaved({name: e.run for name, e in epochs.items()}, args.reps)
  base = common.median(times['BiLSTM (labeled only)'])
  rows = []
  for name, e in epochs.items():
    t = common.median(times[name])
    rows.append([name, e.rows, e.rows // e.config.batch_size, f'{t:.2f}', f'{t / base:.1f}x',
                 f'{e.rows / t:.0f}'])
  body = '\n'.join([
      '## Cora citation fields: training seconds per epoch', '', common.section_header(m),
      f'configs/cora.py at 10 labeled citations (draw 0), batch {epochs["DVN (reward)"].config.batch_size}; '
      f'median of {args.reps} epochs per method, interleaved, after a warm-up epoch that compiles every bucket. '
      'The paper reports no Cora timing.', '',
      common.table(['method', 'training rows', 'steps', 's / epoch', 'vs BiLSTM', 'rows / s'], rows)])
  print(body)
  common.write_section(args.out, 'cora_epoch', body)


if __name__ == '__main__':
  main()
