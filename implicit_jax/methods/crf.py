"""Linear-chain CRF on the tagging task's Eq. 7 energy: the same unary and transition scores, trained by exact
maximum likelihood and decoded exactly (the CRF row of the implicit paper's Table 9).

With ``(u, W) = energy.potentials(x)`` (``u`` [B, T, C], lower energy = better), ``E(x, y) = sum_t u_{t, y_t} +
sum_t W_{y_{t-1}, y_t}`` over the real tokens and ``p(y | x) = exp(-E(x, y)) / Z(x)``::

    loss       = E(x, y_gold) + log Z(x)                                  (negative log-likelihood, batch mean)
    log Z:       a_0 = -u_0,   a_t(j) = logsumexp_i(a_{t-1}(i) - W_ij) - u_t(j),   log Z = logsumexp_j a_T(j)
    prediction:  the same recursion with max in place of logsumexp (Viterbi), then the back-pointers

both as ``lax.scan`` over time. A padded position (``mask`` 0; padding only follows the real tokens) carries the
forward variable unchanged and gets identity back-pointers, so one scan serves every length in the batch.
Parameters: ``{'phi': energy}``, trained by ``config.optimizer``. Needs a task whose energy has
``potentials(batch) -> (u [B, T, C], W [C, C])`` and whose output space is ``Categorical`` (reading ``mask``), as
the tagging task's ``SequenceEnergy``: a task from outside the package provides the same to be trained by crf
(``implicit_jax/plugins.py``, which lists what every method asks of a task).
"""

import jax
import jax.numpy as jnp
import optax

from implicit_jax.method_kit import Method, MethodSpec, State, init_params, make_optimizer


def _time_major(a):
  return jnp.swapaxes(a, 0, 1)


def log_partition(unary: jax.Array, transitions: jax.Array, mask: jax.Array) -> jax.Array:
  """``log Z`` [B] of ``p(y) ~ exp(-E(y))`` for unary energies [B, T, C], transitions [C, C], mask [B, T]."""
  def step(alpha, inputs):
    u_t, m_t = inputs
    new = jax.nn.logsumexp(alpha[:, :, None] - transitions[None], axis=1) - u_t
    return jnp.where(m_t[:, None] > 0, new, alpha), None

  alpha, _ = jax.lax.scan(step, -unary[:, 0], (_time_major(unary[:, 1:]), _time_major(mask[:, 1:])))
  return jax.nn.logsumexp(alpha, axis=-1)


def viterbi(unary: jax.Array, transitions: jax.Array, mask: jax.Array) -> jax.Array:
  """The minimum-energy tag sequence [B, T] (int32); padded positions repeat the last real tag."""
  num_tags = unary.shape[-1]

  def forward(delta, inputs):
    u_t, m_t = inputs
    candidates = delta[:, :, None] - transitions[None]                  # [B, previous tag, tag]
    new = jnp.max(candidates, axis=1) - u_t
    pointers = jnp.where(m_t[:, None] > 0, jnp.argmax(candidates, axis=1), jnp.arange(num_tags)[None])
    return jnp.where(m_t[:, None] > 0, new, delta), pointers

  delta, pointers = jax.lax.scan(forward, -unary[:, 0], (_time_major(unary[:, 1:]), _time_major(mask[:, 1:])))

  def backward(tag, pointers_t):
    return jnp.take_along_axis(pointers_t, tag[:, None], axis=1)[:, 0], tag

  first, rest = jax.lax.scan(backward, jnp.argmax(delta, axis=-1), pointers, reverse=True)
  return jnp.concatenate([first[:, None], _time_major(rest)], axis=1).astype(jnp.int32)


def build(task, config) -> Method:
  energy, space = task.make_energy(), task.space
  if not hasattr(energy, 'potentials'):
    raise ValueError(f'method crf needs a chain energy with potentials(batch) -> (u, W) (the tagging task; see '
                     f'implicit_jax/plugins.py); the energy of task {task.name!r} ({type(energy).__name__}) has none')
  if getattr(energy, 'global_energy', 'none') != 'none':
    raise ValueError(f"method crf: model.global_energy={energy.global_energy!r} is not a chain: the forward "
                     f"algorithm is exact for Eq. 7 only; set model.global_energy='none'")
  opt = make_optimizer(config.optimizer, 'optimizer')

  def potentials(phi, batch):
    return energy.apply(phi, batch, method='potentials')

  def init(rng):
    phi = init_params(task, rng, {'phi': energy})['phi']
    return State(step=jnp.zeros((), jnp.int32), params={'phi': phi}, opt_state={'phi': opt.init(phi)})

  def train_step(state, batch, rng):
    del rng  # no sampling; the energy's dropout key, if any, is in the batch (methods.build)
    mask = batch['mask'].astype(jnp.float32)

    def loss_fn(phi):
      unary, transitions = potentials(phi, batch)
      gold = energy.apply(phi, batch, batch['y'])    # batch['y']: the relaxed gold, one-hot on the real tokens
      return jnp.mean(gold + log_partition(unary, transitions, mask))

    loss, grad = jax.value_and_grad(loss_fn)(state.params['phi'])
    updates, opt_state = opt.update(grad, state.opt_state['phi'], state.params['phi'])
    phi = optax.apply_updates(state.params['phi'], updates)
    return State(step=state.step + 1, params={'phi': phi}, opt_state={'phi': opt_state}), {'loss': loss}

  def predict(params, batch):
    unary, transitions = potentials(params['phi'], batch)
    mask = batch['mask'].astype(unary.dtype)
    tags = viterbi(unary, transitions, mask)
    return jax.nn.one_hot(tags, space.units, dtype=unary.dtype) * mask[..., None]

  return Method(init, train_step, predict, {'energy': energy})


METHOD = MethodSpec('crf', build, doc='linear-chain CRF on the tagging energy: exact likelihood and decoding')
