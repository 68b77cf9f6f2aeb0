"""How the engine reaches the task and method plug-ins: one object, registered once at the top.

The engine needs of a config's task and method their config sections (to assemble, check, record and compare a
config), a way to make the task and build the method, and the history of the record formats (to read an old run's
record, and to say what replaced a field it held). ``Plugins`` names exactly that: ``parts(task, method)`` resolves
the two names once into an ``engine.config.Parts``, which the engine then passes down instead of looking the names
up again. The package
registers its own when it is imported (``implicit_jax/__init__.py`` calls ``use(implicit_jax.wiring.PACKAGE)``),
so that nothing in ``engine/`` imports ``implicit_jax.tasks`` or ``implicit_jax.methods``: the engine imports
downward only, and the plug-ins come in through this one door.
"""

from __future__ import annotations

import abc


class Plugins(abc.ABC):
  """What the engine asks of the tasks and methods (``implicit_jax/wiring.py`` answers for the package's)."""

  @abc.abstractmethod
  def parts(self, task: str, method: str):
    """The ``engine.config.Parts`` of the task family ``config.task`` names and of the method ``config.method``
    names (their sections, and how the task and the method are made); an unknown task or method raises ValueError
    naming the field (the task's first)."""

  def upgrade(self, stored: dict) -> dict:
    """A record of an earlier format in today's, with the values its run used (no earlier formats: as it is)."""
    return stored

  def retired(self, field: str, value: str | None = None) -> str | None:
    """For ``field`` (a dotted name), a field of an earlier format that today's config names otherwise, a phrase
    saying what sets it now (``'a retired field: set ...'``), given the ``value`` it was set to as written (None:
    not known); None for any other field. A config file or command line setting it is refused with that phrase
    (``engine/cli.py``) instead of the unknown-field error, which could only name the nearest field."""
    del field, value
    return None


_USED: Plugins | None = None


def use(plugins: Plugins) -> None:
  """Makes ``plugins`` the engine's (the package's ``__init__`` registers its own)."""
  global _USED  # pylint: disable=global-statement
  if not isinstance(plugins, Plugins):
    raise TypeError(f'use() takes an engine.registry.Plugins, got a {type(plugins).__name__}')
  _USED = plugins


def plugins() -> Plugins:
  """The registered plug-ins."""
  if _USED is None:  # only if implicit_jax/__init__.py did not run, which importing any module of it does
    raise RuntimeError('no task and method plug-ins are registered: import implicit_jax (its __init__ registers '
                       'implicit_jax.wiring.PACKAGE)')
  return _USED
