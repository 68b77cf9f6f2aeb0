"""How the engine reaches the task and method plug-ins: one object, registered once at the top.

The engine's configs need of the plug-ins their config sections (to assemble, check, record and compare a config)
and the history of the record formats (to read an old run's record); loading a trained run needs a task and a
method built. ``Plugins`` names exactly that. The package registers its own when it is imported
(``implicit_jax/__init__.py`` calls ``use(implicit_jax.wiring.PACKAGE)``), so that nothing in ``engine/`` imports
``implicit_jax.tasks`` or ``implicit_jax.methods``: the engine imports downward only, and the plug-ins come in
through this one door.
"""

from __future__ import annotations

import abc
from typing import Any


class Plugins(abc.ABC):
  """What the engine asks of the tasks and methods (``implicit_jax/wiring.py`` answers for the package's)."""

  @abc.abstractmethod
  def task_sections(self, task: str) -> dict:
    """``{name: ConfigDict}``: the sections (``data``, ``model``) of the task family ``config.task`` names, with
    their defaults."""

  @abc.abstractmethod
  def shared_sections(self) -> dict:
    """``{name: ConfigDict}``: the sections several methods read (``gbi``), with their defaults."""

  @abc.abstractmethod
  def method_sections(self, method: str) -> dict:
    """``{name: ConfigDict}``: every method family's section with its defaults, and the section a plug-in
    ``method`` brings of its own."""

  @abc.abstractmethod
  def section_of(self, method: str) -> str | None:
    """The section ``method`` reads (None: only the shared fields); an unknown method raises ValueError."""

  @abc.abstractmethod
  def shared_of(self, method: str) -> tuple[str, ...]:
    """The shared sections ``method`` reads."""

  def upgrade(self, stored: dict) -> dict:
    """A record of an earlier format in today's, with the values its run used (no earlier formats: as it is)."""
    return stored

  @abc.abstractmethod
  def get_task(self, config) -> Any:
    """The task ``config`` names, its data read."""

  @abc.abstractmethod
  def build_method(self, task, config) -> Any:
    """The method ``config`` names, built for ``task``."""


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
