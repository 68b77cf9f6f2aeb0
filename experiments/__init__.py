"""The paper's experiments, beside the library: run records, results tables, sweeps, the claims ledger, rescoring.

Run from the repository root as modules, e.g. ``python -m experiments.reproduce_mlc --table_only``. A table's rows
are written in the config files and named by an argument (``--config=configs/bibtex.py:implicit-cd``); the modules
here keep the bookkeeping the library does not know: where each family's records live, how a record names its row,
the published numbers, and how the tables and README blocks are written. Every script that makes runs hands them to
implicit_jax.runner and takes its flags (``add_runner_flags``): one run after the other by default, at once on Ray
with ``--ray``, ``--address``, ``--gpus_per_run`` or ``--cpus_per_run`` (docs/usage.md, "Many runs at once").

  mlc       configs/{bibtex,delicious,genbase,cal500,spo_fun}.py  reproduce_mlc.py, compare_methods.py, ablation_mlc.py
  tagging   configs/{pos,ner,ner_fixed,ner_plus}.py               reproduce_tagging.py
  cora      configs/cora.py                                       reproduce_cora.py
  horses    configs/horses.py                                     reproduce_horses.py
"""

from __future__ import annotations

import argparse
import os
import tomllib
from pathlib import Path

from implicit_jax.engine import rows
from implicit_jax.engine.rows import arg_name  # noqa: F401  (the scripts' name for it)

ROOT = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent
# The papers' published numbers and the tables' long prose, as data.
TEXT = tomllib.loads((HERE / 'published.toml').read_text(encoding='utf-8'))


def sweeps(family: str) -> dict:
  """``family``'s named sweeps (sweeps.toml): name -> its table, whose ``variants`` maps each variant to its
  overrides (lists as tuples, as the configs write them); a sweep ``like`` another takes its variants, with
  ``train_file`` (a path in the repository) as data.train_file of each."""
  out = tomllib.loads((HERE / 'sweeps.toml').read_text(encoding='utf-8'))[family]
  for sweep in out.values():
    if 'like' in sweep:
      extra = {'data.train_file': str(ROOT / sweep['train_file'])} if 'train_file' in sweep else {}
      sweep['variants'] = {k: dict(v, **extra) for k, v in out[sweep['like']]['variants'].items()}
    sweep['variants'] = {k: {key: tuple(v) if isinstance(v, list) else v for key, v in overrides.items()}
                         for k, overrides in sweep['variants'].items()}
  return out


def row_config(name: str, values: dict | None = None):
  """Row ``name``'s config (``configs/<file>.py[:<arg>]``): ``get_config(arg)``, named in ``config_file`` where an
  argument picks a row, then ``values`` (flattened keys: ``seed``, ``data.data_dir``) set."""
  from implicit_jax.engine import config as config_lib  # pylint: disable=import-outside-toplevel
  path, _, arg = name.partition(':')
  config = config_lib.from_file(ROOT / path, arg=arg or None)
  if arg:
    config.config_file = name
  config.update_from_flattened_dict(values or {})
  return config


def run(runs, args, **options):
  """``runs`` through implicit_jax.runner, each record written by ``records.save`` (or ``writer``), at once on Ray
  where the flags of ``add_runner_flags`` (or custom_defaults's --workers) say so."""
  from implicit_jax import runner  # pylint: disable=import-outside-toplevel
  from experiments import records  # pylint: disable=import-outside-toplevel
  options.setdefault('writer', records.save)
  return runner.run_all(runs, ray=ray_options(args, getattr(args, 'workers', 1)), provenance=records.made_here,
                        **options)


def parse(doc: str, flags: dict, runner_flags: bool = True) -> argparse.Namespace:
  """A script's command line, parsed: --data_dir, --seeds, --table_only and ``flags`` ({flag: add_argument's
  keywords}, which may replace, or with None drop, the first three), then the runner's flags."""
  parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
  every = {'--data_dir': {'default': os.environ.get('IMPLICIT_JAX_DATA_DIR', str(ROOT.parent / 'shared' / 'data'))},
           '--seeds': {'default': '0,1,2', 'type': seeds}, '--table_only': {'action': 'store_true'}, **flags}
  for flag, keywords in every.items():
    if keywords is not None:
      parser.add_argument(flag, **keywords)
  if runner_flags:
    add_runner_flags(parser)
  args = parser.parse_args()
  args.error = parser.error
  return args


def config_rows(name: str):
  """The module of ``configs/<name>.py``, whose rows (``SYSTEMS``, ...) a family's tables are made of."""
  return rows.load_module(ROOT / 'configs' / f'{name}.py')


def names(choices, empty: bool = False):
  """An argparse ``type``: a comma-separated list of names, each one of ``choices``, refused before any work where
  one is unknown (a typo would run nothing and exit 0) or, unless ``empty``, none is given."""
  def parse_names(text: str) -> list[str]:
    values = [v.strip() for v in text.split(',') if v.strip()]
    unknown = [v for v in values if v not in choices]
    if unknown or not (values or empty):
      what = f'unknown {unknown[0]!r}' if unknown else 'empty'
      raise argparse.ArgumentTypeError(f'{what}; choose from {", ".join(choices)}')
    return values
  return parse_names


def integers(text: str) -> list[int]:
  """An argparse ``type``: a comma-separated list of integers (seeds, sizes, step counts)."""
  try:
    return [int(s) for s in text.split(',')]
  except ValueError:
    raise argparse.ArgumentTypeError(f'a comma-separated list of integers, got {text!r}') from None


seeds = integers  # --seeds' type


def chosen_variants(args: argparse.Namespace, only: str, variants) -> list[str]:
  """A sweep's ``--only``: the variants it names (default: all), an unknown one refused (``args``: ``parse``'s)."""
  chosen = [v for v in only.split(',') if v] or list(variants)
  unknown = [v for v in chosen if v not in variants]
  if unknown:
    args.error(f'--only: unknown variants {unknown}; choose from {list(variants)}')
  return chosen


class _OnRay(argparse.Action):
  """A flag that runs the runs on Ray: refused, naming itself and the extra to install, where Ray is absent."""

  def __call__(self, parser, namespace, values, option_string=None):
    from implicit_jax import ray_runs  # pylint: disable=import-outside-toplevel
    if not ray_runs.installed():
      raise argparse.ArgumentError(self, f'runs on Ray, which is not installed here: {ray_runs.EXTRA}')
    setattr(namespace, self.dest, True if values == [] else values)


def _share(check):
  """An argparse ``type`` from a ray_runs check: a number, refused in one line naming the flag."""
  def parse_share(text: str) -> float:
    try:
      value = float(text)
    except ValueError:
      raise argparse.ArgumentTypeError(f'a number, got {text!r}') from None
    try:
      return check(value)
    except ValueError as e:
      raise argparse.ArgumentTypeError(str(e)) from None
  return parse_share


def add_runner_flags(parser: argparse.ArgumentParser) -> None:
  """The flags that make a script's runs at once as Ray tasks; without them, one after the other in its process."""
  from implicit_jax import ray_runs  # pylint: disable=import-outside-toplevel
  group = parser.add_argument_group('runs at once, on Ray (the extra: ' + ray_runs.EXTRA + ')')
  group.add_argument('--ray', action=_OnRay, nargs=0, default=False,
                     help='make the runs as Ray tasks on this machine, as many at once as it has CPUs (--cpus_per_run)')
  group.add_argument('--address', action=_OnRay, default=None,
                     help='a Ray cluster to make the runs on: host:port as `ray start --head` prints it, or auto')
  group.add_argument('--gpus_per_run', action=_OnRay, type=_share(ray_runs.check_gpus), default=None,
                     help='each run\'s share of a GPU: 0.25 places four runs on a device, each given a quarter of '
                          'its memory (default: a GPU a run where there are GPUs; 0: on CPUs)')
  group.add_argument('--cpus_per_run', action=_OnRay, type=_share(ray_runs.check_cpus), default=None,
                     help='CPUs each run holds (default 1)')


def runs_at_once(text: str) -> int:
  """An argparse ``type``: how many runs at once on this machine (custom_defaults's --workers): 1, or more on Ray,
  refused where Ray is not installed."""
  from implicit_jax import ray_runs  # pylint: disable=import-outside-toplevel
  try:
    count = int(text)
  except ValueError:
    count = 0
  if count < 1:
    raise argparse.ArgumentTypeError(f'a count of runs at once, 1 or more, got {text!r}')
  if count > 1 and not ray_runs.installed():
    raise argparse.ArgumentTypeError(f'{count} runs at once run on Ray, which is not installed here: '
                                     f'{ray_runs.EXTRA} (or 1: one after the other)')
  return count


def ray_options(args, workers: int = 1):
  """``run_all``'s ``ray`` option from the flags of ``add_runner_flags`` (those ``args`` lacks count as not given):
  None unless one was given. ``workers`` > 1 (custom_defaults's --workers, parsed by ``runs_at_once``): that many
  runs at once on this machine, as ``--ray --cpus_per_run=CORES/workers``."""
  from implicit_jax import ray_runs  # pylint: disable=import-outside-toplevel
  address, gpus, cpus = (getattr(args, k, None) for k in ('address', 'gpus_per_run', 'cpus_per_run'))
  if workers > 1:
    if address or cpus is not None:
      raise ValueError(f'--workers={workers} makes runs at once on this machine; --address and --cpus_per_run say '
                       'it otherwise: give one or the other')
    cpus = (os.cpu_count() or 1) / workers
  if not (getattr(args, 'ray', False) or address or gpus is not None or cpus is not None):
    return None
  return ray_runs.RayOptions(address=address, gpus_per_run=gpus, cpus_per_run=1.0 if cpus is None else cpus)
