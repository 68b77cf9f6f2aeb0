"""The segmentation task plugged into the engine: the horses reader on generated PNG pairs (resizing, the seeded
split, standardisation, errors that name the file), IoU metrics worked by hand, flips, the convolutional energy
over stacked negatives, and every segmentation method trained by the real loop on the tiny config."""

import os
import shutil
from pathlib import Path

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from PIL import Image

from implicit_jax import methods, tasks
from implicit_jax.engine import checkpoints, data, train
from implicit_jax.tasks import segmentation
from implicit_jax.tasks.segmentation import horses, seal_split
from implicit_jax.tasks.segmentation.evaluator import iou_scores
from tests.conftest import load_config

FIXTURE = Path(__file__).resolve().parent / 'fixtures' / 'horses'
SHARED = Path(os.environ.get('IMPLICIT_JAX_SHARED_DATA', Path(__file__).resolve().parents[2] / 'shared' / 'data'))


@pytest.fixture(scope='module')
def task():
  return tasks.get_task(load_config('tiny_horses'))


def test_reader_resizes_splits_and_standardises(task):
  ids = horses.list_ids(horses.resolve(str(FIXTURE)))
  assert ids == [i for i in range(13) if i != 7]
  split = task.info['ids']
  assert [len(split[k]) for k in ('train', 'dev', 'test')] == [6, 3, 3]
  assert sorted(split['train'] + split['dev'] + split['test']) == ids          # disjoint and complete
  assert split == horses.split_ids(ids, 6, 3, 0) != horses.split_ids(ids, 6, 3, 1)  # the seed decides it
  train_split = task.splits['train']
  chex.assert_shape(train_split['x'], (6, 16, 16, 3))
  chex.assert_shape(train_split['y'], (6, 16, 16))
  assert set(np.unique(train_split['y'])) == {0.0, 1.0}                        # nearest resizing stays binary
  np.testing.assert_allclose(train_split['x'].mean(axis=(0, 1, 2)), 0.0, atol=1e-5)  # train statistics
  np.testing.assert_allclose(train_split['x'].std(axis=(0, 1, 2)), 1.0, atol=1e-3)
  # The mask of a pair, resized by itself, is the split's gold mask.
  image, mask = horses.read_pair(horses.resolve(str(FIXTURE)), split['train'][0], 16)
  with Image.open(FIXTURE / 'weizmann_horse' / 'masks' / f'mask-{split["train"][0]}.png') as m:
    expected = np.asarray(m.resize((16, 16), Image.Resampling.NEAREST)) >= 128
  np.testing.assert_array_equal(mask, expected)
  np.testing.assert_array_equal(train_split['y'][0], expected)
  # The generated horse is bright: its pixels are brighter than the background after standardisation too.
  assert train_split['x'][train_split['y'] > 0].mean() > train_split['x'][train_split['y'] == 0].mean() + 1.0


def _copy_fixture(tmp_path):
  target = tmp_path / 'weizmann_horse'
  shutil.copytree(FIXTURE / 'weizmann_horse', target)
  return target


def test_reader_errors_name_the_file_or_field(tmp_path):
  with pytest.raises(ValueError, match=r'data.data_dir: no folder .*images'):
    horses.resolve(str(tmp_path))
  folder = _copy_fixture(tmp_path)
  (folder / 'masks' / 'mask-3.png').unlink()
  with pytest.raises(ValueError, match=r'masks: no mask for image id\(s\) \[3\]'):
    horses.list_ids(horses.resolve(str(tmp_path)))
  (folder / 'images' / 'image-4.png').write_bytes(b'not a png')
  with pytest.raises(ValueError, match=r'cannot read image pair 4 \(.*image-4.png'):
    horses.read_pair(folder, 4, 8)
  Image.new('L', (5, 5)).save(folder / 'masks' / 'mask-5.png')
  with pytest.raises(ValueError, match=r'mask-5.png: mask is 5x5 but its image image-5.png is'):
    horses.read_pair(folder, 5, 8)
  with pytest.raises(ValueError, match=r'data.num_train=10 and data.num_dev=2 must .* leave test images'):
    horses.split_ids(list(range(12)), 10, 2, 0)


@pytest.mark.parametrize('encoding', ['0/1', 'red RGB', '0/100'])
def test_masks_in_other_encodings_and_jpeg_images_read_as_the_originals(tmp_path, encoding):
  """Masks stored 0/1, as red on black RGB, or 0/100 give the gold of the {0, 255} originals; images saved as .jpg
  (any case) are read, and a file not named image-<id>.<ext> is skipped with a warning naming it. Before: every
  such mask read as background (a run 'succeeded' with IoU 0) and the .jpg images were skipped without a word."""
  folder = _copy_fixture(tmp_path)
  original = horses.load(str(FIXTURE), 16, 6, 3, 0)[0]
  for path in sorted((folder / 'masks').iterdir()):
    with Image.open(path) as m:
      horse = np.asarray(m) > 0
    if encoding == 'red RGB':
      Image.fromarray(np.stack([horse * 255, 0 * horse, 0 * horse], -1).astype(np.uint8), 'RGB').save(path)
    else:
      Image.fromarray((horse * (1 if encoding == '0/1' else 100)).astype(np.uint8), 'L').save(path)
  for i, extension in ((2, 'jpg'), (5, 'JPEG')):
    with Image.open(folder / 'images' / f'image-{i}.png') as im:
      im.save(folder / 'images' / f'image-{i}.{extension}', quality=95)
    (folder / 'images' / f'image-{i}.png').unlink()
  (folder / 'images' / 'notes.txt').write_text('where the horses came from')
  with pytest.warns(UserWarning, match=r"images: 1 file\(s\) not named image-<id>\.<png\|jpg\|.*> are skipped: "
                                       r'notes\.txt'):
    splits, info = horses.load(str(tmp_path), 16, 6, 3, 0)
  assert info['num_pairs'] == 12
  for split in ('train', 'dev', 'test'):
    np.testing.assert_array_equal(splits[split]['y'], original[split]['y'])
  assert 0.1 < info['horse_fraction']['train'] < 0.9


def test_masks_that_cannot_be_read_as_two_values_name_the_file(tmp_path):
  folder = _copy_fixture(tmp_path)
  cases = {0: (np.zeros((4, 4)), r'mask-0\.png: no horse pixel \(every pixel is 0\)'),
           1: (np.arange(16).reshape(4, 4) % 3 * 100, r'mask-1\.png: 3 distinct values \(0, 100, 200\); a mask holds '
                                                      r'two, 0 for background and one other for the horse'),
           2: (np.where(np.eye(4) > 0, 255, 100), r'mask-2\.png: its two values are 100 and 255, neither 0')}
  for i, (values, message) in cases.items():
    with Image.open(folder / 'images' / f'image-{i}.png') as im:
      size = im.size
    mask = Image.fromarray(np.resize(values, (size[1], size[0])).astype(np.uint8), 'L')
    mask.save(folder / 'masks' / f'mask-{i}.png')
    with pytest.raises(ValueError, match=message):
      horses.read_pair(folder, i, 8)
  (folder / 'images' / 'image-3.jpg').write_bytes((folder / 'images' / 'image-3.png').read_bytes())
  with pytest.raises(ValueError, match=r'images: two files for id 3, image-3\.jpg and image-3\.png: keep one'):
    horses.list_ids(folder)


def test_config_errors_name_the_field():
  config = load_config('tiny_horses')
  config.data.size = 10
  with pytest.raises(ValueError, match=r'data.size must be a positive multiple of 4'):
    tasks.get_task(config)
  config = load_config('tiny_horses')
  config.model.channels = (4, 8)
  with pytest.raises(ValueError, match=r'model.channels must be three positive integers'):
    tasks.get_task(config)


def test_iou_metrics_by_hand():
  gold = np.zeros((3, 2, 2))
  gold[0, 0] = 1                      # image 0: gold top row
  gold[1, :, 0] = 1                   # image 1: gold left column
  pred = np.zeros((3, 2, 2))
  pred[0, 0, 0] = 0.9                 # image 0: one of two gold pixels, nothing else: IoU 1/2
  pred[1] = 0.6                       # image 1: everything: IoU 2/4
  pred[2, 0, 0] = 0.4                 # image 2: both empty after thresholding at 0.5: IoU 1
  scores = iou_scores(pred, gold)
  assert scores['mean_iou'] == pytest.approx((0.5 + 0.5 + 1.0) / 3)
  assert scores['global_iou'] == pytest.approx((1 + 2) / (2 + 4))  # pooled: intersections 1 + 2, unions 2 + 4
  assert scores['pixel_accuracy'] == pytest.approx(9 / 12)  # wrong: 1 pixel of image 0, 2 of image 1


def test_flips_move_image_and_mask_together_and_depend_on_the_generator_alone(task):
  batch = {k: v[:6] for k, v in task.splits['train'].items()}
  out = segmentation.flip(batch, np.random.default_rng(5))
  flipped = np.random.default_rng(5).random(6) < 0.5
  assert 0 < flipped.sum() < 6
  for i in range(6):
    expect_x = batch['x'][i, :, ::-1] if flipped[i] else batch['x'][i]
    expect_y = batch['y'][i, :, ::-1] if flipped[i] else batch['y'][i]
    np.testing.assert_array_equal(out['x'][i], expect_x)
    np.testing.assert_array_equal(out['y'][i], expect_y)
  # Training batches: the same (seed, epoch) generator gives the same augmented batches.
  first = list(data.train_batches(task, 3, np.random.default_rng([0, 1])))
  again = list(data.train_batches(task, 3, np.random.default_rng([0, 1])))
  for a, b in zip(first, again):
    chex.assert_trees_all_equal(a, b)


def test_energy_scores_stacked_negatives_like_one_at_a_time(task):
  energy = task.make_energy()
  batch = task.example_batch()
  batch = {k: np.repeat(v, 2, axis=0) + (np.random.default_rng(0).normal(size=(2, *v.shape[1:])).astype(v.dtype)
                                         if k == 'x' else 0) for k, v in batch.items()}
  phi = jax.jit(energy.init)(jax.random.key(0), batch, jnp.zeros((2, 16, 16)))  # jitted: a program per shape,
  ys = jax.random.uniform(jax.random.key(1), (4, 2, 16, 16))                      # not one per operation
  apply = jax.jit(energy.apply)
  stacked = apply(phi, batch, ys)
  chex.assert_shape(stacked, (4, 2))
  one_by_one = jnp.stack([apply(phi, batch, y) for y in ys])
  np.testing.assert_allclose(stacked, one_by_one, rtol=1e-5, atol=1e-6)
  with pytest.raises(ValueError, match='mask shape'):
    energy.apply(phi, batch, jnp.zeros((2, 8, 8)))
  fcn = task.make_inference_net(heads=2)
  logits = fcn.apply(fcn.init(jax.random.key(2), batch), batch)
  assert len(logits) == 2
  chex.assert_shape(logits, ((2, 16, 16), (2, 16, 16)))


@pytest.mark.parametrize('method, overrides', [
    ('feedforward', {}),  # the real loop on segmentation in the fast suite; the other methods' runs are e2e
    pytest.param('implicit', {'implicit.primary_loss': 'cd'}, marks=pytest.mark.e2e),
    pytest.param('implicit', {'implicit.primary_loss': 'dvn', 'implicit.unroll': True}, marks=pytest.mark.e2e),
    pytest.param('dvn', {}, marks=pytest.mark.e2e),
    pytest.param('seal_dynamic', {'seal.energy_loss': 'regression'}, marks=pytest.mark.e2e),
    pytest.param('seal_dynamic', {'seal.energy_loss': 'nce'}, marks=pytest.mark.e2e),
])
def test_every_segmentation_method_trains_on_the_tiny_config(tmp_path, method, overrides):
  config = load_config('tiny_horses')
  config.method = method
  config.update_from_flattened_dict(overrides)
  result = train.train_and_evaluate(config, str(tmp_path / 'run'))
  assert result['task'] == 'horses' and result['method'] == method
  for key in ('test_mean_iou', 'test_global_iou', 'test_pixel_accuracy', 'dev_mean_iou'):
    assert 0.0 <= result[key] <= 1.0, key
  assert result['task_info']['ids']['test'] and len(result['history']) == 2
  assert all(np.isfinite(v) for means in result['train_log'].values() for v in means.values()
             if not np.isnan(v))


@pytest.mark.skipif(not (SHARED / 'weizmann_horse').is_dir(), reason=f'shared data not present at {SHARED}')
def test_the_real_horses_split():
  splits, info = horses.load(str(SHARED), 32, 200, 28, 0)
  assert info['num_pairs'] == 327 and 317 not in sum(info['ids'].values(), [])
  assert [len(splits[k]['y']) for k in ('train', 'dev', 'test')] == [200, 28, 99]
  for split in splits.values():
    assert set(np.unique(split['y'])) == {0.0, 1.0}
    assert 0.1 < split['y'].mean() < 0.4  # horses cover about a quarter of each image


def test_seals_split_holds_every_pair_once_at_seals_sizes():
  ids = [i for v in seal_split.SPLIT.values() for i in v]
  assert {k: len(v) for k, v in seal_split.SPLIT.items()} == {'train': 160, 'dev': 39, 'test': 128}
  assert sorted(ids) == [i for i in range(328) if i != 317]  # the 327 pairs of the shared data, each once


def test_seals_split_and_the_resize_are_checked_naming_the_field(tmp_path):
  for field, value, message in (('resize', 'nearest', r"data.resize: unknown 'nearest'"),
                                ('split', 'numeric', r"data.split: unknown 'numeric'"),
                                ('split', 'seal', r"data.split='seal' is SEAL's 160 train / 40 dev images.*"
                                                  r'data.num_train=\d+ and data.num_dev=\d+')):
    config = load_config('tiny_horses')
    config.data[field] = value
    with pytest.raises(ValueError, match=message):
      tasks.get_task(config)
  config = load_config('tiny_horses')  # the fixture's few pairs are not SEAL's 327
  config.data.update({'split': 'seal', 'num_train': 160, 'num_dev': 40, 'data_dir': str(_copy_fixture(tmp_path))})
  with pytest.raises(ValueError, match=r"data.split='seal' names \d+ ids the data folder lacks"):
    tasks.get_task(config)


@pytest.mark.skipif(not (SHARED / 'weizmann_horse').is_dir(), reason=f'shared data not present at {SHARED}')
def test_bicubic_resize_reproduces_the_masks_dvn_and_seal_test_on():
  # SEAL's weizmann_horse_test.npy (Li et al.'s 32x32 masks of its 128 test images) holds 36244 horse pixels of
  # 131072; experiments/seal_horse_split.py compares the masks pixel by pixel (99.98% equal with 'bicubic').
  seal_test_horse = 36244
  counts = {r: horses.load(str(SHARED), 32, 160, 40, 0, r, 'seal')[0]['test']['y'].sum() for r in horses.RESIZE}
  assert abs(counts['bicubic'] - seal_test_horse) <= 0.0005 * 128 * 32 * 32
  assert counts['bilinear'] < 0.95 * seal_test_horse  # nearest masks lose thin parts (legs, tails)


# Crops (data.crop) -------------------------------------------------------------------------------------------------

REFERENCE = FIXTURE / 'crop0_reference.npz'  # tests/fixtures/horses/make_crop0_reference.py, run on commit 07c7e98


def _crop_config(**overrides):
  config = load_config('tiny_horses')
  config.update_from_flattened_dict({'data.crop': 12, 'data.crop_offsets': (0, 2, 4), **overrides})
  return config


def _epoch(task, epoch, seed=0):
  return list(data.train_batches(task, 3, np.random.default_rng([seed, epoch])))


def test_crop_zero_reproduces_the_code_before_crops(task):
  ref = np.load(REFERENCE)
  config = load_config('tiny_horses')
  assert config.data.crop == 0
  batches = _epoch(task, 0) + _epoch(task, 1)
  assert len(batches) == 4 and not np.array_equal(batches[0]['x'], batches[2]['x'])
  for i, batch in enumerate(batches):
    np.testing.assert_array_equal(batch['x'], ref[f'batch{i}_x'])
    np.testing.assert_array_equal(batch['y'], ref[f'batch{i}_y'])
  for name in ('feedforward', 'dvn'):  # the FCN alone, and GBI on the energy (initialised on the example batch)
    config.method = name
    method = methods.build(task, config)
    state = method.init(jax.random.fold_in(jax.random.key(config.seed), 0))
    state, _ = jax.jit(method.train_step)(state, batches[0], jax.random.key(1))
    predict = jax.jit(method.predict)
    pred = data.predict(task, lambda b, p=state.params: predict(p, b), task.splits['dev'], config.eval_batch_size)
    chex.assert_shape(pred, (3, 16, 16))
    # Tolerance: the reference was made at the tests' XLA level; IMPLICIT_JAX_TEST_FULL_OPT=1 moves the last bits.
    np.testing.assert_allclose(pred, ref[f'{name}_dev'], rtol=1e-5, atol=1e-6)


def _find(window, image):
  """The (top, left) offsets where ``window`` [c, c] sits in ``image`` [H, W], mirrored or not."""
  c = window.shape[0]
  return {(t, l, m) for t in range(image.shape[0] - c + 1) for l in range(image.shape[1] - c + 1)
          for m in (False, True) if np.array_equal(image[t:t + c, l:l + c][:, ::-1] if m else
                                                   image[t:t + c, l:l + c], window)}


def test_crop_training_batches_are_random_windows_that_change_every_step():
  task = tasks.get_task(_crop_config())
  full = task.splits['train']
  seen = {}
  for epoch in range(4):
    batches = _epoch(task, epoch)
    for a, b in zip(batches, _epoch(task, epoch)):  # the (seed, epoch) generator alone decides them: resumable
      chex.assert_trees_all_equal(a, b)
    for batch in batches:
      chex.assert_shape(batch['x'], (3, 12, 12, 3))
      chex.assert_shape(batch['y'], (3, 12, 12))
      for x, y in zip(batch['x'], batch['y']):
        # The image window's channel 0 locates it among the training images; its mask is the same window.
        (i, places), = [(i, p) for i in range(len(full['x'])) if (p := _find(x[..., 0], full['x'][i, ..., 0]))]
        (top, left, mirrored), = places
        window = full['y'][i, top:top + 12, left:left + 12]
        np.testing.assert_array_equal(y, window[:, ::-1] if mirrored else window)
        seen.setdefault(i, set()).add((top, left))
  # 4 epochs of 6 images: most images seen at more than one window, and the windows reach the margins.
  assert sum(len(v) > 1 for v in seen.values()) >= 4
  offsets = {o for v in seen.values() for o in v}
  assert {t for t, _ in offsets} >= {0, 4} or {l for _, l in offsets} >= {0, 4}
  # The networks are initialised on windows: the energy's dense layer reads 12/4 x 12/4 x 8 features, not 16/4 ...
  config = _crop_config(method='dvn')
  params = methods.build(task, config).init(jax.random.key(0))
  chex.assert_shape(params.params['phi']['params']['dense_0']['kernel'], (3 * 3 * 8, 16))


def test_average_over_crops_by_hand():
  x = np.random.default_rng(0).normal(size=(2, 8, 8, 3)).astype(np.float32)
  # An identity-like predictor: each window's mask is its image's channel 0, so the average is the image itself.
  out = segmentation.average_over_crops(lambda b: b['x'][..., 0], {'x': x}, 4, (0, 2, 4))
  chex.assert_shape(out, (2, 8, 8))
  np.testing.assert_allclose(out, x[..., 0], rtol=1e-6)
  # A predictor that answers the window's number k (0..8, in the order top, then left) everywhere in it.
  calls = []

  def numbered(b):
    calls.append(b['x'].shape)
    return np.full(b['x'].shape[:3], float(len(calls) - 1), np.float32)

  out = segmentation.average_over_crops(numbered, {'x': x}, 4, (0, 2, 4))
  assert calls == [(2, 4, 4, 3)] * 9
  # Windows: k = 3 * (top / 2) + left / 2. Pixel (0, 0): window 0 alone. Pixel (3, 3): tops and lefts 0 and 2,
  # windows 0, 1, 3, 4. Pixel (7, 2): tops 4, lefts 0 and 2, windows 6, 7. Pixel (4, 4): tops and lefts 2 and 4,
  # windows 4, 5, 7, 8.
  assert out[0, 0, 0] == 0.0
  assert out[1, 3, 3] == pytest.approx((0 + 1 + 3 + 4) / 4)
  assert out[0, 7, 2] == pytest.approx((6 + 7) / 2)
  assert out[0, 4, 4] == pytest.approx((4 + 5 + 7 + 8) / 4)
  with pytest.raises(ValueError, match='uncovered'):
    segmentation.average_over_crops(numbered, {'x': x}, 4, (0, 2))


def test_crop_predictions_are_full_masks_averaged_over_the_windows():
  task = tasks.get_task(_crop_config())
  dev = task.splits['dev']
  shapes = []

  def identity(batch):
    shapes.append(batch['x'].shape)
    return batch['x'][..., 0]

  pred = data.predict(task, identity, dev, 2)  # 3 dev images in batches of 2 (the last padded): 2 x 9 windows
  assert shapes == [(2, 12, 12, 3)] * 18
  chex.assert_shape(pred, (3, 16, 16))
  np.testing.assert_allclose(pred, dev['x'][..., 0], rtol=1e-6)
  # The metric is computed on these full masks.
  assert task.evaluator.metrics(pred, dev) == iou_scores(dev['x'][..., 0], dev['y'])


def test_crop_config_errors_name_the_field():
  for overrides, message in [({'data.crop': 10}, r'data.crop=10 must be a multiple of 4'),
                             ({'data.crop': 16}, r'data.crop=16 must be a multiple of 4 .* below data.size=16'),
                             ({'data.crop': -4}, r'data.crop must be 0 \(off\) or a crop size'),
                             ({'data.crop_offsets': (0, 2, 3, 4, 6, 8)}, r'data.crop_offsets=.* from 0 to .* = 4'),
                             ({'data.crop_offsets': (0, 4, 2)}, r'data.crop_offsets=\(0, 4, 2\) must be increasing'),
                             ({'data.crop': 4, 'data.crop_offsets': (0, 6, 12)}, r'no two more than data.crop')]:
    with pytest.raises(ValueError, match=message):
      tasks.get_task(_crop_config(**overrides))


@pytest.mark.parametrize('method, overrides', [
    ('feedforward', {}),
    pytest.param('implicit', {'implicit.primary_loss': 'cd'}, marks=pytest.mark.e2e),
    pytest.param('seal_dynamic', {'seal.energy_loss': 'regression'}, marks=pytest.mark.e2e),
    pytest.param('dvn', {}, marks=pytest.mark.e2e),
])
def test_every_segmentation_method_trains_on_crops(tmp_path, method, overrides):
  config = _crop_config(method=method, num_epochs=1, **overrides)
  result = train.train_and_evaluate(config, str(tmp_path / 'run'))
  assert result['config']['data']['crop'] == 12
  for key in ('test_mean_iou', 'test_global_iou', 'dev_mean_iou'):
    assert 0.0 <= result[key] <= 1.0, key
  assert all(np.isfinite(v) for means in result['train_log'].values() for v in means.values() if not np.isnan(v))


@pytest.mark.skipif(not (SHARED / 'weizmann_horse').is_dir(), reason=f'shared data not present at {SHARED}')
def test_seal_crops_on_the_real_horses():
  config = load_config('horses')
  config.data.data_dir = str(SHARED)
  config.data.crop = 24
  task = tasks.get_task(config)
  batch = next(data.train_batches(task, config.batch_size, np.random.default_rng([0, 0])))
  chex.assert_shape(batch['x'], (8, 24, 24, 3))
  chex.assert_shape(batch['y'], (8, 24, 24))
  windows = []

  def identity(b):
    windows.append(b['x'].shape)
    return b['x'][..., 0]

  dev = task.splits['dev']
  pred = data.predict(task, identity, dev, config.eval_batch_size)
  assert windows == [(32, 24, 24, 3)] * 36  # SEAL's 36 windows of the one (padded) batch of 28 dev images
  chex.assert_shape(pred, (28, 32, 32))
  np.testing.assert_allclose(pred, dev['x'][..., 0], rtol=1e-6)


@pytest.mark.e2e
def test_a_run_on_crops_stopped_mid_epoch_resumes_to_the_uninterrupted_one(tmp_path, monkeypatch):
  # 2 steps per epoch, 2 epochs, a checkpoint after every step. The run stops when it asks for step 4's batch (the
  # second of epoch 2), one step after a mid-epoch checkpoint: resumed, it must crop step 4's images as before.
  config = _crop_config(method='feedforward', checkpoint_every=1)
  train.train_and_evaluate(config, str(tmp_path / 'clean'))
  original = data.train_batches

  def stopping(*args, **kwargs):
    for batch in original(*args, **kwargs):
      if stopping.served == 3:
        raise KeyboardInterrupt
      stopping.served += 1
      yield batch

  stopping.served = 0
  monkeypatch.setattr(data, 'train_batches', stopping)
  with pytest.raises(KeyboardInterrupt):
    train.train_and_evaluate(config, str(tmp_path / 'stopped'))
  monkeypatch.setattr(data, 'train_batches', original)
  assert not (tmp_path / 'stopped' / 'metrics.json').exists()
  ckpt = checkpoints.Checkpointer(str(tmp_path / 'stopped'))
  assert ckpt.latest_step() == 3
  ckpt.close()
  resumed = train.train_and_evaluate(config, str(tmp_path / 'stopped'))
  clean = checkpoints.read_json(str(tmp_path / 'clean' / 'metrics.json'))
  assert resumed['steps'] == 4
  assert {k: v for k, v in resumed.items() if k != 'train_seconds'} == {
      k: v for k, v in clean.items() if k != 'train_seconds'}


def test_the_split_script_answers_bad_input_in_one_line(tmp_path, monkeypatch):
  from experiments import seal_horse_split  # pylint: disable=import-outside-toplevel
  (tmp_path / 'weizmann_horse_train.npy').write_text('not numpy')
  for folder, message in ((tmp_path / 'absent', 'FileNotFoundError'), (tmp_path, 'UnpicklingError|ValueError')):
    monkeypatch.setattr('sys.argv', ['seal_horse_split.py', f'--seal_data={folder}', f'--data_dir={FIXTURE.parent}'])
    with pytest.raises(SystemExit, match=rf"error: --seal_data: cannot read .*weizmann_horse_train.npy as SEAL's "
                                         rf'horses \(({message})'):
      seal_horse_split.main()
