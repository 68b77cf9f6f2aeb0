"""A run's dev and test predictions in compact form, kept in its result so that its figures can be recomputed.

``train_and_evaluate`` adds ``result['predictions']``, made by ``pack`` from the best (dev-selected) epoch's
predictions, the ones its final figures were computed from. Per split it holds

* the task's discrete decisions (``Evaluator.decisions``): tag ids per real token and the sentence lengths
  (tagging, Cora), a threshold bin per (example, label) (multi-label: every threshold of the dev tuning grid on
  dev, 0.5 and the tuned threshold on test), a bit per pixel (segmentation). They are what the task's metrics read
  of a prediction, no more: ``Evaluator.relaxed`` turns them back into an array that
  the evaluator scores exactly as it scored the original (experiments/rescore.py);
* ``gold``: digests of the split's gold arrays (``y``, and ``mask`` where the task pads), so that a rescorer that
  reads the gold labels from the data directory can check that they are the run's, row for row.

Each array is stored as ``{'dtype', 'shape', 'codec', 'data'}``: its bytes (bits packed for booleans) compressed
with xz (LZMA, preset 9e: on delicious' 3185 x 983 test bins, under half of zlib's size, for seconds of CPU once
per run) and written as base64 text, a JSON string.
"""

from __future__ import annotations

import base64
import lzma

import numpy as np

from implicit_jax.engine.workdir import digest

FORMAT = 1
GOLD_KEYS = ('y', 'mask')


def encode(value) -> dict:
  """``value`` (a numpy array) as a JSON object; booleans packed 8 to a byte."""
  value = np.asarray(value)  # tobytes() is in C order (ascontiguousarray would make a 0-d array 1-d)
  if value.dtype == bool:
    raw, codec = np.packbits(value.reshape(-1)).tobytes(), 'packbits+xz'
  else:
    raw, codec = value.tobytes(), 'xz'
  return {'dtype': value.dtype.str, 'shape': list(value.shape), 'codec': codec,
          'data': base64.b64encode(lzma.compress(raw, preset=9 | lzma.PRESET_EXTREME)).decode('ascii')}


def decode(entry: dict) -> np.ndarray:
  """The array ``encode`` stored."""
  if entry['codec'] not in ('xz', 'packbits+xz'):
    raise ValueError(f'unknown codec {entry["codec"]!r}')
  raw = lzma.decompress(base64.b64decode(entry['data']))
  shape, dtype = tuple(entry['shape']), np.dtype(entry['dtype'])
  if entry['codec'] == 'packbits+xz':
    count = int(np.prod(shape))
    return np.unpackbits(np.frombuffer(raw, np.uint8), count=count).astype(bool).reshape(shape)
  return np.frombuffer(raw, dtype).reshape(shape).copy()


def gold_digest(arrays: dict) -> dict:
  """``{key: digest}`` of the split's gold arrays (``GOLD_KEYS``), as the workdir's data record computes them."""
  return {k: digest(arrays[k]) for k in GOLD_KEYS if k in arrays}


def pack(evaluator, splits: dict) -> dict | None:
  """``{'format', split: {'gold', 'decisions'[, 'calibration']}}`` for ``splits`` = ``{name: (relaxed predictions,
  arrays, calibration)}``, the calibration a split is scored under (None for the split it is chosen on: dev); None
  for an evaluator that defines no decisions."""
  out = {'format': FORMAT}
  for name, (pred, arrays, calibration) in splits.items():
    decisions = evaluator.decisions(np.asarray(pred), arrays, calibration or None)
    if decisions is None:
      return None
    out[name] = {'gold': gold_digest(arrays), 'decisions': {k: encode(v) for k, v in decisions.items()}}
    if calibration:
      out[name]['calibration'] = calibration
  return out


def unpack(block: dict) -> dict:
  """``{split: {key: array}}``: the decisions ``pack`` stored."""
  if block.get('format') != FORMAT:
    raise ValueError(f'predictions format {block.get("format")!r}; this code reads format {FORMAT}')
  return {name: {k: decode(v) for k, v in part['decisions'].items()}
          for name, part in block.items() if name != 'format'}


def gold_differences(block: dict, splits: dict) -> list[str]:
  """The gold arrays (``'test.y'``, ...) of ``splits`` whose digest differs from the one ``pack`` recorded."""
  out = []
  for name, part in block.items():
    if name == 'format':
      continue
    now = gold_digest(splits[name])
    out += [f'{name}.{k}' for k in sorted(set(part['gold']) | set(now)) if part['gold'].get(k) != now.get(k)]
  return out
