"""The implicit step's reuse policy (``implicit.solver.reuse``): one name for how often the implicit term is solved
and how the steps that solve and those that reuse it are compiled, resolved here once.

* ``'none'``: the term is solved on every outer step.
* ``'r<k>'`` (k >= 2, ``'r3'``): solved on every k-th outer step and reused, with that step's diagnostics, on the
  steps in between, carried in ``methods.State.memory``; one compiled step decides from the count it carries
  (``lax.cond``).
* ``'r<k>h'`` (``'r3h'``): the same steps, as two compiled programs, one that solves and one that reuses, the
  training loop calling the one its host-side step count names (``methods.Method.form``). The same iterates in exact
  arithmetic; faster, as XLA on CPU runs a conditional's convolutions several times slower and the reusing program
  drops ``d_theta L_prim``, but XLA compiles the two otherwise, so a run's float rounding, and with it its
  trajectory, differs from ``'r<k>'``.

The names are the suffixes the rows of the results tables carry (``implicit-cd-gcr-T1-r3h``), so that a row's name
and its config say the same thing. Runs recorded before this field set ``refresh`` (k) and ``refresh_by``
(``'program'`` or ``'host'``); ``implicit_jax/wiring.py`` reads them as the name they mean.
"""

from __future__ import annotations

import dataclasses
import re

# As the other settings of ``Solver`` name theirs; the implicit method, which reads the section, adds ``implicit.``.
FIELD = 'solver.reuse'
FORMS = ("'none' (solved every step), 'r<k>' (every k-th step, k >= 2, in one program) or 'r<k>h' (the same as two "
         'programs the host picks)')
_NAME = re.compile(r'r([1-9][0-9]*)(h?)')


@dataclasses.dataclass(frozen=True)
class Reuse:
  """A parsed policy: ``period`` k (1: solved every step) and ``by_host`` (the two kinds of step as two programs)."""
  period: int = 1
  by_host: bool = False

  def __post_init__(self):
    if isinstance(self.period, bool) or not isinstance(self.period, int) or self.period < 1:
      raise ValueError(f'{FIELD}: the period must be a positive integer, got {self.period!r}')
    if self.by_host and self.period == 1:
      raise ValueError(f'{FIELD}: two programs need a reused term (a period of 2 or more)')

  @classmethod
  def parse(cls, name) -> 'Reuse':
    """The policy ``name`` says; anything else is a ValueError naming the field and the accepted forms."""
    if name == 'none':
      return cls()
    match = _NAME.fullmatch(name) if isinstance(name, str) else None
    if match is None or int(match.group(1)) < 2:
      raise ValueError(f'{FIELD}: unknown value {name!r}; choose {FORMS}')
    return cls(int(match.group(1)), match.group(2) == 'h')

  @property
  def name(self) -> str:
    return 'none' if self.period == 1 else f'r{self.period}' + ('h' if self.by_host else '')

  @property
  def reused(self) -> bool:
    """Whether a term is carried between steps (and the steps take two forms)."""
    return self.period > 1

  def fresh(self, step: int) -> bool | None:
    """Whether outer step ``step`` (from 0) solves, when the host picks the program; None when one program serves
    every step (the term solved on each, or the program deciding from the count it carries)."""
    if not self.by_host:
      return None
    return step % self.period == 0
