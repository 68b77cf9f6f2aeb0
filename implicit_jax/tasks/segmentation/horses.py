"""Weizmann horses (Borenstein & Ullman 2002): RGB images and binary masks, resized to a square and split.

Layout of the data folder (the project's shared data, ``<data_dir>/weizmann_horse``)::

    images/image-<id>.png   RGB (any size)
    masks/mask-<id>.png     grey, 0 background / 255 horse, the size of its image

The 327 ids run from 0 to 327 with 317 absent. Each pair is resized to ``size x size``: the image bilinear, the
mask nearest (a mask stays binary; a pixel is horse when its value is >= 128). Images are standardised per
channel by the training split's mean and standard deviation.

Split (``split_ids``): a permutation of the sorted ids by ``numpy.random.default_rng(split_seed)``, cut into
``num_train`` / ``num_dev`` / the rest for test. The defaults, 200 / 28 / 99, are the data README's suggested
sizes; a seeded permutation rather than numeric order, because the ids follow the source's collection order and
a seeded draw gives every split the same mix. The ids of each split are recorded with a run.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np

from implicit_jax.tasks import DATA_DIR_ENV

FOLDER = 'weizmann_horse'
_IMAGE = re.compile(r'image-(\d+)\.png$')


def resolve(data_dir: str) -> Path:
  """The horses folder under ``data_dir`` (or ``$IMPLICIT_JAX_DATA_DIR``); a folder that itself holds ``images/``
  and ``masks/`` is taken as it is."""
  data_dir = data_dir or os.environ.get(DATA_DIR_ENV, '')
  if not data_dir:
    raise ValueError(f'data.data_dir is empty and ${DATA_DIR_ENV} is not set: give the folder that holds '
                     f'{FOLDER}/images and {FOLDER}/masks (e.g. --config.data.data_dir=/path/to/data)')
  root = Path(data_dir)
  folder = root if (root / 'images').is_dir() else root / FOLDER
  for sub in ('images', 'masks'):
    if not (folder / sub).is_dir():
      raise ValueError(f'data.data_dir: no folder {str(folder / sub)!r} (expected {FOLDER}/images and '
                       f'{FOLDER}/masks under {str(root)!r})')
  return folder


def list_ids(folder: Path) -> list[int]:
  """The ids with an image, sorted; every image needs its mask."""
  ids = sorted(int(m.group(1)) for name in os.listdir(folder / 'images') if (m := _IMAGE.match(name)))
  if not ids:
    raise ValueError(f'{folder / "images"}: no image-<id>.png files')
  missing = [i for i in ids if not (folder / 'masks' / f'mask-{i}.png').is_file()]
  if missing:
    raise ValueError(f'{folder / "masks"}: no mask for image id(s) {missing[:5]} (expected mask-<id>.png)')
  return ids


def read_pair(folder: Path, i: int, size: int) -> tuple[np.ndarray, np.ndarray]:
  """``(image [size, size, 3] uint8, mask [size, size] uint8 in {0, 1})`` of id ``i``."""
  from PIL import Image  # pylint: disable=import-outside-toplevel
  image_path, mask_path = folder / 'images' / f'image-{i}.png', folder / 'masks' / f'mask-{i}.png'
  try:
    with Image.open(image_path) as im:
      image = im.convert('RGB')
    with Image.open(mask_path) as m:
      mask = m.convert('L')
  except (OSError, SyntaxError) as e:  # PIL raises SyntaxError for some malformed PNGs
    raise ValueError(f'cannot read image pair {i} ({image_path}, {mask_path}): {e}') from None
  if image.size != mask.size:
    raise ValueError(f'{mask_path}: mask is {mask.size[0]}x{mask.size[1]} but its image {image_path.name} is '
                     f'{image.size[0]}x{image.size[1]}')
  image = np.asarray(image.resize((size, size), Image.Resampling.BILINEAR), np.uint8)
  mask = np.asarray(mask.resize((size, size), Image.Resampling.NEAREST)) >= 128
  return image, mask.astype(np.uint8)


def split_ids(ids: list[int], num_train: int, num_dev: int, seed: int) -> dict[str, list[int]]:
  """The seeded split of the module docstring."""
  if num_train < 1 or num_dev < 1 or num_train + num_dev >= len(ids):
    raise ValueError(f'data.num_train={num_train} and data.num_dev={num_dev} must be >= 1 and leave test images '
                     f'out of the {len(ids)}')
  perm = np.random.default_rng(seed).permutation(np.asarray(ids))
  cuts = {'train': perm[:num_train], 'dev': perm[num_train:num_train + num_dev], 'test': perm[num_train + num_dev:]}
  return {k: sorted(int(i) for i in v) for k, v in cuts.items()}


def load(data_dir: str, size: int, num_train: int, num_dev: int, split_seed: int) -> tuple[dict, dict]:
  """``(splits, info)``: ``x`` [N, size, size, 3] float32 standardised, ``y`` [N, size, size] float32 in {0, 1}."""
  folder = resolve(data_dir)
  ids = list_ids(folder)
  split = split_ids(ids, num_train, num_dev, split_seed)
  raw = {k: [read_pair(folder, i, size) for i in v] for k, v in split.items()}
  images = {k: np.stack([p[0] for p in v]).astype(np.float32) / 255.0 for k, v in raw.items()}
  mean = images['train'].mean(axis=(0, 1, 2))
  std = images['train'].std(axis=(0, 1, 2)) + 1e-6
  splits = {k: {'x': ((images[k] - mean) / std).astype(np.float32),
                'y': np.stack([p[1] for p in raw[k]]).astype(np.float32)} for k in raw}
  info = {'folder': str(folder), 'size': size, 'num_pairs': len(ids),
          'split': f'seeded permutation (numpy default_rng({split_seed})) of the {len(ids)} sorted ids: '
                   f'{num_train} train / {num_dev} dev / {len(ids) - num_train - num_dev} test',
          'ids': split, 'channel_mean': [float(v) for v in mean], 'channel_std': [float(v) for v in std],
          'horse_fraction': {k: float(v['y'].mean()) for k, v in splits.items()}}
  return splits, info
