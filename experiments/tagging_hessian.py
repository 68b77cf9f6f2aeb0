r"""Supplement, POS analysis: the learned energy's cross-Hessian between neighbouring tags against the tag bigrams.

Usage:
  python -m experiments.tagging_hessian --workdir=/tmp/reproduce_tagging/pos-implicit-cd-0 [--split=dev]
      [--at=pred|gold] [--max_sentences=0] [--out_dir=docs/tagging] [--data_dir=DIR]

The method: experiments/pages/cross_hessian.md; the mixed second derivatives by autodiff, so for any energy (Eq. 7's
must give its transition matrix W: checked). Writes <out_dir>/cross_hessian_<dataset>.png and .md.
"""

import datetime
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import scipy.stats

from implicit_jax.engine import cli, data, plots
from experiments import ROOT, energy_analysis, records, tables


def cross_hessian(energy_fn, y, mask):
  """``(sum over adjacent real pairs of d^2E / dy_t dy_{t+1} [C, C], number of pairs)`` for ``energy_fn(y [B, T,
  C]) -> [B]`` at ``y``: C tangents per position t+1 (vmapped), positions in ``lax.map``."""
  _, length, num_tags = y.shape
  grad = jax.grad(lambda v: jnp.sum(energy_fn(v)))

  def block(s):  # rows: y_{s-1, i}; columns: y_{s, j}  ->  [B, C, C]
    def hvp(j):
      tangent = jnp.zeros_like(y).at[:, s, j].set(1.0)
      return jax.jvp(grad, (y,), (tangent,))[1][:, s - 1, :]
    return jnp.moveaxis(jax.vmap(hvp)(jnp.arange(num_tags)), 0, -1)

  blocks = jax.lax.map(block, jnp.arange(1, length))                    # [T - 1, B, C, C]
  pairs = (mask[:, 1:] * mask[:, :-1]).astype(y.dtype)                  # [B, T - 1]
  return jnp.einsum('sbij,bs->ij', blocks, pairs), jnp.sum(pairs)


def bigram_log_probs(tags: np.ndarray, num_tags: int) -> np.ndarray:
  """Add-one smoothed log P(next = j | current = i) from gold tag ids [N, T] (-1 on padding)."""
  current, following = tags[:, :-1].ravel(), tags[:, 1:].ravel()
  real = (current >= 0) & (following >= 0)
  counts = np.zeros((num_tags, num_tags))
  np.add.at(counts, (current[real], following[real]), 1.0)
  return np.log((counts + 1.0) / (counts.sum(axis=1, keepdims=True) + num_tags))


def analyse(run, split: str = 'dev', at: str = 'pred', max_sentences: int = 0, batch_size: int = 64) -> dict:
  """The mean cross-Hessian [C, C], the bigram log-probabilities and their correlations (module doc)."""
  task, energy, phi = run.task, run.modules['energy'], run.params['phi']
  arrays = {k: v[:max_sentences or None] for k, v in task.splits[split].items()}

  @jax.jit
  def batch_hessian(batch, y):
    return cross_hessian(lambda v: energy.apply(phi, batch, v), y, batch['mask'])

  total, count = 0.0, 0.0
  for inputs, idx in data.prediction_batches(task, arrays, batch_size):
    rows = np.pad(idx, (0, len(inputs['mask']) - len(idx)), mode='edge')  # padded with repeats, masked out below
    y = (task.space.gold(arrays['y'][rows][:, :inputs['mask'].shape[1]]) if at == 'gold'
         else run.method.predict(run.params, inputs))
    inputs = dict(inputs, mask=np.asarray(inputs['mask']) * (np.arange(len(rows)) < len(idx))[:, None])
    h, n = batch_hessian(inputs, np.asarray(y, np.float32))
    total, count = total + np.asarray(h, np.float64), count + float(n)
  hessian = total / max(count, 1.0)
  bigrams = bigram_log_probs(np.asarray(task.splits['train']['y']), task.space.units)
  out = {'hessian': hessian, 'bigrams': bigrams, 'pairs': int(count)}
  for name in ('pearson', 'spearman'):
    out[name], out[f'{name}_p'] = map(float, getattr(scipy.stats, f'{name}r')(-hessian.ravel(), bigrams.ravel()))
  if (w := phi.get('params', {}).get('W')) is not None:  # Eq. 7's pairwise term is bilinear: its cross-Hessian is W
    out['max_abs_diff_to_W'] = float(np.max(np.abs(hessian - np.asarray(w))))
  return out


def figure(result: dict, names, title: str, path: Path) -> None:
  fig = plots.import_figure()(figsize=(14, 6.4))
  bound = np.abs(result['hessian']).max()
  panels = ((-result['hessian'], 'learned score  -d²E / dy_t dy_{t+1}', {'cmap': 'RdBu_r', 'vmin': -bound,
                                                                           'vmax': bound}),
            (result['bigrams'], 'training bigrams  log P(tag_{t+1} | tag_t)', {'cmap': 'viridis'}))
  for k, (matrix, label, style) in enumerate(panels):
    ax = fig.add_subplot(1, 2, k + 1)
    fig.colorbar(ax.imshow(matrix, **style), ax=ax, fraction=0.046)
    ax.set_title(label, fontsize=10)
    ax.set(xlabel='tag at t+1', ylabel='tag at t')
    ax.set_xticks(range(len(names)), names, fontsize=7)
    ax.set_yticks(range(len(names)), names, fontsize=7)
  fig.suptitle(title, fontsize=11)
  fig.tight_layout()
  path.parent.mkdir(parents=True, exist_ok=True)
  fig.savefig(path, dpi=110)


def main(argv=None):
  args, run = energy_analysis.parse_run(__doc__, 'training workdir of a tagging run with an energy', {
      '--split': {'default': 'dev', 'choices': data.SPLITS}, '--at': {'default': 'pred', 'choices': ('pred', 'gold')},
      '--max_sentences': {'type': int, 'default': 0, 'help': '0 = every sentence of the split'},
      '--out_dir': {'default': str(ROOT / 'docs' / 'tagging')}}, 'energy', argv)
  if run.config.task != 'tagging':
    args.error(f'--workdir: the run in {args.workdir} is of task {run.config.task!r}, not a tagging run')
  result = analyse(run, args.split, args.at, args.max_sentences)
  method = energy_analysis.system(run.config)
  dataset, out_dir = run.task.name, Path(args.out_dir)
  figure(result, run.task.names.get('y') or [str(k) for k in range(run.task.space.units)],
         f'{dataset}, {method}: Pearson r = {result["pearson"]:+.3f}, Spearman rho = {result["spearman"]:+.3f} '
         f'({args.split}, at {args.at}, {result["pairs"]} token pairs)', out_dir / f'cross_hessian_{dataset}.png')
  score = (run.metrics or {}).get(f'test_{run.task.evaluator.select}')
  check = ('' if 'max_abs_diff_to_W' not in result else 'Check: the energy is Eq. 7, whose cross-Hessian is its '
           'transition matrix W everywhere; the autodiff average differs from W by at most '
           f'{result["max_abs_diff_to_W"]:.1e}.')
  text = tables.page('cross_hessian.md', {
      **result, 'dataset': dataset, 'method': method, 'command': energy_analysis.made_by(argv),
      'date': f'{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M}', 'seed': run.config.seed,
      'score': '' if score is None else f', test {run.task.evaluator.select} {score:.4f}', 'split': args.split,
      'at': 'A_theta(x)' if args.at == 'pred' else 'the gold tags', 'entries': result['hessian'].size, 'check': check})
  records.write_page(out_dir / f'cross_hessian_{dataset}.md', text.rstrip('\n') + '\n')
  print(text)
  return result


if __name__ == '__main__':
  sys.exit(cli.guarded(main))
