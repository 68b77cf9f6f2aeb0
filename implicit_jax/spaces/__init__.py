"""Output spaces: everything the methods need to know about the relaxed output y, and nothing about a task.

A task's output space says how a relaxed output is made from logits, what the local (cross-entropy) loss and the
log-probability of an output under the inference network are, how differentiable negatives are sampled, which
costs and task scores exist, how gradient-based inference (GBI) starts and steps, and how a relaxed output is
decoded. Methods call only this interface, so the same implicit step, SPEN, InfNet or SEAL code trains a
multi-label classifier, a tagger or a segmenter.

Conventions shared by every space (``losses.py`` has the sign conventions):

* ``batch['y']`` is the gold output in the space's coordinates (``gold`` maps a split's stored labels to them);
* relaxed outputs have shape ``shape(batch)``; negatives stack K of them in front, ``[K, *shape]``;
* ``mask`` (``batch.get('mask')``, or None) marks the real positions of padded outputs; every reduction over
  an example's output runs over the real positions only, and returns one value per example (leading axes kept);
* costs ``Delta(y_bar, y) >= 0`` (zero at the gold output) and scores ``s(y_bar, y)`` in [0, 1] (one at it);
* GBI rules are ``'projected'`` (Euclidean projection onto the feasible set) and ``'mirror'`` (entropic mirror
  descent), both for any space; ``inits`` lists the starting points a space offers, ``'given'`` among them.

``binary.Binary``: independent Bernoulli units, y in [0, 1]^event_shape (labels, pixels).
``categorical.Categorical``: one distribution over C classes per position, y in the product of simplices, with a
padding mask over positions (tags of a sentence).
``categorical.Multiclass``: one distribution over C classes per example, y in one simplex, no positions and no mask
(multi-class classification).

Who needs what: every method needs ``shape`` and ``gold`` (parameter init, the engine's batches); the rest is needed by
the methods named at each member below, so a space for a new kind of output may leave out what its methods never
call (each raises NotImplementedError until defined). ``inference.py`` (GBI) is what SPEN, DVN, NCE-GBI, R-SPEN,
SEAL-static's margin and regression losses and the implicit method's refinement predict with. The engine checks
each split's stored labels with ``label_error`` before training (by default, ``gold``'s shape against ``shape``).
"""

from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np

SAMPLERS = ('concrete', 'straight_through', 'gaussian')
RULES = ('projected', 'mirror')


class OutputSpace:
  """The interface; ``binary.Binary``, ``categorical.Categorical`` and ``categorical.Multiclass`` implement it.

  Subclasses define ``name``, ``units`` (size of y's last axis), ``inits``, ``costs`` and ``scores``
  (name -> ``fn(y_bar, y, mask) -> [...]``) and the methods below that raise NotImplementedError.
  """

  name: str = ''
  units: int = 0
  inits: tuple[str, ...] = ('given',)
  costs: dict[str, Callable] = {}
  scores: dict[str, Callable] = {}

  # -------------------------------------------------------------------------------------------- shapes and data

  def shape(self, batch: dict) -> tuple[int, ...]:
    """The shape of one relaxed output batch for the inputs ``batch``. Every method (parameter init, GBI)."""
    raise NotImplementedError

  def gold(self, y):
    """The split's stored labels (numpy) in the space's coordinates, as the training batches carry them. The
    engine (``engine/data.py``), for every method."""
    raise NotImplementedError

  def label_error(self, arrays: dict) -> str | None:
    """What is wrong with a split's stored labels ``arrays['y']`` for this space, or None: the engine's check of a
    task's splits before training (``engine/checks.py``), which names the task and split before it. By default,
    whether ``gold`` of the first example has ``shape``'s shape; the built-in spaces also check the values."""
    first = {k: np.asarray(v)[:1] for k, v in arrays.items()}
    got, want = np.shape(self.gold(first['y'])), tuple(self.shape(first))
    if got != want:
      return f"y: gold() of its first example has shape {got}; the {self.name} output space wants {want}"
    return None

  # ------------------------------------------------------------------------------------- the inference network

  def relax(self, logits: jax.Array) -> jax.Array:
    """The relaxed output of an inference network's logits. Every method with an inference network."""
    raise NotImplementedError

  def logits_of(self, y: jax.Array) -> jax.Array:
    """Logits whose relaxation is ``y`` (up to clipping at 1e-6 from the edges): to sample around a relaxed
    output, as R-SPEN does around its GBI output. R-SPEN only."""
    raise NotImplementedError

  def local_loss(self, logits: jax.Array, y: jax.Array, mask=None) -> jax.Array:
    """Cross-entropy of the gold (or any relaxed) y under the logits: summed over an example's output units,
    averaged over examples (MBCE for Bernoulli units, token CE summed over a sentence for tags). Feedforward,
    implicit (L_aux), InfNet, SEAL."""
    return -jnp.mean(self.log_prob(logits, y, mask))

  def log_prob(self, logits: jax.Array, y: jax.Array, mask=None) -> jax.Array:
    """``log p_logits(y)`` per example (leading axes of y kept); relaxed y allowed. ``local_loss`` by default;
    NCE losses (implicit ``nce``, SEAL ``nce``, NCE-GBI)."""
    raise NotImplementedError

  # ------------------------------------------------------------------------------------------------ negatives

  def noise(self, rng: jax.Array, sampler: str, num_samples: int, shape: tuple[int, ...]) -> jax.Array:
    """Noise for ``num_samples`` negatives of ``shape``: uniform in (0, 1) for the first two samplers, normal
    for 'gaussian'. Drawn first and passed as data, so that a sample is a differentiable function of logits.
    Implicit, SEAL, NCE-GBI, R-SPEN (with ``samples`` / ``negatives``)."""
    check_sampler(sampler)
    if sampler == 'gaussian':
      return jax.random.normal(rng, (num_samples, *shape))
    return jax.random.uniform(rng, (num_samples, *shape), minval=1e-6, maxval=1.0 - 1e-6)

  def samples(self, logits: jax.Array, noise: jax.Array, sampler: str, temperature: float,
              scale: float) -> jax.Array:
    """``[K, *shape]`` reparameterised samples: 'concrete' (relaxed), 'straight_through' (a hard sample forward,
    the probabilities' gradient backward), 'gaussian' (the relaxed output plus ``scale`` times the noise, put
    back into the feasible set)."""
    raise NotImplementedError

  def negatives(self, logits: jax.Array, noise: jax.Array, sampler: str, temperature: float, scale: float,
                include_mean: bool) -> jax.Array:
    """``[K (+1), *shape]`` negatives carrying gradient to the logits; with ``include_mean`` the relaxed output
    itself comes first."""
    check_sampler(sampler)
    samples = self.samples(logits, noise, sampler, temperature, scale)
    return jnp.concatenate([self.relax(logits)[None], samples], axis=0) if include_mean else samples

  # ----------------------------------------------------------------------------------------- costs and scores

  def cost(self, name: str, field: str = 'cost') -> Callable:
    """``Delta(y_bar, y, mask) -> [...]`` by name; an unknown name is an error naming ``field``. SPEN, InfNet,
    implicit (ssvm, cd), SEAL (margin)."""
    if name not in self.costs:
      raise ValueError(f'{field}: unknown cost {name!r} for the {self.name} output space; choose one of '
                       f'{sorted(self.costs)}')
    return self.costs[name]

  def score(self, name: str, field: str = 'score') -> Callable:
    """``s(y_bar, y, mask) -> [...]`` in [0, 1] by name (``Task.score`` picks one). DVN, SEAL, R-SPEN, implicit
    (dvn)."""
    if name not in self.scores:
      raise ValueError(f'{field}: unknown score {name!r} for the {self.name} output space; choose one of '
                       f'{sorted(self.scores)}')
    return self.scores[name]

  # ----------------------------------------------------------------------------- gradient-based inference

  def initial(self, init: str, shape: tuple[int, ...], given: jax.Array | None = None,
              field: str = 'gbi.init') -> jax.Array:
    """GBI's starting point: one of ``inits``; 'given' returns ``given`` (e.g. an inference network's output).
    GBI (``initial``, ``gbi_start``, ``gbi_step``): the methods that predict or train with ``inference.py``."""
    self.check_init(init, field)
    if init == 'given':
      if given is None:
        raise ValueError(f"{field}='given' needs the starting y (e.g. the inference network's output)")
      return given
    return self._initial(init, shape)

  def check_init(self, init: str, field: str = 'gbi.init') -> None:
    if init not in self.inits:
      raise ValueError(f'{field}: unknown initialisation {init!r} for the {self.name} output space; choose one '
                       f'of {self.inits}')

  def _initial(self, init: str, shape: tuple[int, ...]) -> jax.Array:
    raise NotImplementedError

  def gbi_start(self, y: jax.Array, rule: str) -> jax.Array:
    """``y`` moved into the feasible set (strictly inside it for 'mirror', whose map is infinite on the faces)."""
    raise NotImplementedError

  def gbi_step(self, y: jax.Array, grad: jax.Array, step_size: float, rule: str) -> jax.Array:
    """One GBI step from ``y`` against the energy's gradient ``grad``."""
    raise NotImplementedError

  # ------------------------------------------------------------------------------------------------- decoding

  def decode(self, y, threshold: float = 0.5):
    """A discrete output from a relaxed one (numpy in, numpy out). ``python -m implicit_jax.predict`` and the
    tasks' evaluators; no training method."""
    raise NotImplementedError


def outside(bad: np.ndarray, y: np.ndarray) -> str:
  """The distinct values of ``y`` where ``bad`` (a few of them) and the index of the first: for label errors."""
  values = np.unique(y[bad]).tolist()
  shown = ', '.join(f'{v:g}' if isinstance(v, float) else str(v) for v in values[:5])
  more = f', ... ({len(values)} distinct)' if len(values) > 5 else ''
  first = tuple(int(i) for i in np.argwhere(bad)[0])
  return f'{shown}{more} (first at index {first})'


def labeled(arrays: dict, shape: tuple[int, ...]) -> np.ndarray:
  """Where the gold is meant to hold labels: every entry of a row but those of unlabeled rows (``labeled`` 0,
  ``tasks.Task.reward``), broadcast to ``shape``, the labels' shape."""
  rows = arrays.get('labeled')
  if rows is None:
    return np.ones(shape, bool)
  rows = np.asarray(rows) != 0
  return np.broadcast_to(rows.reshape(rows.shape + (1,) * (len(shape) - 1)), shape)


def check_sampler(sampler: str) -> None:
  if sampler not in SAMPLERS:
    raise ValueError(f'negatives.sampler: unknown sampler {sampler!r}; choose one of {SAMPLERS}')


def check_rule(rule: str, field: str = 'gbi.rule') -> None:
  if rule not in RULES:
    raise ValueError(f'{field}: unknown update rule {rule!r}; choose one of {RULES}')
