"""The horses figure, docs/horses/examples.png: test images with the gold mask and the masks predicted by the FCN,
DVN and implicit CD.

  python -m experiments.horses_figure [--workdir /tmp/reproduce_horses] [--scale half] [--seed 0] [--count 8]

Reads the runs that experiments/reproduce_horses.py trained in ``--workdir`` at ``--scale`` (their best-on-dev
parameters) and draws one row per test image (the first ``--count`` of the split): the image as read (before
standardisation), the gold mask, then each method's mask at threshold 0.5 with its IoU on that image.
"""

import sys
from pathlib import Path

from implicit_jax.engine import checkpoints, cli
from implicit_jax.tasks.segmentation import horses
from implicit_jax.tasks.segmentation.evaluator import iou_scores
import experiments
from experiments import reproduce_horses

METHODS = (('fcn', 'FCN (CE)'), ('dvn', 'DVN (GBI)'), ('implicit-cd', 'implicit CD'))


def main():
  args = experiments.parse(__doc__, {
      '--data_dir': None, '--seeds': None, '--table_only': None, '--workdir': {'default': '/tmp/reproduce_horses'},
      '--scale': {'default': 'half', 'choices': sorted(reproduce_horses.SCALES),
                  'help': 'the --scale of reproduce_horses the runs were made at'},
      '--seed': {'type': int, 'default': 0}, '--count': {'type': int, 'default': 8},
      '--out': {'default': str(experiments.ROOT / 'docs' / 'horses' / 'examples.png')}}, runner_flags=False)
  from matplotlib.figure import Figure  # pylint: disable=import-outside-toplevel

  runs = {name: checkpoints.load_trained(reproduce_horses.workdir_of(args.workdir, args.scale, name, args.seed))
          for name, _ in METHODS}
  task = runs['fcn'].task
  test = {k: v[:args.count] for k, v in task.splits['test'].items()}
  ids = task.info['ids']['test'][:args.count]
  folder = horses.resolve(runs['fcn'].config.data.data_dir)
  preds = {name: run.predict({'x': test['x']}) for name, run in runs.items()}
  cols = 2 + len(METHODS)
  fig = Figure(figsize=(1.6 * cols, 1.6 * len(ids)))
  axes = fig.subplots(len(ids), cols)
  for r, i in enumerate(ids):
    panels = [(horses.read_pair(folder, i, task.info['size'])[0], f'test image {i}'), (test['y'][r], 'gold')]
    for name, label in METHODS:
      p = preds[name][r:r + 1]
      panels.append((p[0] >= 0.5, f'{label}\nIoU {iou_scores(p, test["y"][r:r + 1])["mean_iou"]:.2f}'))
    for ax, (img, title) in zip(axes[r], panels):
      ax.imshow(img, cmap=None if img.ndim == 3 else 'gray', vmin=0, vmax=1 if img.ndim == 2 else None,
                interpolation='nearest')
      ax.set_title(title, fontsize=7)
      ax.axis('off')
  fig.suptitle(f'Weizmann horses 32x32, test split, seed {args.seed} runs (threshold 0.5)', fontsize=9)
  fig.tight_layout()
  Path(args.out).parent.mkdir(parents=True, exist_ok=True)
  fig.savefig(args.out, dpi=110)
  print(f'wrote {args.out}')


if __name__ == '__main__':
  sys.exit(cli.guarded(main))
