r"""The main job (``mlc.MAIN_ROW``) on this machine's kind of CPU (its widest vector set, ``records.cpu_kind``), each
record in docs/main_job/runs/<kind>/, apart from docs/mlc/runs so that no table row mixes machines: XLA:CPU's float
rounding differs between kinds of processor (docs/usage.md, "Rerunning a record").

  python -m experiments.main_job --seeds=0,1,2,3,4
"""

import functools
import re
import sys

from implicit_jax import runner
from implicit_jax.engine import cli
import experiments
from experiments import mlc, records

RUNS = mlc.ROOT / 'docs' / 'main_job' / 'runs'
DATASET = 'bibtex'
NAME = mlc.run_name(DATASET, mlc.MAIN_ROW, 'official')


def folder(kind: str) -> str:
  """'AVX-512, XLA capped at AVX2' -> 'avx-512-xla-capped-at-avx2'."""
  return re.sub(r'[^a-z0-9]+', '-', kind.lower()).strip('-')


def kinds(runs=RUNS) -> dict[str, list[dict]]:
  """``{kind: records}`` of the folders under ``runs``, by seed; a record in another kind's folder is refused."""
  out = {}
  for path in sorted(runs.glob(f'*/{NAME}-seed*.json')):
    record = records.load(path)
    kind = records.cpu_kind(record)
    if kind is None or folder(kind) != path.parent.name:
      raise ValueError(f'{path}: made on {kind or "a CPU it does not name"}, not in that kind\'s folder')
    out.setdefault(kind, []).append(record)
  return {k: sorted(rs, key=lambda r: r['seed']) for k, rs in out.items()}


def main_job_line(committed: list[dict], runs=RUNS) -> str:
  """README's main-job line: the committed runs' test F1 and their kind of CPU, then each kind's under ``runs``."""
  made_on = ' and '.join(sorted({records.cpu_kind(r) or f'an {r.get("machine", "unnamed machine").split(",")[0]} '
                                 'whose records name no vector set' for r in committed}))
  line = (f'Its committed runs ({len(committed)} seeds; `configs/bibtex.py` is the row '
          f'`{mlc.config_name(DATASET, mlc.MAIN_ROW)}`): test example F1 {mlc.cells(committed, "test_f1")} at '
          f'threshold 0.5, {mlc.cells(committed, "test_f1_tuned")} at the dev-tuned one '
          f'([docs/mlc_results.md](docs/mlc_results.md)), made on {made_on}.')
  others, seed0 = [], lambda rs: next((100 * r['test_f1'] for r in rs if r['seed'] == 0), None)
  for kind, rs in kinds(runs).items():
    at0, committed0 = seed0(rs), seed0(committed)
    others.append(f'on an {rs[0]["cpu"]["model"]} with {kind}, {mlc.cells(rs, "test_f1")} over {len(rs)} seeds'
                  + (f', seed 0 {at0:.2f} (committed: {committed0:.2f})' if None not in (at0, committed0) else '')
                  + f' ([docs/main_job/runs/{folder(kind)}](docs/main_job/runs/{folder(kind)}))')
  if others:
    line += (' Another kind of CPU rounds floats differently, and the same seeds give other figures '
             '([docs/usage.md](docs/usage.md), "Rerunning a record"; `python -m experiments.main_job` runs them): '
             + '; '.join(others) + '.')
  return line


def main():
  args = experiments.parse(__doc__, {'--data_dir': None, '--seeds': {'default': '0,1,2,3,4', 'type': experiments.seeds},
                                     '--table_only': None}, runner_flags=False)
  kind = records.cpu_kind({'cpu': records.cpu()})
  out = RUNS / folder(kind)
  experiments.run([runner.Run(f'{DATASET} {mlc.MAIN_ROW} seed {seed} ({kind})',
                              functools.partial(mlc.row_config, DATASET, mlc.MAIN_ROW, seed),
                              out / f'{NAME}-seed{seed}.json', f'/tmp/main_job/{out.name}/{NAME}-{seed}')
                   for seed in args.seeds], args, seconds=True)
  for name, rs in kinds().items():
    print(f'{name}: seeds {[r["seed"] for r in rs]}, test F1 @0.5 {mlc.cells(rs, "test_f1")}')


if __name__ == '__main__':
  sys.exit(cli.guarded(main))
