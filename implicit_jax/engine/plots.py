"""Plots of a run: its training curves. matplotlib is an optional dependency (``pip install 'implicit_jax[plot]'``):
without it this module still imports, and plotting names what to install."""

import math
import os

import numpy as np

try:
  from matplotlib.figure import Figure
except ImportError:  # optional: import_figure() says what to install
  Figure = None


def ensure_dir(path: str) -> None:
  directory = os.path.dirname(os.path.abspath(path))
  os.makedirs(directory, exist_ok=True)


def import_figure():
  if Figure is None:
    raise ImportError('plotting needs matplotlib: pip install matplotlib')
  return Figure


def plot_training_curves(metrics: dict, path: str, title: str | None = None, skip=()) -> None:
  """Saves a run's curves to ``path`` (png): its dev metrics per epoch (every ``dev_*`` key of the history but
  those in ``skip``, e.g. a calibration setting), then one panel per logged training metric (``train_log``:
  {step: {name: mean}}, steps as str or int) against the step.

  One panel per training metric because they live on unrelated scales (losses, solver residual, gradient norms);
  a panel switches to a log axis when its values are positive and span more than two decades.
  """
  figure_cls = import_figure()
  history = metrics.get('history') or []
  train_log = {int(step): values for step, values in (metrics.get('train_log') or {}).items()}
  names = sorted({name for values in train_log.values() for name in values})

  def constant(name):  # e.g. the Neumann step alpha under a CG solver: a flat line says nothing
    values = [v[name] for v in train_log.values() if v.get(name) is not None and np.isfinite(v[name])]
    return len(values) > 1 and np.ptp(values) <= 1e-6 * max(1.0, np.max(np.abs(values)))

  names = [n for n in names if not constant(n)]
  panels = (1 if history else 0) + len(names)
  if not panels:
    raise ValueError('plot_training_curves: metrics hold neither a history nor a train_log')
  cols = min(3, panels)
  rows = math.ceil(panels / cols)
  fig = figure_cls(figsize=(4.5 * cols, 3.3 * rows), layout='constrained')
  axes = list(fig.subplots(rows, cols, squeeze=False).ravel())
  if history:
    ax = axes.pop(0)
    epochs = [h.get('epoch', i + 1) for i, h in enumerate(history)]
    keys = [k for k in history[0] if k.startswith('dev_') and k not in skip]
    for key in keys:
      values = [np.nan if h.get(key) is None else float(h[key]) for h in history]
      ax.plot(epochs, values, marker='o', markersize=3, label=key[4:].replace('_', ' '))
    ax.set_xlabel('epoch')
    ax.set_title('dev metrics')
    ax.legend()
  steps = sorted(train_log)
  for name in names:
    ax = axes.pop(0)
    values = np.array([np.nan if train_log[s].get(name) is None else float(train_log[s][name]) for s in steps])
    ax.plot(steps, values)
    finite = values[np.isfinite(values)]
    if finite.size and finite.min() > 0 and finite.max() / finite.min() > 100:
      ax.set_yscale('log')
    ax.set_xlabel('step')
    ax.set_title(name)
  for ax in axes:
    ax.set_visible(False)
  if title:
    fig.suptitle(title)
  ensure_dir(path)
  fig.savefig(path, dpi=120)
