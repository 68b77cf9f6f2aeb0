"""The training batch: what each key holds, who adds it and who may read it; and every random key of a run.

A batch is a dict of arrays with a leading example axis. Three layers build a training batch (the engine's data,
``methods.build``, the method's step), each adding keys and none changing what an earlier one put; a prediction
batch holds the task's inputs only.

* inputs (``x``, ``mask``, ``evidence``, ...): added by ``engine/data.py``, the task split's arrays but ``y``,
  cut to a bucket (``Task.padded``); read by the task's networks, each the ones it needs, and ``mask`` by the
  output space's reductions too. Prediction batches hold these alone.
* ``y``: added by ``engine/data.py`` (training only), ``space.gold`` of the split's labels; read by the methods
  and the output space (losses, costs, scores), never by a network.
* ``labeled``: the task's split (tasks with a reward, ``Task.reward``); read by ``methods.batch_score`` and the
  semi-supervised methods' losses.
* ``energy_dropout``: added by ``methods.build`` to every method's step (``energy_dropout_key``); read by the task's
  energy alone, which draws one dropout mask for the whole step from it. Absent at evaluation.
* ``noise`` and ``dropout``: added by ``methods/implicit.py`` (``step_batch``); read by the implicit losses (the
  negatives' noise, the inference network's dropout key).
* ``anchor``: added by ``methods/implicit.py`` (``inner_problem``, with ``implicit.proximal > 0``); read by the
  proximal term of L_aux.
* ``step_key``: added by ``methods/spen.py`` (``energy_method``); read by the losses of SPEN, DVN and R-SPEN that
  sample.

A task's split may not use a name that training adds (``RESERVED``; ``tasks.Task`` refuses it). Keys a method
adds are its own: another method, the engine and the task's networks do not read them (the energy's
``energy_dropout`` aside). Keys that hold randomness are key data (``as_data``), so that the batch stays a pytree
of arrays the IFT treats as constants. A plug-in method (``implicit_jax/plugins.py``) may add keys of its own,
under names no task input uses.

Random keys. Every JAX random key of a run derives from ``config.seed`` by the functions here::

  key(seed) -- fold_in 0 --> init_key(seed): ``method.init`` (parameters)
            -- fold_in 1 --> steps_key(seed) -- fold_in step --> step_key: ``method.train_step``'s rng
                                                  -- fold_in 1 --> energy_dropout_key (methods.build)
                                                  -- split    --> the method's own streams (noise, dropout, ...)

so a step's randomness is a function of (seed, step) alone, which exact resumption needs. Methods draw their
streams from the key they are given with ``split``, never from a key of their own. The data order is numpy's,
``default_rng([seed, epoch])`` (``engine/data.py``), and a task's data generators seed numpy from its data
settings: neither is a JAX key.
"""

from __future__ import annotations

import jax

# Keys training adds to a batch (the list above): a task's split may not use them.
RESERVED = ('energy_dropout', 'noise', 'dropout', 'anchor', 'step_key')

_INIT, _STEPS = 0, 1       # fold_in tags under the seed's key
_ENERGY_DROPOUT = 1        # fold_in tag under a step's key


def init_key(seed: int) -> jax.Array:
  """The key ``method.init`` draws the initial parameters from."""
  return jax.random.fold_in(jax.random.key(seed), _INIT)


def steps_key(seed: int) -> jax.Array:
  """The key every step's key is folded from (``step_key``)."""
  return jax.random.fold_in(jax.random.key(seed), _STEPS)


def step_key(steps: jax.Array, step) -> jax.Array:
  """The rng of the training step that starts from ``state.step == step`` (traced inside the jitted step)."""
  return jax.random.fold_in(steps, step)


def split(rng: jax.Array, num: int = 2) -> jax.Array:
  """``num`` independent streams of ``rng`` (a method's noise, dropout, sub-updates; one key per network)."""
  return jax.random.split(rng, num)


def as_data(rng: jax.Array) -> jax.Array:
  """A key as the batch carries it: key data (uint32), an array like any other."""
  return jax.random.key_data(rng)


def from_data(data: jax.Array) -> jax.Array:
  """The key a batch carries as key data (``as_data``)."""
  return jax.random.wrap_key_data(data)


def energy_dropout_key(step: jax.Array) -> jax.Array:
  """The ``energy_dropout`` of a step whose rng is ``step``: folded in, so that the streams a method splits from
  ``step`` are those of runs from before the key existed."""
  return as_data(jax.random.fold_in(step, _ENERGY_DROPOUT))
