"""Derive SEAL's Weizmann horses split as ids of the shared PNG pairs, and check how the pairs are resized.

SEAL (iesl/seal-neurips-2022, data/weizmann_horse_seg/weizmann_horse_{train,val,test}.npy) has Li, Tarlow & Zemel's
328 horses already at 32x32, in an order of its own; the project resizes the 327 PNG pairs itself. Prints how many of
SEAL's mask pixels each data.resize reproduces and the split, each SEAL image matched one-to-one to a PNG pair;
unless --no_check, exits 1 where the split differs from implicit_jax/tasks/segmentation/seal_split.py.

  git clone https://github.com/iesl/seal-neurips-2022 /tmp/seal    # or any copy of its data folder
  python -m experiments.seal_horse_split --seal_data=/tmp/seal/data/weizmann_horse_seg --data_dir=../shared/data
"""

import argparse
import os
import pickle
from pathlib import Path

import numpy as np

from implicit_jax.tasks.segmentation import horses, seal_split

SPLITS = {'train': 'train', 'val': 'dev', 'test': 'test'}  # SEAL's file name -> the project's split


def read_seal(folder: Path) -> tuple[np.ndarray, np.ndarray, list[str]]:
  images, masks, names = [], [], []
  for seal_name, ours in SPLITS.items():
    path = folder / f'weizmann_horse_{seal_name}.npy'
    try:
      entry = np.load(path, allow_pickle=True)[0]
      x, y = np.asarray(entry['images'], np.float32), np.asarray(entry['masks'], np.float32)
    except (OSError, ValueError, KeyError, IndexError, TypeError, EOFError, pickle.UnpicklingError) as e:
      raise SystemExit(f'error: --seal_data: cannot read {path} as SEAL\'s horses ({type(e).__name__}: {e})') from None
    if x.shape[1:] != (32, 32, 3) or y.shape != x.shape[:3]:
      raise SystemExit(f'error: {path}: images {x.shape} and masks {y.shape}, not [N, 32, 32, 3] and [N, 32, 32]')
    images.append(x)
    masks.append(y)
    names += [ours] * len(x)
  return np.concatenate(images), np.concatenate(masks), names


def main():
  parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument('--seal_data', required=True, help="SEAL's data/weizmann_horse_seg folder")
  parser.add_argument('--data_dir', default=os.environ.get('IMPLICIT_JAX_DATA_DIR', ''))
  parser.add_argument('--no_check', action='store_true', help='print the split without comparing it with seal_split.py')
  args = parser.parse_args()
  from scipy.optimize import linear_sum_assignment  # pylint: disable=import-outside-toplevel
  seal_x, seal_y, names = read_seal(Path(args.seal_data))
  try:
    folder = horses.resolve(args.data_dir)
    ids = horses.list_ids(folder)
    pairs = {r: [horses.read_pair(folder, i, 32, r) for i in ids] for r in horses.RESIZE}
  except (ValueError, OSError) as e:
    raise SystemExit(f'error: --data_dir: {e}') from None
  x = np.stack([p[0] for p in pairs['bicubic']]).astype(np.float32)
  y = {r: np.stack([p[1] for p in v]).astype(np.float32) for r, v in pairs.items()}
  cost = (np.sqrt(((seal_x[:, None] - x[None]) ** 2).mean(axis=(2, 3, 4)))
          + 100 * (seal_y[:, None] != y['bicubic'][None]).mean(axis=(2, 3)))
  rows, cols = linear_sum_assignment(cost)
  image_rms = np.sqrt(((seal_x[rows] - x[cols]) ** 2).mean(axis=(1, 2, 3)))
  print(f'{len(rows)} of SEAL\'s {len(seal_x)} images matched to the {len(ids)} pairs; largest image RMS distance '
        f'{image_rms.max():.2f} of 255')
  for r in horses.RESIZE:
    print(f'data.resize={r!r}: {100 * (seal_y[rows] == y[r][cols]).mean():.2f}% of SEAL\'s mask pixels reproduced; '
          f'horse pixels {int(y[r][cols].sum())} against SEAL\'s {int(seal_y[rows].sum())}')
  split = {ours: [] for ours in SPLITS.values()}
  matched = dict(zip(rows, cols))
  for row, name in enumerate(names):  # SEAL's order within each split
    if row in matched:
      split[name].append(int(ids[matched[row]]))
    else:
      print(f'SEAL\'s {name} image {names[:row].count(name)} (from 0) has no pair')
  print({k: len(v) for k, v in split.items()})
  print(split)
  if not args.no_check:
    if {k: tuple(v) for k, v in split.items()} != seal_split.SPLIT:
      raise SystemExit('error: the derived split differs from implicit_jax/tasks/segmentation/seal_split.py')
    print('the derived split equals implicit_jax/tasks/segmentation/seal_split.py')


if __name__ == '__main__':
  main()
