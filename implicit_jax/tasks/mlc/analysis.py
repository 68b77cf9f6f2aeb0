r"""Analysis of a learned energy (supplement, section 3.1): its label-interaction Hessian against label co-occurrence.

The supplement plots the Hessian of the learned energy with respect to y, averaged over the instances, next to
the label co-occurrence matrix, diagonals removed, and reports "a general correspondence". This module holds the
pure functions behind that figure; ``experiments/energy_analysis.py`` applies them to a trained run.

Sign convention. ``models.py`` fixes LOWER energy = better y. For two labels that co-occur, raising y_i should
make raising y_j more attractive, i.e. make dE/dy_j more negative: d^2E / dy_i dy_j < 0. The supplement phrases the
expectation as "positive for co-occurring pairs", which holds for the Hessian of the *score* -E. We therefore compare
co-occurrence with ``-energy_hessian_y(...)`` (the score Hessian) so that agreement shows as a positive correlation;
``energy_hessian_y`` itself returns d^2E/dy^2 with no sign flip, as its name says.

Co-occurrence normalisation. Raw counts or joint frequencies are never negative and are dominated by the frequent
labels, so they cannot show the "co-occur less than chance -> negative" half of the hypothesis. The default is the
phi coefficient (Pearson correlation of the 0/1 label columns): signed, in [-1, 1], zero for independent labels,
which is what a signed interaction term can be compared with. ``'npmi'`` (normalised PMI) is the alternative with
the same properties; ``'count'`` and ``'frequency'`` are kept for plots that want the raw matrix.

Diagonals carry no interaction information (for the energy they are the self-curvature, for co-occurrence the
label frequency), so they are excluded from every correlation and blanked (NaN) in the plots.

matplotlib is imported inside the plotting functions only: the core package does not depend on it.
"""

from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np
from scipy import stats

from implicit_jax.engine.plots import ensure_dir, import_figure

NORMALISATIONS = ('correlation', 'npmi', 'frequency', 'count')


def energy_hessian_y(energy_apply: Callable, phi, x, y, batch_size: int = 128) -> np.ndarray:
  """Mean over examples of d^2E(x_n, y) / dy^2 at y = y_n: an [L, L] float64 numpy array.

  ``energy_apply(phi, batch, y [B, L]) -> [B]`` is any energy reading ``batch['x']`` [B, D] (e.g.
  ``MLCEnergy(...).apply`` with ``phi`` the module's variables). Each example's Hessian is ``jax.hessian``
  (forward-over-reverse) of its own scalar energy, vmapped over a batch and summed inside one jitted call, so
  memory is O(batch_size * L^2) whatever N is (bibtex,
  L = 159: 13 MB of float32 per 128 examples). The last batch is padded with copies of a real row and masked out,
  so a single compilation serves all batches and the padding cannot inject NaN from an energy undefined at zero.
  Nothing about the MLC energy's structure is used (its local term is linear in y and drops out by itself).
  """
  x, y = np.asarray(x), np.asarray(y)
  if x.ndim != 2 or y.ndim != 2 or x.shape[0] != y.shape[0]:
    raise ValueError(f'energy_hessian_y: expected x [N, D] and y [N, L] with the same N, got {x.shape}, {y.shape}')
  n = x.shape[0]
  if n == 0:
    raise ValueError('energy_hessian_y: no examples')
  if batch_size < 1:
    raise ValueError(f'energy_hessian_y: batch_size must be >= 1, got {batch_size}')
  batch_size = min(batch_size, n)

  def example_hessian(p, x_n, y_n):
    return jax.hessian(lambda v: energy_apply(p, {'x': x_n[None]}, v[None])[0])(y_n)

  @jax.jit
  def batch_sum(p, xb, yb, mask):
    hessians = jax.vmap(example_hessian, in_axes=(None, 0, 0))(p, xb, yb)  # [B, L, L]
    return jnp.einsum('b,bij->ij', mask.astype(hessians.dtype), hessians)

  total = np.zeros((y.shape[1], y.shape[1]), np.float64)
  for start in range(0, n, batch_size):
    rows = np.minimum(np.arange(start, start + batch_size), n - 1)
    mask = np.arange(start, start + batch_size) < n
    total += np.asarray(batch_sum(phi, x[rows], y[rows], mask), np.float64)
  return total / n


def label_cooccurrence(y, normalise: str = 'correlation', diagonal: float | None = np.nan) -> np.ndarray:
  """[L, L] co-occurrence of the labels in a 0/1 matrix ``y`` [N, L], as float64.

  ``normalise``: ``'correlation'`` (default; phi coefficient, (p_ij - p_i p_j) / sqrt(p_i(1-p_i) p_j(1-p_j)),
  NaN for a label that never or always occurs), ``'npmi'`` (log(p_ij / (p_i p_j)) / -log p_ij, -1 for pairs never
  seen together, NaN where undefined), ``'frequency'`` (joint frequency p_ij = count / N) or ``'count'``. See the
  module docstring for why the signed ones suit the comparison. ``diagonal``: value written on the diagonal (NaN by
  default, i.e. removed; ``None`` keeps it).
  """
  y = np.asarray(y, np.float64)
  if y.ndim != 2 or y.shape[0] == 0:
    raise ValueError(f'label_cooccurrence: expected a non-empty [N, L] label matrix, got shape {y.shape}')
  if not np.all((y == 0) | (y == 1)):
    raise ValueError('label_cooccurrence: labels must be 0/1 (threshold relaxed predictions first)')
  if normalise not in NORMALISATIONS:
    raise ValueError(f'label_cooccurrence: unknown normalise {normalise!r}; choose one of {NORMALISATIONS}')
  n = y.shape[0]
  counts = y.T @ y
  joint = counts / n
  p = np.diag(joint)
  with np.errstate(divide='ignore', invalid='ignore'):
    if normalise == 'count':
      out = counts
    elif normalise == 'frequency':
      out = joint
    elif normalise == 'correlation':
      var = p * (1 - p)
      out = (joint - np.outer(p, p)) / np.sqrt(np.outer(var, var))
      out[(var[:, None] == 0) | (var[None, :] == 0)] = np.nan
    else:
      out = np.log(joint / np.outer(p, p)) / -np.log(joint)
      out[joint == 0] = -1.0
      out[(joint == 1) | (p[:, None] == 0) | (p[None, :] == 0)] = np.nan
  out = np.array(out, np.float64)
  if diagonal is not None:
    np.fill_diagonal(out, diagonal)
  return out


def _offdiagonal_values(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
  # Symmetric pairs enter once (strict upper triangle) so that n and the p-values count distinct label pairs;
  # non-symmetric matrices (e.g. a cross-Hessian) use every off-diagonal entry.
  size = a.shape[0]
  symmetric = all(np.allclose(m, m.T, rtol=1e-6, atol=1e-12, equal_nan=True) for m in (a, b))
  mask = np.triu(np.ones((size, size), bool), 1) if symmetric else ~np.eye(size, dtype=bool)
  a, b = a[mask], b[mask]
  finite = np.isfinite(a) & np.isfinite(b)
  return a[finite], b[finite]


def offdiagonal_correlation(a, b) -> dict:
  """Pearson and Spearman correlation of the off-diagonal entries of two [L, L] matrices.

  The diagonal is ignored whatever it holds, and pairs where either matrix is NaN/Inf are dropped (e.g. the
  correlation of a label that never occurs). Returns ``{'pearson', 'pearson_p', 'spearman', 'spearman_p', 'n'}``
  with ``n`` the number of entries compared.
  """
  a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
  if a.ndim != 2 or a.shape[0] != a.shape[1] or a.shape != b.shape:
    raise ValueError(f'offdiagonal_correlation: expected two square matrices of one shape, got {a.shape}, {b.shape}')
  va, vb = _offdiagonal_values(a, b)
  if va.size < 3:
    raise ValueError(f'offdiagonal_correlation: only {va.size} finite off-diagonal entries, need at least 3')
  pearson = stats.pearsonr(va, vb)
  spearman = stats.spearmanr(va, vb)
  return {'pearson': float(pearson.statistic), 'pearson_p': float(pearson.pvalue),
          'spearman': float(spearman.statistic), 'spearman_p': float(spearman.pvalue), 'n': int(va.size)}


def plot_hessian_vs_cooccurrence(hessian, cooc, path: str, title: str | None = None, order=None,
                                 hessian_label: str = 'mean Hessian of the score -E wrt y',
                                 cooc_label: str = 'label co-occurrence') -> dict:
  """Saves two heatmaps side by side (``hessian`` left, ``cooc`` right) to ``path`` (png); returns the correlation.

  Both matrices get the same label order ``order`` (a permutation, e.g. labels by decreasing frequency so the
  well-estimated pairs gather top-left; default the natural order), their diagonals blanked and a diverging map
  centred on zero, so that same-sign entries share a colour. The colour limit is the 99th percentile of the
  off-diagonal magnitudes: a few extreme pairs would otherwise wash out the rest. The title carries the
  off-diagonal Pearson and Spearman correlations (``offdiagonal_correlation``, order-independent).
  Uses matplotlib's object API (no pyplot), so it needs no display and leaves no global figure state.
  """
  figure_cls = import_figure()
  import matplotlib  # pylint: disable=import-outside-toplevel
  hessian, cooc = np.asarray(hessian, np.float64), np.asarray(cooc, np.float64)
  corr = offdiagonal_correlation(hessian, cooc)
  size = hessian.shape[0]
  order = np.arange(size) if order is None else np.asarray(order)
  if sorted(order.tolist()) != list(range(size)):
    raise ValueError(f'plot_hessian_vs_cooccurrence: order must be a permutation of range({size})')
  cmap = matplotlib.colormaps['RdBu_r'].with_extremes(bad='0.85')
  fig = figure_cls(figsize=(13, 6), layout='constrained')
  axes = fig.subplots(1, 2)
  for ax, matrix, label in zip(axes, (hessian, cooc), (hessian_label, cooc_label)):
    m = matrix[np.ix_(order, order)].copy()
    np.fill_diagonal(m, np.nan)
    finite = np.abs(m[np.isfinite(m)])
    lim = float(np.percentile(finite, 99)) if finite.size else 1.0
    lim = lim if lim > 0 else (float(finite.max()) if finite.size and finite.max() > 0 else 1.0)
    image = ax.imshow(m, cmap=cmap, vmin=-lim, vmax=lim, interpolation='nearest')
    fig.colorbar(image, ax=ax, shrink=0.85)
    ax.set_title(label)
    ordered = 'label j' + (' (by decreasing frequency)' if np.any(order != np.arange(size)) else '')
    ax.set_xlabel(ordered)
    ax.set_ylabel(ordered.replace('label j', 'label i'))
  head = f'{title}\n' if title else ''
  fig.suptitle(f'{head}off-diagonal Pearson r = {corr["pearson"]:.3f}, Spearman rho = {corr["spearman"]:.3f} '
               f'(n = {corr["n"]} pairs; diagonals removed)')
  ensure_dir(path)
  fig.savefig(path, dpi=120)
  return corr
