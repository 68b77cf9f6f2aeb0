"""Inverse-HVP solvers: ``Solver`` (the validated settings, ``implicit.solver``), the table of built-in solvers
(``BUILT_IN``) and the one way any solver is called (``call``), built-in or plug-in alike.

A solver is ``solve(matvec, v, solver) -> (u, info)`` with ``u ~= (H + damping I)^{-1} v``: the contract of
``implicit_jax/plugins.py``, which every built-in meets (``neumann.py``: ``neumann``, ``identity``;
``krylov.py``: ``cg``, ``normal_cg``, ``minres``; ``dense.py``: ``dense``; ``gcr.py``: ``gcr``; here:
``none``). ``call`` builds the ``matvec`` (an ``implicit_jax.hessian.Operator``), checks what the solver returns
and completes its diagnostics; ``solve_inverse_hvp`` and ``implicit_gcr`` are its public faces. The implicit
gradient that uses them is ``implicit_jax/bilevel.py``.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Mapping

import jax
import jax.numpy as jnp
import ml_collections

from implicit_jax import plugin_faults, plugins
from implicit_jax.hessian import Loss, Operator, PyTree, axpy, check_tangent, norm, relative_residual
from implicit_jax.solvers import dense, gcr, krylov, neumann
from implicit_jax.solvers import reuse as reuse_lib

SOLVERS = ('neumann', 'cg', 'normal_cg', 'minres', 'gcr', 'dense', 'identity', 'none', 'unrolled')
HVP_MODES = ('exact', 'fd')


@dataclasses.dataclass(frozen=True)
class Solver:
  """Inverse-HVP solver settings. Validated on construction; errors name the offending field.

  Attributes:
    name: ``normal_cg`` (CG on the normal equations ``(H^2 + damping I) u = H v``: two HVPs per iteration, but
      the residual never exceeds ``||v||`` when H is indefinite, as the inner Hessian of a neural network
      usually is), ``minres`` (MINRES on ``H + damping I``: one HVP per iteration, symmetric indefinite H
      allowed, the residual ``||(H + damping I) u - v||`` minimised over the Krylov space and non-increasing),
      ``gcr`` (the same minimal-residual iterate over the same Krylov space, by generalised conjugate residuals
      whose every product is fused: one reverse-over-forward pass of L_aux gives ``H d`` and the cross term
      ``[d_phi d_theta L_aux]^T d`` of a direction together, so the implicit term needs neither a linearisation
      nor a separate mixed VJP: one pass in all for ``iterations = 1``; see ``implicit_gcr``),
      ``cg`` (conjugate gradient on ``H + damping I``; needs it positive definite), ``neumann``
      (K-term Neumann series ``alpha * sum_k (I - alpha H)^k v``), ``dense`` (materialise H and solve: small
      models and tests only), ``identity`` (``H^{-1} ~= alpha I``, the K = 0 Neumann truncation) or ``none``
      (drop the implicit term: the biased gradient the paper attributes to InfNet+, kept as an ablation), or
      ``unrolled`` (no solve: reverse-mode through the inner steps, ``UnrolledSolve``; memory grows with T). Any
      other name is the import path of a solve function outside the package (``implicit_jax/plugins.py``: it
      gets ``(H + damping I)`` as a matvec and returns u), checked here to import.
    iterations: Neumann terms K (each costs one HVP), the maximum number of CG / MINRES iterations, or the
      number of GCR passes (``gcr`` runs them all: with one or two, a tolerance would save nothing).
    alpha: Neumann step. Convergence needs ``0 < alpha < 2 / lambda_max(H)``. With ``power_iters > 0`` it is an
      upper bound, lowered to ``1 / lambda_max`` estimated on the fly.
    power_iters: power iterations (HVPs) that estimate ``lambda_max(H)`` for the Neumann step; 0 disables.
    tol: CG and MINRES stop when the residual of the system they solve falls below ``tol`` times that of u = 0.
    damping: ``delta`` in ``H + delta I`` (``H^2 + delta I`` for ``normal_cg``): regularises the solve.
    hvp: ``exact`` (forward-over-reverse, ``jax.jvp`` of ``jax.grad``) or ``fd`` (the paper's central finite
      difference of gradients; approximate, kept for comparison).
    fd_eps: length of the finite-difference HVP's perturbation ``h v`` (``h = fd_eps / ||v||``).
    track_residual: report ``||H u - v|| / ||v||`` on the undamped H for every solver, so that solvers compare
      and the bias damping adds shows; costs one HVP, except for ``normal_cg`` and ``dense`` (and ``cg`` and
      ``minres`` without damping), which have it anyway.
    warm_start: ``gcr`` only: the solution of the previous outer step (``memory``, carried in the training
      state as ``methods.State.memory``) is one more direction of the subspace, and the Krylov space grows from
      the residual it leaves, so that an inner system that changes little between steps starts nearly solved.
      Costs one fused pass.
    reuse: the reuse policy, ``'none'`` (the implicit term solved on every outer step), ``'r<k>'`` (solved on every
      k-th step and reused, with that step's diagnostics, in between, carried in ``methods.State.memory``; one
      compiled step decides) or ``'r<k>h'`` (the same as two compiled steps the training loop picks on the host):
      ``implicit_jax/solvers/reuse.py``, which resolves it (``reuse_policy``), says when each is worth it.
    track_stationarity: ``gcr`` only: report ``||d_theta L_aux||`` at theta_T (``grad_norm`` and the
      ``stationarity`` diagnostic), which costs one gradient of L_aux there; the other solvers have it for free
      from their linearisation. False: NaN.
    unroll: run the solver's iterations as straight-line code instead of an XLA loop (``while_loop``): the
      same iterates, more compile time. XLA:CPU runs convolution gradients inside loops several times slower
      than outside them (jax-ml/jax#12868); convolutional tasks on CPU want it.
  """

  # The defaults are the implicit method's (``implicit.solver``, built from them by ``default_config``): the
  # values every recorded run that did not set a field ran with. A damped, truncated solve; an exact one (as the
  # gradient checks want) sets ``damping=0.0`` and its own ``iterations`` and ``tol``.
  name: str = 'normal_cg'
  iterations: int = 5
  alpha: float = 0.03
  power_iters: int = 0
  tol: float = 1e-4
  damping: float = 1e-2
  hvp: str = 'exact'
  fd_eps: float = 1e-3
  track_residual: bool = True
  warm_start: bool = False
  reuse: str = 'none'
  track_stationarity: bool = True
  unroll: bool = False

  def __post_init__(self):
    if self.name not in SOLVERS:
      plugin_solve(self)  # a name that is no import path, or does not import, is named here
    if self.hvp not in HVP_MODES:
      raise ValueError(f'solver.hvp: unknown HVP mode {self.hvp!r}; choose one of {HVP_MODES}')
    policy = self.reuse_policy  # an unknown name is named here
    if policy.reused and (self.warm_start or self.name in ('none', 'unrolled')):
      raise ValueError(f'{reuse_lib.FIELD}: reusing the implicit term needs a solver that computes one and keeps no '
                       f'other memory, not {self.name!r}{" with warm_start" if self.warm_start else ""}')
    for field in ('iterations', 'power_iters'):
      value = getattr(self, field)
      if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f'solver.{field} must be a non-negative integer, got {value!r}')
    if self.name == 'gcr' and self.hvp != 'exact':
      raise ValueError("solver.hvp: 'gcr' fuses exact products (reverse-over-forward); use hvp='exact'")
    if self.warm_start and self.name != 'gcr':
      raise ValueError(f"solver.warm_start: only 'gcr' carries its solution between steps, not {self.name!r}")
    if self.name in ('cg', 'minres', 'gcr') and self.iterations < 1:
      raise ValueError(f'solver.iterations must be >= 1 for {self.name}, got {self.iterations}')
    for field, positive in (('alpha', True), ('fd_eps', True), ('tol', False), ('damping', False)):
      value = getattr(self, field)
      if not isinstance(value, (int, float)) or isinstance(value, bool) or value != value:
        raise ValueError(f'solver.{field} must be a number, got {value!r}')
      if value < 0 or (positive and value == 0):
        raise ValueError(f'solver.{field} must be {"> 0" if positive else ">= 0"}, got {value}')

  @property
  def reuse_policy(self) -> reuse_lib.Reuse:
    """``reuse`` resolved: the period and whether the host picks the program."""
    return reuse_lib.Reuse.parse(self.reuse)

  @classmethod
  def from_config(cls, config: Mapping[str, Any]) -> 'Solver':
    """Builds from an ``ml_collections.ConfigDict`` (or dict); unknown keys are an error naming the key."""
    known = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(config.keys()) - known)
    if unknown:
      raise ValueError(f'solver: unknown field(s) {unknown}; valid fields are {sorted(known)}')
    return cls(**dict(config.items()))


# Set by the method's own ``implicit.unroll`` (one switch for its inner steps and its solver), not by the section.
NOT_IN_CONFIG = ('unroll',)


def default_config() -> ml_collections.ConfigDict:
  """``implicit.solver``: every field of ``Solver`` (documented there) but ``NOT_IN_CONFIG``, at its default: one
  set of defaults for the dataclass and the config."""
  return ml_collections.ConfigDict({f.name: f.default for f in dataclasses.fields(Solver)
                                    if f.name not in NOT_IN_CONFIG})


def plugin_solve(solver: Solver) -> Callable:
  """The solve function of a plug-in solver, ``solver.name`` being its import path (not one of ``SOLVERS``)."""
  return plugins.solver(solver.name, SOLVERS)


def _numeric(value) -> bool:
  if isinstance(value, (bool, int, float)):
    return True
  dtype = getattr(value, 'dtype', None)
  return dtype is not None and (jnp.issubdtype(dtype, jnp.number) or jnp.issubdtype(dtype, jnp.bool_))


def plugin_count(name: str, info: Mapping) -> Any:
  """The ``iterations`` a solver's ``info`` reports (NaN: none), once every value of ``info`` is checked to be
  numeric. Checked as the step is traced: a string or an object would fail later inside JAX, naming no solver."""
  for path, value in jax.tree_util.tree_leaves_with_path(info, is_leaf=lambda x: x is None):
    if not _numeric(value):
      raise ValueError(f'solver.name: {name!r} returned info{jax.tree_util.keystr(path)} = {value!r}, a '
                       f"{type(value).__name__}, not a number (info's values are numbers or arrays of numbers; see "
                       'implicit_jax/plugins.py)')
  count = info.get('iterations', jnp.nan)
  if jnp.size(count) != 1:
    raise ValueError(f"solver.name: {name!r} returned info['iterations'] of shape {jnp.shape(count)}, not one number "
                     '(the matvec calls it made)')
  return jnp.reshape(count, ())


def solve_none(matvec, v, solver):
  """No solve: the implicit term is dropped (zero)."""
  del solver
  return (jax.tree.map(jnp.zeros_like, v),
          {'iterations': 0, 'residual': jnp.ones((), norm(v).dtype),
           'implicit': jax.tree.map(jnp.zeros_like, matvec.phi)})


solve_none.linearize = False  # no product: the stationarity diagnostic takes one gradient


# name -> solve: the one table the IFT backward pass (``solve_inverse_hvp``) reads; a name outside it is a plug-in.
BUILT_IN = {'neumann': neumann.solve_neumann, 'cg': krylov.solve_cg, 'normal_cg': krylov.solve_normal_cg,
            'minres': krylov.solve_minres, 'gcr': gcr.solve_gcr, 'dense': dense.solve_dense,
            'identity': neumann.solve_identity, 'none': solve_none}


def solve_function(solver: Solver) -> Callable:
  """The ``solve`` that ``solver.name`` names: a built-in one (``BUILT_IN``) or a plug-in's."""
  if solver.name == 'unrolled':
    raise ValueError(f'solver.name: {solver.name!r} is not an inverse-HVP solver (see outer_solve)')
  return BUILT_IN[solver.name] if solver.name in BUILT_IN else plugin_solve(solver)


def call(f: Loss, theta: PyTree, phi: PyTree, batch: PyTree, v: PyTree, solver: Solver,
           memory: PyTree | None = None):
  """``(operator, u, info, implicit)``: ``solve_function(solver)`` called through the solver contract on
  ``(H + damping I) u = v``, its output checked and its ``info`` completed (``solve_inverse_hvp``); ``implicit`` is
  the term the solver gave (``info['implicit']``) or None."""
  check_tangent(theta, v)
  solve = solve_function(solver)
  operator = Operator(f, theta, phi, batch, solver, getattr(solve, 'linearize', True), memory)
  try:
    out = solve(operator, v, solver)
  except TypeError as e:  # JAX's errors of a traced value used as a Python one are TypeErrors
    error = None if solver.name in BUILT_IN else plugin_faults.traced_value(
        'solver.name', solver.name, plugin_faults.files(solve), e)
    if error is None:
      raise
    raise error from None
  if not (isinstance(out, tuple) and len(out) == 2 and isinstance(out[1], Mapping)):
    raise ValueError(f'solver.name: {solver.name!r} returned a {type(out).__name__}, not (u, info: dict)')
  u, given = out
  check_tangent(theta, u, f'solver.name: the u of {solver.name!r}')
  dtype = norm(v).dtype
  iterations = jnp.asarray(plugin_count(solver.name, given), dtype)
  implicit = given.get('implicit')
  if implicit is not None:
    check_tangent(phi, implicit, f"solver.name: the info['implicit'] of {solver.name!r}")
  residual = given.get('residual')
  if residual is None:
    if solver.track_residual:
      r = axpy(-1.0, v, operator.hessian(u))
      residual = relative_residual(norm(r), norm(v))
    else:
      residual = jnp.full((), jnp.nan, dtype)
  grad_norm = given['grad_norm'] if 'grad_norm' in given else norm(operator.gradient())
  info = {'residual': jnp.asarray(residual).astype(dtype), 'alpha': jnp.asarray(given.get('alpha', 0.0), dtype),
          'iterations': iterations, 'grad_norm': jnp.asarray(grad_norm).astype(dtype)}
  return operator, u, info, implicit


def solve_inverse_hvp(f: Loss, theta: PyTree, phi: PyTree, batch: PyTree, v: PyTree,
                      solver: Solver) -> tuple[PyTree, dict[str, jax.Array]]:
  """``u ~= (H + damping I)^{-1} v`` with ``H = d_theta d_theta f(theta, phi, batch)``, by the solver
  ``solver.name`` names, called through the solver contract (``solve_function``).

  Returns u and diagnostics (same keys for every solver, so they can be logged uniformly): ``residual``
  (``||H u - v|| / ||v||`` on the undamped H whatever the solver solved, NaN when not tracked), ``alpha``
  (Neumann/identity step used, 0 for
  other solvers), ``iterations`` (HVPs spent in the solve, excluding the residual check) and ``grad_norm``
  (``||d_theta f||`` at theta: how far theta is from the stationary point the solve assumes; with exact HVPs it
  comes free with the linearisation).
  """
  _, u, info, _ = call(f, theta, phi, batch, v, solver)
  return u, info


def implicit_gcr(l_aux: Loss, theta: PyTree, phi: PyTree, batch: PyTree, v: PyTree, solver: Solver,
                 memory: PyTree | None = None) -> tuple[PyTree, PyTree, dict[str, jax.Array]]:
  """``(implicit, u, info)`` of the ``gcr`` solver (``solvers/gcr.py``): the implicit term ``-[d_phi d_theta
  L_aux]^T u``, ``u ~= (H + damping I)^{-1} v`` and ``info`` as ``solve_inverse_hvp``'s (``iterations`` counts
  passes; ``grad_norm`` NaN unless ``solver.track_stationarity``). ``memory`` (``solver.warm_start``): a previous
  solution."""
  if solver.name != 'gcr':
    raise ValueError(f"solver.name: implicit_gcr runs 'gcr', not {solver.name!r}")
  _, u, info, implicit = call(l_aux, theta, phi, batch, v, solver, memory)
  return implicit, u, info
