"""The learned-energy analysis: the averaged y-Hessian against closed form and finite differences, co-occurrence on a
hand-worked example, off-diagonal correlations, and the plots writing real png files."""

import functools
import itertools

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import special

from implicit_jax.engine import plots
from implicit_jax.tasks.mlc import analysis
from implicit_jax.tasks.mlc.models import MLCEnergy

PNG_MAGIC = b'\x89PNG\r\n\x1a\n'


@functools.lru_cache(maxsize=None)
def small_energy(num_labels=5, num_features=3, num_examples=7, seed=0):
  """A random float64 MLCEnergy with relaxed labels strictly inside (0, 1), where softplus'' varies per example.

  Cached: building it (a jitted init) is the slow part of these tests; callers must not modify what it returns.
  """
  energy = MLCEnergy(num_labels, feature_hidden=(4,), feature_dim=4, global_hidden=6)
  rng = np.random.default_rng(seed)
  x = rng.normal(size=(num_examples, num_features))
  y = rng.uniform(0.05, 0.95, size=(num_examples, num_labels))
  phi = jax.tree.map(lambda p: np.asarray(p, np.float64), jax.jit(energy.init)(jax.random.PRNGKey(seed), {'x': x}, y))
  # Scale the interaction weights up so the global term's curvature is far from round-off.
  phi['params']['M']['kernel'] = 2.0 * phi['params']['M']['kernel']
  phi['params']['v']['kernel'] = 3.0 * phi['params']['v']['kernel']
  return energy, phi, x, y


def analytic_global_hessian(phi, y):
  """mean_n M^T diag(v * softplus''(M y_n)) M in numpy; with flax's kernels M y = y @ K_M (K_M [L, H]), v = K_v [H, 1].

  Only the global term: the local term y^T W b(x) is linear in y, so a correct Hessian must not see it.
  """
  k_m, v = np.asarray(phi['params']['M']['kernel']), np.asarray(phi['params']['v']['kernel'])[:, 0]
  s = special.expit(np.asarray(y) @ k_m)                        # [N, H]; softplus' = sigmoid
  curvature = v * s * (1 - s)                                   # [N, H]; softplus'' = sigmoid (1 - sigmoid)
  return np.einsum('lh,nh,kh->lk', k_m, curvature, k_m) / y.shape[0]


def finite_difference_hessian(energy, phi, x, y, h=1e-4):
  """Mean over examples of the 4-point central second difference of the full energy; no autodiff involved.

  All 4 L^2 perturbed label sets go through one call (the energy accepts leading axes on y).
  """
  n, size = y.shape
  e = jnp.eye(size) * h
  shifts = {(si, sj): e[:, None, :] * si + e[None, :, :] * sj for si, sj in itertools.product((1, -1), repeat=2)}
  stacked = jnp.stack([shifts[k] for k in ((1, 1), (1, -1), (-1, 1), (-1, -1))])        # [4, L, L, L]
  energies = jax.jit(energy.apply)(phi, {'x': x}, y + stacked[..., None, :]).sum(-1)                    # [4, L, L]
  return np.asarray(energies[0] - energies[1] - energies[2] + energies[3]) / (4 * h * h * n)


@pytest.mark.usefixtures('x64')
def test_energy_hessian_matches_the_global_term_closed_form_and_finite_differences():
  energy, phi, x, y = small_energy()
  ours = analysis.energy_hessian_y(energy.apply, phi, x, y, batch_size=3)   # 7 = 3 + 3 + 1 padded
  assert ours.shape == (5, 5) and ours.dtype == np.float64
  analytic = analytic_global_hessian(phi, y)
  assert np.abs(analytic).max() > 1e-2                                         # the check is not vacuous
  chex.assert_trees_all_close(ours, analytic, rtol=1e-10, atol=1e-12)
  chex.assert_trees_all_close(ours, finite_difference_hessian(energy, phi, x, y), rtol=1e-6, atol=1e-7)
  chex.assert_trees_all_close(ours, ours.T, atol=1e-14)
  # Batching (and the masked padding of the last batch) changes nothing.
  chex.assert_trees_all_close(analysis.energy_hessian_y(energy.apply, phi, x, y, batch_size=100), ours, atol=1e-13)


@pytest.mark.usefixtures('x64')
def test_energy_hessian_is_taken_at_each_examples_own_y():
  energy, phi, x, y = small_energy()
  ours = analysis.energy_hessian_y(energy.apply, phi, x, y)
  # Averaging y first would give a different matrix (softplus'' is not linear): each example must use its own y_n.
  at_mean_y = analytic_global_hessian(phi, np.broadcast_to(y.mean(0), y.shape))
  assert np.abs(ours - at_mean_y).max() > 1e-6
  gold = (y > 0.5).astype(y.dtype)
  chex.assert_trees_all_close(analysis.energy_hessian_y(energy.apply, phi, x, gold), analytic_global_hessian(phi, gold),
                              rtol=1e-10, atol=1e-12)


def test_energy_hessian_works_for_any_energy_and_float32():
  """A quadratic energy 0.5 y^T A y + y^T B x with a known constant Hessian (sym(A)), through the generic path."""
  a = np.array([[2.0, -1.0, 0.5], [0.0, 1.0, 0.0], [1.5, 0.0, -3.0]], np.float32)
  b = np.ones((3, 2), np.float32)
  energy_apply = lambda p, batch, y: (0.5 * jnp.einsum('bi,ij,bj->b', y, p['a'], y)
                                     + jnp.einsum('bi,ij,bj->b', y, p['b'], batch['x']))
  x = np.random.default_rng(0).normal(size=(10, 2)).astype(np.float32)
  y = np.random.default_rng(1).uniform(size=(10, 3)).astype(np.float32)
  out = analysis.energy_hessian_y(energy_apply, {'a': a, 'b': b}, x, y, batch_size=4)
  np.testing.assert_allclose(out, 0.5 * (a + a.T), rtol=1e-6, atol=1e-6)


def test_energy_hessian_rejects_mismatched_shapes():
  with pytest.raises(ValueError, match='same N'):
    analysis.energy_hessian_y(lambda p, batch, y: y.sum(-1), None, np.zeros((3, 2)), np.zeros((4, 2)))


# Hand-worked example: 4 examples, 3 labels.
Y = np.array([[1, 1, 0], [1, 1, 0], [1, 0, 1], [0, 0, 1]], np.float32)
# counts: C00 = 3, C11 = 2, C22 = 2, C01 = 2, C02 = 1, C12 = 0; p = (3/4, 1/2, 1/2).


def test_cooccurrence_counts_and_frequency():
  expected = np.array([[3, 2, 1], [2, 2, 0], [1, 0, 2]], np.float64)
  np.testing.assert_array_equal(analysis.label_cooccurrence(Y, 'count', diagonal=None), expected)
  np.testing.assert_array_equal(analysis.label_cooccurrence(Y, 'frequency', diagonal=None), expected / 4)
  removed = analysis.label_cooccurrence(Y, 'count')
  assert np.all(np.isnan(np.diag(removed)))
  np.testing.assert_array_equal(analysis.label_cooccurrence(Y, 'count', diagonal=0.0),
                                expected - np.diag(np.diag(expected)))


def test_cooccurrence_correlation_by_hand():
  # phi_01 = (2/4 - 3/4 * 1/2) / sqrt(3/16 * 1/4) = 1/sqrt(3); phi_02 = (1/4 - 3/8) / (sqrt(3)/8) = -1/sqrt(3);
  # phi_12 = (0 - 1/4) / (1/4) = -1.
  r = 1 / np.sqrt(3)
  expected = np.array([[1, r, -r], [r, 1, -1], [-r, -1, 1]])
  np.testing.assert_allclose(analysis.label_cooccurrence(Y, diagonal=None), expected, atol=1e-12)
  np.testing.assert_allclose(analysis.label_cooccurrence(Y, diagonal=None), np.corrcoef(Y.T), atol=1e-12)
  # A label that never occurs has no defined correlation: NaN, not a spurious 0.
  with_empty = analysis.label_cooccurrence(np.concatenate([Y, np.zeros((4, 1), np.float32)], 1))
  assert np.all(np.isnan(with_empty[3])) and np.isfinite(with_empty[0, 1])


def test_cooccurrence_npmi_by_hand():
  # npmi_01 = log((1/2) / (3/8)) / -log(1/2); npmi_02 = log((1/4) / (3/8)) / -log(1/4); never together: -1.
  out = analysis.label_cooccurrence(Y, 'npmi')
  np.testing.assert_allclose(out[0, 1], np.log(4 / 3) / np.log(2), atol=1e-12)
  np.testing.assert_allclose(out[0, 2], np.log(2 / 3) / np.log(4), atol=1e-12)
  assert out[1, 2] == -1.0 and out[2, 1] == -1.0


def test_cooccurrence_rejects_relaxed_labels_and_unknown_normalisation():
  with pytest.raises(ValueError, match='0/1'):
    analysis.label_cooccurrence(Y * 0.5)
  with pytest.raises(ValueError, match='normalise'):
    analysis.label_cooccurrence(Y, 'pmi2')


def random_symmetric(size=6, seed=0):
  a = np.random.default_rng(seed).normal(size=(size, size))
  return a + a.T


def test_correlation_with_itself_its_negative_and_a_changed_diagonal():
  a = random_symmetric()
  same = analysis.offdiagonal_correlation(a, a)
  assert same['pearson'] == pytest.approx(1.0) and same['spearman'] == pytest.approx(1.0)
  assert same['n'] == 15                                  # symmetric: each of the 6*5/2 pairs once
  neg = analysis.offdiagonal_correlation(a, -a)
  assert neg['pearson'] == pytest.approx(-1.0) and neg['spearman'] == pytest.approx(-1.0)
  b = a + np.diag(np.random.default_rng(1).normal(size=6) * 100)
  assert analysis.offdiagonal_correlation(a, b)['pearson'] == pytest.approx(1.0)
  with_nan_diagonal = a.copy()
  np.fill_diagonal(with_nan_diagonal, np.nan)
  assert analysis.offdiagonal_correlation(with_nan_diagonal, a)['pearson'] == pytest.approx(1.0)


def test_correlation_spearman_vs_pearson_nonsymmetric_and_nan_entries():
  a = random_symmetric()
  monotone = analysis.offdiagonal_correlation(a, np.exp(a))
  assert monotone['spearman'] == pytest.approx(1.0) and monotone['pearson'] < 0.99
  c = np.random.default_rng(2).normal(size=(6, 6))      # not symmetric: all 30 off-diagonal entries
  assert analysis.offdiagonal_correlation(c, c)['n'] == 30
  unrelated = analysis.offdiagonal_correlation(random_symmetric(40, 3), random_symmetric(40, 4))
  assert abs(unrelated['pearson']) < 0.2
  d = a.copy()
  d[0, 1] = d[1, 0] = np.nan
  assert analysis.offdiagonal_correlation(a, d)['n'] == 14


def test_plots_write_png(tmp_path):
  pytest.importorskip('matplotlib', reason='matplotlib is an optional dependency, needed only by the plots')
  a = random_symmetric(8)
  path = tmp_path / 'sub' / 'hessian.png'
  corr = analysis.plot_hessian_vs_cooccurrence(a, -a, str(path), title='test', order=np.arange(8)[::-1])
  assert corr['pearson'] == pytest.approx(-1.0)
  data = path.read_bytes()
  assert data.startswith(PNG_MAGIC) and len(data) > 1000
  metrics = {'history': [{'step': 10 * e, 'epoch': e, 'dev_f1': 0.1 * e, 'dev_f1_tuned': 0.12 * e,
                          'dev_threshold': 0.4} for e in range(1, 4)],
             'train_log': {'5': {'loss_aux': 1.0, 'loss_prim': 2.0, 'residual': 1e-1},
                           10: {'loss_aux': 0.5, 'loss_prim': 1.0, 'residual': 1e-5}}}
  curves = tmp_path / 'curves.png'
  plots.plot_training_curves(metrics, str(curves))
  data = curves.read_bytes()
  assert data.startswith(PNG_MAGIC) and len(data) > 1000
  with pytest.raises(ValueError, match='neither'):
    plots.plot_training_curves({'history': [], 'train_log': {}}, str(tmp_path / 'empty.png'))
