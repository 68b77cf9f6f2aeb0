"""The horses figure: test images with the gold mask and the masks predicted by the FCN, DVN and implicit CD.

  python -m experiments.horses_figure [--workdir /tmp/reproduce_horses] [--seed 0] [--count 8]

Reads the trained runs that experiments/reproduce_horses.py left in ``--workdir`` (their best-on-dev parameters),
predicts the first ``--count`` test images of the split and writes docs/horses/examples.png: one row per image,
the image as read (before standardisation), the gold mask, then each method's mask at threshold 0.5 with its IoU
on that image.
"""

import argparse
import sys
from pathlib import Path


ROOT = Path(__file__).resolve().parents[1]
from implicit_jax.engine import cli  # pylint: disable=wrong-import-position
from implicit_jax.engine import checkpoints  # pylint: disable=wrong-import-position
from implicit_jax.tasks.segmentation import horses  # pylint: disable=wrong-import-position
from implicit_jax.tasks.segmentation.evaluator import iou_scores  # pylint: disable=wrong-import-position

METHODS = (('fcn', 'FCN (CE)'), ('dvn', 'DVN (GBI)'), ('implicit-cd', 'implicit CD'))


def main():
  parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument('--workdir', default='/tmp/reproduce_horses')
  parser.add_argument('--seed', type=int, default=0)
  parser.add_argument('--count', type=int, default=8)
  parser.add_argument('--out', default=str(ROOT / 'docs' / 'horses' / 'examples.png'))
  args = parser.parse_args()
  import matplotlib  # pylint: disable=import-outside-toplevel
  matplotlib.use('Agg')
  import matplotlib.pyplot as plt  # pylint: disable=import-outside-toplevel

  runs = {name: checkpoints.load_trained(f'{args.workdir}/{name}-{args.seed}') for name, _ in METHODS}
  task = runs['fcn'].task
  test = {k: v[:args.count] for k, v in task.splits['test'].items()}
  ids = task.info['ids']['test'][:args.count]
  folder = horses.resolve(runs['fcn'].config.data.data_dir)
  images = [horses.read_pair(folder, i, task.info['size'])[0] for i in ids]
  preds = {name: run.predict({'x': test['x']}) for name, run in runs.items()}

  cols = 2 + len(METHODS)
  fig, axes = plt.subplots(len(ids), cols, figsize=(1.6 * cols, 1.6 * len(ids)))
  for r, i in enumerate(ids):
    panels = [(images[r], f'test image {i}'), (test['y'][r], 'gold')]
    for name, label in METHODS:
      p = preds[name][r:r + 1]
      panels.append((p[0] >= 0.5, f'{label}\nIoU {iou_scores(p, test["y"][r:r + 1])["mean_iou"]:.2f}'))
    for c, (img, title) in enumerate(panels):
      ax = axes[r, c]
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
