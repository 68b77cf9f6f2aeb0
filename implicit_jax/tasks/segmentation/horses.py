"""Weizmann horses (Borenstein & Ullman 2002): RGB images and binary masks, resized to a square and split.

Layout of the data folder (the project's shared data, ``<data_dir>/weizmann_horse``)::

    images/image-<id>.png   RGB (any size)
    masks/mask-<id>.png     grey, 0 background / 255 horse, the size of its image

The 327 ids run from 0 to 327 with 317 absent. Other image formats are read too (``.jpg``, ``.jpeg``, ``.bmp``,
``.gif``, ``.tif``, ``.tiff``, ``.webp``, any case); a file in ``images/`` not named so is skipped with a warning
naming it. A mask is two-valued: 0 is background and the other value horse, whatever it is (255, 1, 100; in an
RGB mask, any channel non-zero: a red mask on black), read at full size; a mask with more than two values (a JPEG
mask, an anti-aliased edge), without a horse pixel, or with two values neither of which is 0 is an error naming the
file. Each pair is resized to ``size x size`` by ``resize`` (``RESIZE``): 'bilinear', the image bilinear and the
mask nearest; 'bicubic', both bicubic and the mask then cut at ``MASK_CUT``, which is how Li, Tarlow & Zemel's 32x32
set, the one DVN and SEAL train and test on, was made (``experiments/seal_horse_split.py``: 99.98% of its mask pixels,
against 97.3% for 'bilinear', whose masks hold 10% fewer horse pixels). Images are standardised per channel by the
training split's mean and standard deviation.

Split (``split_ids``): a permutation of the sorted ids by ``numpy.random.default_rng(split_seed)``, cut into
``num_train`` / ``num_dev`` / the rest for test. The defaults, 200 / 28 / 99, are the data README's suggested
sizes; a seeded permutation rather than numeric order, because the ids follow the source's collection order and
a seeded draw gives every split the same mix. ``split='seal'`` takes SEAL's split instead (``seal_split.py``: 160 /
39 / 128). The ids of each split are recorded with a run.
"""

from __future__ import annotations

import os
import re
import warnings
from pathlib import Path

import numpy as np

from implicit_jax.tasks import DATA_DIR_ENV
from implicit_jax.tasks.segmentation import seal_split

FOLDER = 'weizmann_horse'
EXTENSIONS = ('png', 'jpg', 'jpeg', 'bmp', 'gif', 'tif', 'tiff', 'webp')
RESIZE = ('bilinear', 'bicubic')
SPLITS = ('seeded', 'seal')
MASK_CUT = 0.3  # 'bicubic': a pixel is horse where the resized mask exceeds this fraction
_NAMED = {kind: re.compile(rf'{kind}-(\d+)\.({"|".join(EXTENSIONS)})$', re.I) for kind in ('image', 'mask')}


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


def _files(folder: Path, kind: str, warn: bool = True) -> dict[int, Path]:
  """``{id: path}`` of ``folder``'s files named ``<kind>-<id>.<extension>``; two files for one id are an error, other
  files are skipped with a warning naming them (a silently skipped image would shrink the data unseen)."""
  found, skipped = {}, []
  for name in sorted(os.listdir(folder)):
    m = _NAMED[kind].match(name)
    if m is None:
      if not name.startswith('.'):  # .DS_Store and the like are not meant as data
        skipped.append(name)
      continue
    i = int(m.group(1))
    if i in found:
      raise ValueError(f'{folder}: two files for id {i}, {found[i].name} and {name}: keep one')
    found[i] = folder / name
  if skipped and warn:
    shown = ', '.join(skipped[:5]) + (f' (+{len(skipped) - 5} more)' if len(skipped) > 5 else '')
    warnings.warn(f'{folder}: {len(skipped)} file(s) not named {kind}-<id>.<{"|".join(EXTENSIONS)}> are skipped: '
                  f'{shown}', UserWarning, stacklevel=3)
  return found


def list_ids(folder: Path) -> list[int]:
  """The ids with an image, sorted; every image needs its mask."""
  images = _files(folder / 'images', 'image')
  if not images:
    raise ValueError(f'{folder / "images"}: no image-<id>.<{"|".join(EXTENSIONS)}> files')
  masks = _files(folder / 'masks', 'mask')
  missing = [i for i in sorted(images) if i not in masks]
  if missing:
    raise ValueError(f'{folder / "masks"}: no mask for image id(s) {missing[:5]} (expected mask-<id>.png)')
  return sorted(images)


def _path(folder: Path, kind: str, i: int) -> Path:
  candidates = [folder / f'{kind}-{i}.{extension}' for extension in EXTENSIONS]
  found = next((p for p in candidates if p.is_file()), None)
  # Another case of the extension (.JPG), or none: the .png the error then names.
  return found or _files(folder, kind, warn=False).get(i, candidates[0])


def horse_pixels(mask, path: Path) -> np.ndarray:
  """The horse of a mask image as a bool array [H, W] (module docstring: two values, 0 background)."""
  if mask.mode in ('1', 'L', 'I', 'I;16', 'F'):
    values = np.asarray(mask)
  else:  # RGB, RGBA, palette, LA: a pixel is horse when any colour channel is non-zero (alpha is not read)
    values = np.asarray(mask.convert('RGB')).max(axis=-1)
  distinct = np.unique(values)
  if len(distinct) > 2:
    shown = ', '.join(f'{v:g}' for v in distinct[:6]) + (', ...' if len(distinct) > 6 else '')
    raise ValueError(f'{path}: {len(distinct)} distinct values ({shown}); a mask holds two, 0 for background and '
                     'one other for the horse (a JPEG mask blurs them: save masks as PNG)')
  if distinct.max() == 0:
    raise ValueError(f'{path}: no horse pixel (every pixel is 0); a mask marks the horse with a non-zero value')
  if len(distinct) == 2 and distinct.min() != 0:
    raise ValueError(f'{path}: its two values are {distinct[0]:g} and {distinct[1]:g}, neither 0: a mask has 0 for '
                     'background')
  return values != 0


def read_pair(folder: Path, i: int, size: int, resize: str = 'bilinear') -> tuple[np.ndarray, np.ndarray]:
  """``(image [size, size, 3] uint8, mask [size, size] uint8 in {0, 1})`` of id ``i``, resized by ``resize``."""
  from PIL import Image  # pylint: disable=import-outside-toplevel
  image_path, mask_path = _path(folder / 'images', 'image', i), _path(folder / 'masks', 'mask', i)
  try:
    with Image.open(image_path) as im:
      image = im.convert('RGB')
    with Image.open(mask_path) as m:
      m.load()
      mask = m.copy()
  except (OSError, SyntaxError) as e:  # PIL raises SyntaxError for some malformed PNGs
    raise ValueError(f'cannot read image pair {i} ({image_path}, {mask_path}): {e}') from None
  if image.size != mask.size:
    raise ValueError(f'{mask_path}: mask is {mask.size[0]}x{mask.size[1]} but its image {image_path.name} is '
                     f'{image.size[0]}x{image.size[1]}')
  horse = Image.fromarray(horse_pixels(mask, mask_path).astype(np.uint8) * 255, 'L')
  if resize == 'bicubic':
    image = np.asarray(image.resize((size, size), Image.Resampling.BICUBIC), np.uint8)
    mask = np.asarray(horse.resize((size, size), Image.Resampling.BICUBIC)) > 255 * MASK_CUT
  else:
    image = np.asarray(image.resize((size, size), Image.Resampling.BILINEAR), np.uint8)
    mask = np.asarray(horse.resize((size, size), Image.Resampling.NEAREST)) >= 128
  return image, mask.astype(np.uint8)


def split_ids(ids: list[int], num_train: int, num_dev: int, seed: int) -> dict[str, list[int]]:
  """The seeded split of the module docstring."""
  if num_train < 1 or num_dev < 1 or num_train + num_dev >= len(ids):
    raise ValueError(f'data.num_train={num_train} and data.num_dev={num_dev} must be >= 1 and leave test images '
                     f'out of the {len(ids)}')
  perm = np.random.default_rng(seed).permutation(np.asarray(ids))
  cuts = {'train': perm[:num_train], 'dev': perm[num_train:num_train + num_dev], 'test': perm[num_train + num_dev:]}
  return {k: sorted(int(i) for i in v) for k, v in cuts.items()}


def seal_ids(ids: list[int]) -> dict[str, list[int]]:
  """SEAL's split (seal_split.py), checked against the ids of the data folder."""
  missing = sorted(set(i for v in seal_split.SPLIT.values() for i in v) - set(ids))
  if missing:
    raise ValueError(f"data.split='seal' names {len(missing)} ids the data folder lacks (first: {missing[0]}): "
                     'SEAL\'s split is of the 327 pairs of the shared Weizmann horses')
  return {k: list(v) for k, v in seal_split.SPLIT.items()}


def load(data_dir: str, size: int, num_train: int, num_dev: int, split_seed: int, resize: str = 'bilinear',
         split: str = 'seeded') -> tuple[dict, dict]:
  """``(splits, info)``: ``x`` [N, size, size, 3] float32 standardised, ``y`` [N, size, size] float32 in {0, 1}."""
  folder = resolve(data_dir)
  ids = list_ids(folder)
  if split == 'seal':
    chosen = seal_ids(ids)
    how = (f"SEAL's split (iesl/seal-neurips-2022) as ids of the {len(ids)} pairs: "
           f"{' / '.join(str(len(chosen[k])) for k in ('train', 'dev', 'test'))} train / dev / test")
  else:
    chosen = split_ids(ids, num_train, num_dev, split_seed)
    how = (f'seeded permutation (numpy default_rng({split_seed})) of the {len(ids)} sorted ids: '
           f'{num_train} train / {num_dev} dev / {len(ids) - num_train - num_dev} test')
  raw = {k: [read_pair(folder, i, size, resize) for i in v] for k, v in chosen.items()}
  images = {k: np.stack([p[0] for p in v]).astype(np.float32) / 255.0 for k, v in raw.items()}
  mean = images['train'].mean(axis=(0, 1, 2))
  std = images['train'].std(axis=(0, 1, 2)) + 1e-6
  splits = {k: {'x': ((images[k] - mean) / std).astype(np.float32),
                'y': np.stack([p[1] for p in raw[k]]).astype(np.float32)} for k in raw}
  info = {'folder': str(folder), 'size': size, 'num_pairs': len(ids), 'split': how, 'ids': chosen,
          'channel_mean': [float(v) for v in mean], 'channel_std': [float(v) for v in std],
          'horse_fraction': {k: float(v['y'].mean()) for k, v in splits.items()}}
  return splits, info
