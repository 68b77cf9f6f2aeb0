"""implicit_jax: implicit (IFT) training of energy models for structured prediction, in JAX/Flax.

The bi-level math lives in ``implicit_jax.bilevel``; training starts at ``implicit_jax.train.train_and_evaluate``.
"""

__version__ = '0.1.0'
