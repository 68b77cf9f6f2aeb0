r"""What a user waits for: the whole main job, `python -m implicit_jax.main --config=configs/bibtex.py`, in this
tree and in another commit of the repository, run one after the other in turns (A, B, then B, A, ...), each in its
own process and workdir, from the start (imports, data, compilation, training, evaluation).

  python -m benchmarks.main_job --baseline=29b2bf4 --reps=5

The default baseline is the last commit before issue 45 changed the main job (five inner steps, 40 epochs). Each
run's test F1 is read from its metrics.json: the two jobs are different designs, so the table shows what each
computes beside what it costs; the same commit gives the same F1 on one machine (another CPU may round
differently and drift: docs/usage.md, "Rerunning a record"). Wall-clock seconds move with the
machine's load; the turns put a burst of load on both alike, and the table gives medians and the share of turns
this tree won.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks import common

BASELINE = '29b2bf4'  # the main job before issue 45: T_inner 5, the term on every step, 40 epochs


def run_job(tree: Path, config: str, workdir: Path, env: dict | None = None) -> tuple[float, dict]:
  """Seconds of one whole run of the main job in ``tree`` (under ``env``, default this process's) and its
  metrics.json."""
  start = time.perf_counter()
  done = subprocess.run([sys.executable, '-m', 'implicit_jax.main', f'--config={config}', f'--workdir={workdir}'],
                        cwd=tree, capture_output=True, text=True, check=False, env=env)
  seconds = time.perf_counter() - start
  if done.returncode:
    raise SystemExit(f'{tree}: the main job failed ({done.returncode}): {done.stderr.strip().splitlines()[-1:]}')
  return seconds, json.loads((workdir / 'metrics.json').read_text())


def main():
  p = common.parser(__doc__, reps=5)
  p.add_argument('--baseline', default=BASELINE, help=f'commit to compare with (default {BASELINE})')
  p.add_argument('--config', default='configs/bibtex.py', help='the main job\'s config (default configs/bibtex.py)')
  args = p.parse_args()
  rev = subprocess.run(['git', 'rev-parse', '--short', args.baseline], cwd=common.ROOT, capture_output=True,
                       text=True, check=False)
  if rev.returncode:
    p.error(f'--baseline: {args.baseline!r} is not a commit of this repository')
  if not (common.ROOT / args.config.split(':')[0]).is_file():  # else each timed run fails, after the worktree is made
    p.error(f'--config: no file {args.config.split(":")[0]} in the repository (a config file, e.g. configs/bibtex.py)')
  here = subprocess.run(['git', 'rev-parse', '--short', 'HEAD'], cwd=common.ROOT, capture_output=True, text=True,
                        check=True).stdout.strip()
  dirty = subprocess.run(['git', 'status', '--porcelain', '--untracked-files=no'], cwd=common.ROOT,
                         capture_output=True, text=True, check=True).stdout.strip()
  machine = common.machine()
  seconds, metrics = {'this tree': [], 'baseline': []}, {}
  with tempfile.TemporaryDirectory() as tmp:
    old = Path(tmp) / 'baseline'
    subprocess.run(['git', 'worktree', 'add', '--detach', '-q', str(old), rev.stdout.strip()], cwd=common.ROOT,
                   check=True)
    try:
      trees = {'this tree': common.ROOT, 'baseline': old}
      for rep in range(args.reps):
        order = list(trees) if rep % 2 == 0 else list(trees)[::-1]
        for name in order:
          s, metrics[name] = run_job(trees[name], args.config, Path(tmp) / f'{name.replace(" ", "_")}-{rep}')
          seconds[name].append(s)
          print(f'rep {rep + 1}/{args.reps} {name}: {s:.1f} s, test F1 @0.5 {metrics[name]["test_f1"]:.4f}',
                flush=True)
    finally:
      subprocess.run(['git', 'worktree', 'remove', '--force', str(old)], cwd=common.ROOT, check=False)
  won = sum(a < b for a, b in zip(seconds['this tree'], seconds['baseline']))
  ratio = statistics.median(seconds['this tree']) / statistics.median(seconds['baseline'])
  label = {'this tree': f'this tree ({here}{", with uncommitted changes" if dirty else ""})',
           'baseline': f'baseline ({rev.stdout.strip()})'}
  quartiles = lambda xs: '-'.join(f'{q:.1f}' for q in np.percentile(xs, [25, 75]))
  rows = [[label[n], f'{statistics.median(seconds[n]):.1f}', quartiles(seconds[n]),
           f'{100 * metrics[n]["test_f1"]:.2f}', metrics[n]['best_epoch'], f'{metrics[n]["train_seconds"]:.1f}']
          for n in ('this tree', 'baseline')]
  body = '\n'.join([
      '### The main job, whole (`benchmarks/main_job.py`)', '', common.section_header(machine),
      f'`python -m implicit_jax.main --config={args.config}` from a fresh workdir, {args.reps} runs of each tree in '
      'turns. Seconds: the whole process (imports, data, compilation, training, evaluation); train seconds: the '
      'training loop\'s own count (its last run).', '',
      common.table(['tree', 'seconds, median', 'p25-p75', 'test F1 @0.5 x 100', 'best epoch',
                    'train seconds'], rows), '',
      f'This tree over the baseline: **{ratio:.2f}x** the wall-clock time (medians), faster in {won} of '
      f'{args.reps} turns.'])
  print(body)
  common.write_section(args.out, 'main_job', body)


if __name__ == '__main__':
  main()
