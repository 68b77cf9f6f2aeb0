"""The implicit (IFT) outer gradient of the bi-level problem: the paper's math in one place.

Shankar & Piratla, Eq. 2-4 and Algorithm 1::

    theta*(phi) = argmin_theta  L_aux(theta, phi)         inner problem, approximated by T optax steps
    min_phi     L_prim(theta*(phi), phi)                 outer problem

    dL_prim/dphi = d_phi L_prim  -  [d_phi d_theta L_aux]^T  H^{-1}  d_theta L_prim,   H = d_theta d_theta L_aux

H^{-1} is never formed. ``u = H^{-1} d_theta L_prim`` comes from an inverse-HVP solver (Neumann series, CG,
MINRES, a dense solve for small problems) built on Hessian-vector products, and ``[d_phi d_theta L_aux]^T u`` is
one VJP.

Every loss here has the signature ``f(theta, phi, batch) -> scalar``: ``theta`` (inner variable) and ``phi``
(outer variable) are arbitrary pytrees (Flax parameter dicts), ``batch`` is data and is not differentiated.
Passing the data as an argument, never through a closure, is what keeps ``jax.custom_vjp`` sound.

Here (the IFT and its rival):
  * ``implicit_vjp``: the implicit term ``-[d_phi d_theta L_aux]^T u`` from any solver, called through the one
    solver contract (``implicit_jax.solvers.call``); ``hypergradient``: the gradient at a given stationary point.
  * ``inner_loop``: T optimiser steps on L_aux inside ``lax.scan`` (plain autodiff: the unrolled reference).
  * ``ImplicitSolve``: ``inner_loop`` wrapped in ``jax.custom_vjp`` so that
    ``jax.grad(lambda phi: L_prim(solve(phi, ...)[0], phi, batch))`` is explicit + implicit term; its
    ``value_and_grad`` also returns diagnostics (solver residual, explicit and implicit term norms) and what the
    solver carries to the next step.
  * ``UnrolledSolve``: the same interface, differentiating through the T inner steps: the truncated procedure's
    true derivative, the reference the implicit term is measured against. ``outer_solve`` picks one by name.

Elsewhere, and re-exported here: ``implicit_jax.solvers`` (``Solver``, the validated settings, with ``SOLVERS``:
``neumann``, ``cg``, ``normal_cg``, ``minres``, ``gcr``, ``dense``, ``identity``, ``none``, ``unrolled``, or the
import path of a plug-in; ``solve_inverse_hvp``, ``implicit_gcr``), ``implicit_jax.hessian`` (``hvp``,
``fd_hvp``, ``mixed_vjp``, ``fused_products``, ``power_iteration``, ``Operator``) and ``implicit_jax.loops``.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import optax

from implicit_jax import solvers
# Re-exported: the names the methods, tests, scripts and docs reach through ``bilevel`` (the settings and solvers
# live in ``implicit_jax.solvers``, the products in ``implicit_jax.hessian``, the loops in ``implicit_jax.loops``).
from implicit_jax.hessian import (Loss, Operator, check_tangent, fd_hvp, fused_products, hvp,  # noqa: F401
                                  mixed_vjp, norm, power_iteration, scale, vdot)
from implicit_jax.loops import scan, while_loop  # noqa: F401
from implicit_jax.solvers import (BUILT_IN, HVP_MODES, NOT_IN_CONFIG, SOLVERS, Solver,  # noqa: F401
                                  default_config, implicit_gcr, solve_inverse_hvp)

PyTree = Any


def implicit_vjp(l_aux: Loss, theta: PyTree, phi: PyTree, batch: PyTree, g_theta: PyTree, solver: Solver,
                 memory: PyTree | None = None) -> tuple[PyTree, dict[str, jax.Array], PyTree]:
  """``(implicit, diagnostics, u)``: the implicit term ``-[d_phi d_theta L_aux]^T u`` (a phi-shaped pytree), ``u ~=
  H^{-1} g_theta``; ``memory`` (``solver.warm_start``) is the previous step's u."""
  _, u, info, implicit = solvers.call(l_aux, theta, phi, batch, g_theta, solver, memory)
  if implicit is None:  # the solver gave u alone: the term is one mixed VJP of it
    implicit = scale(-1.0, mixed_vjp(l_aux, theta, phi, batch, u))
  return implicit, info, u


# --------------------------------------------------------------------------------------------------------------
# The inner problem


def inner_loop(l_aux: Loss, optimizer: optax.GradientTransformation, num_steps: int, phi: PyTree,
               theta0: PyTree, opt_state0: PyTree, batch: PyTree, unroll: bool = False):
  """``num_steps`` optimiser steps on ``L_aux(., phi, batch)`` from the warm start ``(theta0, opt_state0)``.

  Plain JAX: differentiating through it is unrolled differentiation (memory grows with ``num_steps``).
  Returns ``(theta_T, opt_state_T, losses)`` with ``losses[t] = L_aux(theta_t)`` before step t. ``unroll``:
  the steps as straight-line code (``Solver.unroll`` says why).
  """
  theta, state, losses, _ = _inner_scan(l_aux, optimizer, num_steps, phi, theta0, opt_state0, batch, unroll)
  return theta, state, losses


def _inner_scan(l_aux, optimizer, num_steps, phi, theta0, opt_state0, batch, unroll=False):
  """``inner_loop``, also returning ``||d_theta L_aux(theta_t)||`` before each step."""
  def step(carry, _):
    theta, state = carry
    loss, grad = jax.value_and_grad(l_aux)(theta, phi, batch)
    updates, state = optimizer.update(grad, state, theta)
    return (optax.apply_updates(theta, updates), state), (loss, norm(grad))

  (theta, state), (losses, norms) = scan(step, (theta0, opt_state0), num_steps, unroll)
  return theta, state, losses, norms


def hypergradient(l_prim: Loss, l_aux: Loss, theta_star: PyTree, phi: PyTree, batch: PyTree,
                  solver: Solver) -> tuple[PyTree, dict[str, jax.Array]]:
  """Total derivative of ``L_prim(theta*(phi), phi)`` at a given stationary point ``theta*`` of L_aux."""
  g_theta, g_phi = jax.grad(l_prim, argnums=(0, 1))(theta_star, phi, batch)
  implicit, info, _ = implicit_vjp(l_aux, theta_star, phi, batch, g_theta, solver)
  return jax.tree.map(jnp.add, g_phi, implicit), _diagnostics(g_phi, implicit, info)


def _diagnostics(explicit, implicit, info):
  """Norms of the two terms of the hypergradient and the cosine between them (0 when either is zero)."""
  e, i = norm(explicit), norm(implicit)
  cosine = vdot(explicit, implicit) / jnp.maximum(e * i, jnp.finfo(e.dtype).tiny)
  return dict(info, explicit_norm=e, implicit_norm=i, cosine=cosine)


class ImplicitSolve:
  """The inner solve as a function of phi whose VJP is the implicit one (``jax.custom_vjp``).

  ``solve(phi, theta0, opt_state0, batch) -> (theta_T, opt_state_T, losses)`` runs ``inner_loop``. Its VJP
  treats theta_T as the stationary point theta*(phi) of L_aux: the cotangent ``g`` of theta_T becomes
  ``-[d_phi d_theta L_aux]^T H^{-1} g`` for phi, and zero for the warm start and the batch (a stationary point
  does not depend on where the search started). ``opt_state_T`` and ``losses`` carry no gradient. With
  ``solver.unroll`` the inner steps are straight-line code too.

  Forward-mode differentiation cannot pass through a ``custom_vjp``; HVPs are taken on L_aux directly.
  """

  def __init__(self, l_aux: Loss, optimizer: optax.GradientTransformation, num_steps: int, solver: Solver):
    if isinstance(num_steps, bool) or not isinstance(num_steps, int) or num_steps < 0:
      raise ValueError(f'num_steps (T_inner) must be a non-negative integer, got {num_steps!r}')
    if not isinstance(solver, Solver):
      raise TypeError(f'solver must be a bilevel.Solver, got {type(solver).__name__}')
    if solver.name == 'unrolled':
      raise ValueError("solver.name: 'unrolled' differentiates through the inner steps; build it with "
                       "outer_solve (or UnrolledSolve), not ImplicitSolve")
    self.l_aux, self.optimizer, self.num_steps, self.solver = l_aux, optimizer, num_steps, solver
    self.reuse = policy = solver.reuse_policy

    # `probe` is a zero input whose cotangent carries the implicit term and the solver diagnostics out of the
    # backward pass: jax.grad w.r.t. it returns them at no extra cost (see value_and_grad).
    # `memory` (init_memory) is what the solver carried from the previous step: data, like the warm start.
    # One solve per form of the step (``step``'s ``fresh``): None decides inside the program (``lax.cond`` on the
    # carried count), True and False are decided by the caller, so the program holds one branch. XLA on CPU runs a
    # branch's convolutions several times slower than the same code outside a conditional (horses: 677 ms against
    # 158 ms for the step that solves), and a program that only reuses the term never computes d_theta L_prim.
    def make_solve(fresh):
      @jax.custom_vjp
      def solve(phi, theta0, opt_state0, batch, probe, memory):
        del probe, memory
        theta, state, losses, norms = _inner_scan(l_aux, optimizer, num_steps, phi, theta0, opt_state0, batch,
                                                  solver.unroll)
        return theta, state, (losses, norms)

      def fwd(phi, theta0, opt_state0, batch, probe, memory):
        out = solve(phi, theta0, opt_state0, batch, probe, memory)
        return out, (out[0], phi, batch, memory)

      def bwd(residuals, cotangents):
        theta, phi, batch, memory = residuals
        g_theta = cotangents[0]
        if not policy.reused:
          implicit, info, u = implicit_vjp(l_aux, theta, phi, batch, g_theta, solver, memory)
          new_memory = u if solver.warm_start else None
        else:  # a new term on every period-th step, the carried one in between
          def reuse():
            z = jnp.zeros_like(memory['residual'])
            return memory['implicit'], {'residual': memory['residual'], 'alpha': z, 'iterations': z,
                                        'grad_norm': memory['grad_norm']}
          new = lambda: jax.tree.map(lambda a, b: a.astype(b.dtype),
                                     implicit_vjp(l_aux, theta, phi, batch, g_theta, solver)[:2], reuse())
          if fresh is None:  # only the branch taken runs
            implicit, info = jax.lax.cond(jnp.mod(memory['count'], policy.period) == 0, new, reuse)
          else:
            implicit, info = new() if fresh else reuse()
          new_memory = {'count': memory['count'] + 1, 'implicit': implicit, 'residual': info['residual'],
                        'grad_norm': info['grad_norm']}
        probe_bar = dict(info, implicit=implicit)
        if new_memory is not None:
          probe_bar['memory'] = new_memory
        return implicit, None, None, None, probe_bar, None

      solve.defvjp(fwd, bwd)
      return solve

    # The caller's forms exist only where a term is reused; every step solves otherwise.
    self._solves = {fresh: make_solve(fresh) for fresh in ((None, True, False) if policy.reused else (None,))}

  def _probe(self, phi, memory):
    dtype = jnp.result_type(*jax.tree.leaves(phi))
    z = jnp.zeros((), dtype)
    probe = {'residual': z, 'alpha': z, 'iterations': z, 'grad_norm': z,
             'implicit': jax.tree.map(jnp.zeros_like, phi)}
    return probe if memory is None else dict(probe, memory=jax.tree.map(jnp.zeros_like, memory))

  def init_memory(self, theta, phi=None):
    """What the solver carries between steps before the first one, or None when it keeps nothing: the previous
    solution u (zeros shaped as theta) for ``warm_start``; the reused term, its diagnostics and a step count
    (floats: the probe that returns them is differentiated) when ``solver.reuse`` reuses it, which needs ``phi``."""
    if self.solver.warm_start:
      return jax.tree.map(jnp.zeros_like, theta)
    if self.reuse.reused:
      z = lambda: jnp.zeros((), jnp.result_type(*jax.tree.leaves(phi)))  # one buffer each: the state is donated
      return {'count': z(), 'implicit': jax.tree.map(jnp.zeros_like, phi), 'residual': z(), 'grad_norm': z()}
    return None

  def _memory(self, theta0, phi, memory):
    return self.init_memory(theta0, phi) if memory is None else memory

  def __call__(self, phi, theta0, opt_state0, batch):
    memory = self._memory(theta0, phi, None)
    theta, state, (losses, _) = self._solves[None](phi, theta0, opt_state0, batch, self._probe(phi, memory), memory)
    return theta, state, losses

  def value_and_grad(self, l_prim: Loss, phi, theta0, opt_state0, batch):
    """``(L_prim, (theta_T, opt_state_T, inner_losses)), dL_prim/dphi, diagnostics`` in one pass, from the first
    step's memory (``init_memory``); ``step`` carries it between steps.

    diagnostics: ``residual``, ``alpha``, ``iterations`` of the solver, ``explicit_norm`` (``||d_phi L_prim||``),
    ``implicit_norm`` (norm of the implicit term), ``cosine`` (between the two terms), ``grad_norm``
    (``||d_theta L_aux||`` at theta_T) and ``stationarity``, that norm over the one at the warm start: the IFT
    premise is ``stationarity`` near 0; near 1 the inner steps barely approached a stationary point.
    """
    return self.step(l_prim, phi, theta0, opt_state0, batch, None)[:3]

  def fresh(self, step: int) -> bool | None:
    """Whether outer step ``step`` (counted from 0) computes the implicit term (``solver.reuse``), the static
    form ``self.step`` takes as ``fresh``; None when every step does, or when the program decides (``'r<k>'``, not
    ``'r<k>h'``)."""
    return self.reuse.fresh(step)

  def step(self, l_prim: Loss, phi, theta0, opt_state0, batch, memory, fresh: bool | None = None):
    """``value_and_grad``'s outputs and the memory for the next step: with ``solver.warm_start`` or a reused
    term (``solver.reuse``), ``memory`` is what the previous step returned (None: the first step's,
    ``init_memory``), and the fourth output is this step's; else None.

    ``fresh`` (a reused term): ``self.fresh(step)`` for the outer step the caller is at, which it counts
    on the host; the program then holds only the form that step takes. None: the program decides from the count
    in ``memory``, the same rule."""
    memory = self._memory(theta0, phi, memory)
    solve = self._solves[fresh if self.reuse.reused else None]

    def outer(phi, probe):
      theta, state, (losses, norms) = solve(phi, theta0, opt_state0, batch, probe, memory)
      return l_prim(theta, phi, batch), (theta, state, losses, norms)

    # The backward pass hands the implicit term, the diagnostics and the solver's new memory out as the
    # cotangent of the probe (see __init__): the only way out of a custom VJP's backward pass.
    (loss, (theta, state, losses, norms)), (grad, probe_bar) = jax.value_and_grad(
        outer, argnums=(0, 1), has_aux=True)(phi, self._probe(phi, memory))
    implicit = probe_bar.pop('implicit')
    new_memory = probe_bar.pop('memory', None)
    explicit = jax.tree.map(jnp.subtract, grad, implicit)
    diagnostics = _diagnostics(explicit, implicit, probe_bar)
    if self.num_steps:
      diagnostics['stationarity'] = diagnostics['grad_norm'] / jnp.maximum(norms[0], jnp.finfo(norms.dtype).tiny)
    return (loss, (theta, state, losses)), grad, diagnostics, new_memory


class UnrolledSolve:
  """``ImplicitSolve``'s interface with the derivative of the truncated procedure itself: reverse-mode through
  the T inner steps from the warm start (``inner_loop``), no stationarity assumed and no solve.

  Its "implicit" diagnostic is the part of dL_prim/dphi that flows through theta_T (total minus the explicit
  ``d_phi L_prim``), so its norm and cosine compare with the implicit term of the solvers. Memory grows with T.
  Differentiating through Adam needs ``eps_root > 0`` (``optimizer``'s business: see ``methods.make_optimizer``).
  """

  def __init__(self, l_aux: Loss, optimizer: optax.GradientTransformation, num_steps: int, unroll: bool = False):
    if isinstance(num_steps, bool) or not isinstance(num_steps, int) or num_steps < 0:
      raise ValueError(f'num_steps (T_inner) must be a non-negative integer, got {num_steps!r}')
    self.l_aux, self.optimizer, self.num_steps, self.unroll = l_aux, optimizer, num_steps, unroll

  def __call__(self, phi, theta0, opt_state0, batch):
    return inner_loop(self.l_aux, self.optimizer, self.num_steps, phi, theta0, opt_state0, batch, self.unroll)

  def init_memory(self, theta, phi=None):
    del theta, phi
    return None

  def step(self, l_prim: Loss, phi, theta0, opt_state0, batch, memory, fresh=None):
    """``value_and_grad`` and no memory (None), as ``ImplicitSolve.step``."""
    del memory, fresh
    return self.value_and_grad(l_prim, phi, theta0, opt_state0, batch) + (None,)

  def value_and_grad(self, l_prim: Loss, phi, theta0, opt_state0, batch):
    """As ``ImplicitSolve.value_and_grad``; ``residual`` is 0 (nothing is solved) and ``iterations`` 0."""
    def outer(phi):
      theta, state, losses, norms = _inner_scan(self.l_aux, self.optimizer, self.num_steps, phi, theta0,
                                                opt_state0, batch, self.unroll)
      return l_prim(theta, phi, batch), (theta, state, losses, norms)

    (loss, (theta, state, losses, norms)), grad = jax.value_and_grad(outer, has_aux=True)(phi)
    explicit = jax.grad(l_prim, argnums=1)(theta, phi, batch)
    through_theta = jax.tree.map(jnp.subtract, grad, explicit)
    grad_norm = norm(jax.grad(self.l_aux)(theta, phi, batch))
    z = jnp.zeros((), grad_norm.dtype)
    diagnostics = _diagnostics(explicit, through_theta,
                               {'residual': z, 'alpha': z, 'iterations': z, 'grad_norm': grad_norm})
    if self.num_steps:
      diagnostics['stationarity'] = grad_norm / jnp.maximum(norms[0], jnp.finfo(norms.dtype).tiny)
    return (loss, (theta, state, losses)), grad, diagnostics


def outer_solve(l_aux: Loss, optimizer: optax.GradientTransformation, num_steps: int, solver: Solver):
  """``UnrolledSolve`` for ``solver.name == 'unrolled'``, else ``ImplicitSolve`` with ``solver``."""
  if solver.name == 'unrolled':
    return UnrolledSolve(l_aux, optimizer, num_steps, solver.unroll)
  return ImplicitSolve(l_aux, optimizer, num_steps, solver)
