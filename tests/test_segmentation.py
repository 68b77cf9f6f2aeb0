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
from implicit_jax.engine import data, train
from implicit_jax.tasks import segmentation
from implicit_jax.tasks.segmentation import horses
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
  phi = energy.init(jax.random.key(0), batch, jnp.zeros((2, 16, 16)))
  ys = jax.random.uniform(jax.random.key(1), (4, 2, 16, 16))
  stacked = energy.apply(phi, batch, ys)
  chex.assert_shape(stacked, (4, 2))
  one_by_one = jnp.stack([energy.apply(phi, batch, y) for y in ys])
  np.testing.assert_allclose(stacked, one_by_one, rtol=1e-5, atol=1e-6)
  with pytest.raises(ValueError, match='mask shape'):
    energy.apply(phi, batch, jnp.zeros((2, 8, 8)))
  fcn = task.make_inference_net(heads=2)
  logits = fcn.apply(fcn.init(jax.random.key(2), batch), batch)
  assert len(logits) == 2
  chex.assert_shape(logits, ((2, 16, 16), (2, 16, 16)))


@pytest.mark.parametrize('method, overrides', [
    ('feedforward', {}),
    ('implicit', {'implicit.primary_loss': 'cd'}),
    ('implicit', {'implicit.primary_loss': 'dvn', 'implicit.unroll': True}),
    ('dvn', {}),
    ('seal_dynamic', {'seal.energy_loss': 'regression'}),
    ('seal_dynamic', {'seal.energy_loss': 'nce'}),
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
