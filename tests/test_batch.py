"""The batch contract and the random keys of a run (implicit_jax/batch.py): the keys training adds are the ones it
documents and reserves, every JAX key derivation of the package goes through it, and the derivations are the ones
runs made before they moved there (checkpoints of those runs resume with the same randomness)."""

import re

import jax
import numpy as np
import pytest

from implicit_jax import batch as batch_lib
from implicit_jax.spaces.binary import Binary
from implicit_jax.tasks import Evaluator, Task
from tests.conftest import ROOT

PACKAGE = ROOT / 'implicit_jax'
# JAX key derivations allowed outside batch.py: a network splitting the one key it is given between its own
# dropout layers, and an abstract key whose value is never used (eval_shape of init, for the parameters' shapes).
# implicit_jax/testing.py (the float64 reference problems of the tests and experiments/gradient_checks.py) draws its
# problems' data from fixed keys: no run's key is derived there, so it is not scanned.
ALLOWED = {
    ('tasks/tagging/models.py', 'keys = (None, None) if key is None else tuple(jax.random.split(key))'),
    ('engine/checkpoints.py', 'abstract = jax.eval_shape(method.init, jax.random.key(0)).params'),
    ('methods/spen.py', 'local = jax.eval_shape(lambda b: energy.init(jax.random.key(0), b, None, local=True), '
                        'batch)  # shapes only'),
}
DERIVATION = re.compile(r'jax\.random\.(split|fold_in|key|PRNGKey|key_data|wrap_key_data)\b')


def test_every_key_derivation_of_the_package_is_batch_py():
  found = set()
  for path in PACKAGE.rglob('*.py'):
    if path.name in ('batch.py', 'testing.py') and path.parent == PACKAGE:
      continue
    for line in path.read_text().splitlines():
      if DERIVATION.search(line):
        found.add((str(path.relative_to(PACKAGE)), line.strip()))
  assert found <= ALLOWED, f'derive keys with implicit_jax.batch instead: {sorted(found - ALLOWED)}'


def test_the_keys_methods_add_to_a_batch_are_documented_and_reserved():
  added = set()
  for path in PACKAGE.rglob('*.py'):
    added |= set(re.findall(r'dict\(batch, *(\w+)=', path.read_text()))
    added |= set(re.findall(r'dict\(batch, *\w+=[^)]*?, *(\w+)=', path.read_text()))
  assert added == {'noise', 'dropout', 'anchor', 'step_key', 'energy_dropout'}, added
  assert added == set(batch_lib.RESERVED)
  for key in added:
    assert f'``{key}``' in batch_lib.__doc__, key


def test_the_derivations_are_the_ones_runs_made_before():
  """Pinned to the expressions engine/train.py, methods.with_energy_key and the methods wrote inline before
  batch.py: a changed tag or order would silently change every run's randomness and break resumed runs."""
  data = lambda k: np.asarray(jax.random.key_data(k))
  seed, step = 7, 12
  root = jax.random.key(seed)
  np.testing.assert_array_equal(data(batch_lib.init_key(seed)), data(jax.random.fold_in(root, 0)))
  steps = batch_lib.steps_key(seed)
  np.testing.assert_array_equal(data(steps), data(jax.random.fold_in(root, 1)))
  rng = batch_lib.step_key(steps, step)
  np.testing.assert_array_equal(data(rng), data(jax.random.fold_in(jax.random.fold_in(root, 1), step)))
  np.testing.assert_array_equal(np.asarray(batch_lib.energy_dropout_key(rng)), data(jax.random.fold_in(rng, 1)))
  np.testing.assert_array_equal(data(batch_lib.split(rng)), data(jax.random.split(rng)))
  np.testing.assert_array_equal(data(batch_lib.from_data(batch_lib.as_data(rng))), data(rng))
  assert not np.array_equal(data(batch_lib.init_key(seed)), data(batch_lib.init_key(seed + 1)))


@pytest.mark.parametrize('key', batch_lib.RESERVED)
def test_a_task_may_not_use_a_name_training_adds(key):
  split = {'x': np.zeros((4, 3), np.float32), 'y': np.zeros((4, 2), np.float32)}
  Task('ok', {s: dict(split) for s in ('train', 'dev', 'test')}, Binary((2,)), None, None, Evaluator())
  with pytest.raises(ValueError, match=rf"task clash: the train split uses \['{key}'\], names training adds to a "
                                       r"batch \(implicit_jax/batch.py\); rename them"):
    Task('clash', {s: dict(split, **{key: np.zeros(4)}) for s in ('train', 'dev', 'test')}, Binary((2,)), None,
         None, Evaluator())
