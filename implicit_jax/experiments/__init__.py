"""The published experiments: every row of the results tables is a config file and an argument.

``python -m implicit_jax.main --config=configs/bibtex.py:implicit-cd --workdir=DIR`` trains the row ``implicit-cd``
of the bibtex table (``--config.seed=K`` its seed K); the tables in ``docs/`` name each row's config so. A config
file's ``get_config(arg=None)`` builds the dataset's config and, given ``arg``, applies the row through its task
family's module here, which holds the rows as flat overrides of the dataset configs:

  mlc       configs/{bibtex,delicious,genbase,cal500,spo_fun}.py  scripts/reproduce_mlc.py, compare_methods.py,
                                                                  ablation_mlc.py
  tagging   configs/{pos,ner,ner_fixed,ner_plus}.py               scripts/reproduce_tagging.py
  cora      configs/cora.py                                       scripts/reproduce_cora.py
  horses    configs/horses.py                                     scripts/reproduce_horses.py

``arg`` is ``SYSTEM[,VARIANT...]``: a row of the family's ``SYSTEMS`` (its name in the tables) and the family's
variants (MLC: ``resplit``, the paper's split protocol; horses: ``full``, the published widths and schedule).

The rows live in the package rather than in the config files because a family's rows apply to several dataset
configs (five for MLC, four for tagging), configs are loaded by path (a config cannot import its sibling's
table), and the scripts, benchmarks and tests that list the rows need them too: the installed package serves
all of them, with no path tricks.
"""

from __future__ import annotations

# The implicit term solved on every step (solver.refresh 1, in one program): rows whose runs were made before
# their config reused the term pin it, so that the row still names the recipe of its records.
EVERY_STEP = {'implicit.solver.refresh': 1, 'implicit.solver.refresh_by': 'program'}


def parse(arg: str, systems, variants=(), where: str = 'config') -> tuple[str, list[str]]:
  """``'SYSTEM[,VARIANT...]'`` -> ``(SYSTEM, [VARIANT, ...])``, each checked against ``systems`` and ``variants``
  (an unknown name raises ValueError, naming the choices). A space in a system's name may be written ``_``."""
  system, *chosen = [part.strip() for part in arg.split(',')]
  names = {name.replace(' ', '_'): name for name in systems}
  if system not in systems and system not in names:
    raise ValueError(f'{where}: unknown row {system!r}; choose from {", ".join(sorted(names))}')
  unknown = [v for v in chosen if v not in variants]
  if unknown:
    raise ValueError(f'{where}: unknown variant {unknown[0]!r} of row {system!r}; choose from '
                     f'{", ".join(sorted(variants)) or "none"}')
  return (system if system in systems else names[system]), chosen


def arg_name(system: str) -> str:
  """A system's name as a config argument (no spaces, so that ``--config=path:arg`` needs no quotes)."""
  return system.replace(' ', '_')
