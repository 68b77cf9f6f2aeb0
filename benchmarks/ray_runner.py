r"""A small table made by implicit_jax.runner one run after another and as Ray tasks on this machine: the same
records, and what Ray saves in wall-clock time.

  python -m benchmarks.ray_runner --reps=3

The table: configs/tiny.py on ``--seeds`` for ``--epochs`` epochs, recorded as the experiments record their runs
(experiments/records.py). Each contender is one process, as a user runs a script: imports, Ray's start (the Ray
contender), every run, every record. The two take turns (A, B, then B, A, ...) so that a burst of load from other
jobs falls on both; each turn's records of the two are compared, all but the fields that say how and when a
record was made (``HOW_MADE``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# A record's fields that say how it was made, not what the run computed: they differ between any two runs.
HOW_MADE = ('command', 'date', 'machine', 'train_seconds')
CONTENDERS = ('sequential', 'ray')


def runs(folder: Path, seeds, epochs: int):
  """The table's runs: configs/tiny.py on each seed, its record under ``folder/records``."""
  from implicit_jax import runner  # pylint: disable=import-outside-toplevel
  from implicit_jax.engine import config as config_lib  # pylint: disable=import-outside-toplevel
  out = []
  for seed in seeds:
    config = config_lib.from_file(ROOT / 'configs' / 'tiny.py')
    config.seed, config.num_epochs = seed, epochs
    out.append(runner.Run(f'tiny seed {seed}', config, folder / 'records' / f'tiny-seed{seed}.json',
                          str(folder / 'work' / f'tiny-{seed}')))
  return out


def make(folder: Path, seeds, epochs: int, on_ray: bool) -> None:
  """One contender's whole table, in this process."""
  from implicit_jax import ray_runs, runner  # pylint: disable=import-outside-toplevel
  from experiments import records  # pylint: disable=import-outside-toplevel
  runner.run_all(runs(folder, seeds, epochs), writer=records.save, provenance=records.made_here,
                 ray=ray_runs.RayOptions() if on_ray else None)


def differences(a: dict, b: dict) -> list[str]:
  """The fields, but ``HOW_MADE``, where two records of one run differ."""
  return sorted(k for k in set(a) | set(b) if k not in HOW_MADE and a.get(k) != b.get(k))


def timed(contender: str, folder: Path, args) -> float:
  """Seconds of one contender's process, from a fresh folder."""
  shutil.rmtree(folder, ignore_errors=True)
  command = [sys.executable, '-m', 'benchmarks.ray_runner', f'--one={contender}', f'--folder={folder}',
             f'--seeds={",".join(map(str, args.seeds))}', f'--epochs={args.epochs}']
  start = time.perf_counter()
  done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
  seconds = time.perf_counter() - start
  if done.returncode:
    raise SystemExit(f'{contender} failed ({done.returncode}): {done.stderr.strip()[-2000:]}')
  return seconds


def main():
  from benchmarks import common  # pylint: disable=import-outside-toplevel
  import experiments  # pylint: disable=import-outside-toplevel
  p = common.parser(__doc__, reps=3)
  p.add_argument('--seeds', default='0,1,2,3,4,5', type=experiments.seeds)
  p.add_argument('--epochs', type=int, default=4, help='each run\'s epochs (configs/tiny.py: 8 steps an epoch)')
  p.add_argument('--one', choices=CONTENDERS, help=argparse.SUPPRESS)  # a contender's own process
  p.add_argument('--folder', help=argparse.SUPPRESS)
  args = p.parse_args()
  if args.one:
    make(Path(args.folder), args.seeds, args.epochs, args.one == 'ray')
    return
  from implicit_jax import ray_runs  # pylint: disable=import-outside-toplevel
  if not ray_runs.installed():
    p.error(f'the Ray contender needs Ray: {ray_runs.EXTRA}')
  machine = common.machine()
  seconds, ratios, same, compared, differ = {c: [] for c in CONTENDERS}, [], 0, 0, set()
  with tempfile.TemporaryDirectory() as tmp:
    for rep in range(args.reps):
      order = CONTENDERS if rep % 2 == 0 else CONTENDERS[::-1]
      for contender in order:
        seconds[contender].append(timed(contender, Path(tmp) / contender, args))
        print(f'rep {rep + 1}/{args.reps} {contender}: {seconds[contender][-1]:.1f} s', flush=True)
      ratios.append(seconds['ray'][-1] / seconds['sequential'][-1])
      for seed in args.seeds:
        a, b = (json.loads((Path(tmp) / c / 'records' / f'tiny-seed{seed}.json').read_text()) for c in CONTENDERS)
        fields = differences(a, b)
        compared, same, differ = compared + 1, same + (not fields), differ | set(fields)
  rows = [[c, f'{statistics.median(seconds[c]):.1f}', f'{min(seconds[c]):.1f}-{max(seconds[c]):.1f}']
          for c in CONTENDERS]
  body = '\n'.join([
      '## The runner on Ray against one run after another (`benchmarks/ray_runner.py`)', '',
      common.section_header(machine),
      f'A table of {len(args.seeds)} runs of configs/tiny.py ({args.epochs} epochs, seeds '
      f'{",".join(map(str, args.seeds))}) made by `implicit_jax.runner.run_all`: one run after another in the '
      f'script\'s process, and as Ray tasks on this machine (`ray=RayOptions()`: Ray started for the call, one CPU '
      f'a run, {os.cpu_count()} at once). Seconds: the whole process of each, {args.reps} turns each, taken in '
      'turns.', '',
      common.table(['contender', 'seconds, median', 'fastest-slowest'], rows), '',
      f'Ray over one after another: **{statistics.median(ratios):.2f}x** the wall-clock time (median of the turns\' '
      f'ratios: {", ".join(f"{r:.2f}" for r in ratios)}). Records equal but for {", ".join(HOW_MADE)}: '
      f'**{same} of {compared}**' + (f' (differing: {", ".join(sorted(differ))})' if differ else '') + '. Load '
      f'average at the end (1, 5, 15 min): {", ".join(f"{x:.2f}" for x in os.getloadavg())}.', '',
      'Runs packed on a GPU (`--gpus_per_run=0.25`, four runs a device): not measured, no GPU in this session.'])
  print(body)
  common.write_section(args.out, 'ray_runner', body)


if __name__ == '__main__':
  main()
