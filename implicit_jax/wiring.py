"""The package's tasks and methods as the engine reaches them (``engine/registry.py``'s ``Plugins``), resolved here
once; ``implicit_jax/__init__.py`` registers ``PACKAGE``, so that ``engine/`` imports no task or method module.

Besides their config sections, the methods' history lives here: the layouts of the earlier run records, which
``upgrade`` translates into today's with the values their runs used (the committed records of ``docs/`` hold all
four), and the fields they set that today's configs name otherwise (``retired``).
"""

from __future__ import annotations

import copy
import functools

from implicit_jax import methods, tasks
from implicit_jax.engine import config as config_lib, registry
from implicit_jax.solvers import reuse as reuse_lib

# The sections that held a GBI section of their own in the second format.
_GBI_SECTIONS = ('spen', 'dvn', 'rspen', 'nce_gbi', 'seal')


def upgrade(stored: dict) -> dict:
  """A record of an earlier format in the current one, with the values the run used; a current record is returned
  as it is. First format (before tasks were plug-ins: top-level ``solver``/``negatives``/``gbi`` that every method
  read, the cost in ``implicit``): each method's settings move into its own section. Second (a ``gbi`` in each GBI
  method's section: ``spen.gbi``, ``dvn.gbi``, ``rspen.gbi``, ``nce_gbi.gbi``, ``seal.gbi``): the method's ``gbi``
  becomes the shared top-level ``gbi`` if the method reads it, and is dropped if it did not (seal_dynamic's
  ``seal.gbi``, unread). Third (``implicit.solver.refresh`` and ``refresh_by``): the two become the one reuse policy
  ``implicit.solver.reuse`` they meant (``_upgrade_reuse``)."""
  if any(k in stored for k in ('solver', 'negatives')):
    stored = _upgrade_first(stored)
  return _upgrade_reuse(_upgrade_second(stored))


def _upgrade_second(stored: dict) -> dict:
  """A second-format record in the third format."""
  section = _second_format_section(stored.get('method', 'implicit'))
  if section not in _GBI_SECTIONS or 'gbi' not in (stored.get(section) or {}):
    return stored
  s = copy.deepcopy(stored)
  gbi = s[section].pop('gbi')
  if 'gbi' in methods.shared_of(s['method']):
    s['gbi'] = gbi
  if section == 'dvn':  # dvn's section held nothing else: dvn now reads the shared section alone
    del s['dvn']
  return s


def _second_format_section(method: str) -> str | None:
  """The section ``method`` read in the second format (dvn's is no section now, but was one then)."""
  return 'dvn' if method == 'dvn' else methods.section_of(method)


def _upgrade_first(stored: dict) -> dict:
  """A first-format record in the second format."""
  s = copy.deepcopy(stored)
  solver, negatives, gbi = s.pop('solver', {}), s.pop('negatives', {}), s.pop('gbi', {})
  implicit, seal = s.get('implicit', {}), s.get('seal', {})
  cost = {k: implicit[k] for k in ('cost', 'cost_scale') if k in implicit}
  if 'implicit' in s:
    refine = {'steps': implicit.pop('refine_steps', 0)}  # runs older than refinement did none
    refine.update({k: gbi[k] for k in ('step_size', 'rule') if k in gbi})
    implicit.update(negatives=negatives, solver=solver, refine=refine)
  s['spen'] = {**cost, 'gbi': gbi}
  s['dvn'] = {'gbi': gbi}
  s['nce_gbi'] = {'gbi': gbi, 'num_samples': negatives.get('num_samples', 0)}
  if 'task_optimizer' in seal:
    s['nce_gbi']['noise_optimizer'] = copy.deepcopy(seal['task_optimizer'])
  if 'infnet' in s:
    s['infnet'].update(cost)
  if 'seal' in s:
    seal.update(cost, gbi=gbi, num_samples=negatives.get('num_samples', 0), noise_scale=negatives.get('scale', 0.1))
    if 'bce_weight' in seal:
      seal['ce_weight'] = seal.pop('bce_weight')
  # The first format recorded every method's section: those its method did not read go. A field of no section
  # stays, for check_known to name: dropped, the run was read, and rewritten on resume, without what it recorded.
  sections = set(methods.SECTIONS) | set(methods.SHARED) | set(_GBI_SECTIONS)
  keep = set(config_lib.core_config().keys()) | set(config_lib.TASK_SECTIONS) | {_second_format_section(s['method'])}
  return {k: v for k, v in s.items() if k in keep or k not in sections}


# The third format's fields of the implicit term's reuse: the term solved on every ``refresh``-th step, by one program
# or by two the host picked (``refresh_by``). Each run used the absent one's default.
_REFRESH = ('refresh', 'refresh_by')


def _upgrade_reuse(stored: dict) -> dict:
  """A third-format record in today's: ``refresh`` k and ``refresh_by`` become ``reuse``, ``'none'`` for k = 1 (where
  ``refresh_by`` changed nothing), ``'r<k>'`` with ``'program'``, ``'r<k>h'`` with ``'host'``, the names of
  ``implicit_jax/solvers/reuse.py``. A record holding neither predates both: it stays as it is, its run having used
  the default (``'none'``)."""
  solver = (stored.get('implicit') or {}).get('solver') or {}
  if not any(k in solver for k in _REFRESH):
    return stored
  s = copy.deepcopy(stored)
  solver = s['implicit']['solver']
  period, by = solver.pop('refresh', 1), solver.pop('refresh_by', 'program')
  solver['reuse'] = 'none' if period == 1 else f'r{period}' + ('h' if by == 'host' else '')
  return s


def retired(field: str, value: str | None = None) -> str | None:
  """What sets ``field`` (a dotted name) now, a field of an earlier format, given ``value`` (as written; None: not
  known): ``engine/registry.py``'s ``Plugins.retired``. None for any other field."""
  if field not in {f'implicit.solver.{k}' for k in _REFRESH}:
    return None
  value = (value or '').strip()
  if field == 'implicit.solver.refresh' and value.isdigit() and int(value) >= 1:
    k = int(value)
    new = "'none' (the default)" if k == 1 else f"'r{k}' (or 'r{k}h': two programs the host picks)"
  elif field == 'implicit.solver.refresh_by' and value in ('program', 'host'):
    new = f"'r<k>{'h' if value == 'host' else ''}', k the period"
  else:
    new = reuse_lib.FORMS
  return f'a retired field: set implicit.solver.reuse to {new}'


class _Package(registry.Plugins):
  """The built-in task families and methods, and those named by import path (``implicit_jax/plugins.py``). The
  functions are looked up in their modules as ``parts`` resolves a config, so that a test replacing one is seen."""

  def parts(self, task, method):
    family = tasks.family(task)  # the task first: an unknown one is named before the method
    sections = {**family.default_config(), **methods.shared_sections(), **methods.default_sections()}
    spec = methods.resolve(method)
    if spec.section is not None and spec.section.name not in sections:  # a plug-in's new section
      sections[spec.section.name] = spec.section.defaults()
    return config_lib.Parts(task, method, sections, spec.section and spec.section.name, spec.shared,
                            make_task=tasks.get_task, build_method=functools.partial(methods.build, spec=spec))

  def upgrade(self, stored):
    return upgrade(stored)

  def retired(self, field, value=None):
    return retired(field, value)


PACKAGE = _Package()
