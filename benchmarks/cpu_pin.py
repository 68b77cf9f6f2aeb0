r"""Does capping XLA's CPU instruction set make the main job repeat across kinds of CPU, and at what cost?

  python -m benchmarks.cpu_pin --isas=AVX2,AVX,SSE4_2 --reps=3

The main job (`python -m implicit_jax.main --config=configs/bibtex.py`, seed 0 of the row whose committed records the
README reports) run in turns, as it is and under each `XLA_FLAGS=--xla_cpu_max_isa=ISA`, each run in its own process
and workdir (benchmarks/main_job.py's ``run_job``; the order flips every turn). A cap would make runs repeat across
kinds if, here, on another kind of CPU than the one that made the committed record
(docs/mlc/runs/bibtex-implicit-cd-gcr-T1-r3h-seed0.json), it gave the record's test F1: the table shows each
setting's test F1 and best epoch beside the record's, and its seconds (the whole process, and the training loop's
own count) against the uncapped run's, medians of the turns.

Before the turns, a probe in fresh processes: whether a small fused program's output bits move when the cap is
given in XLA_FLAGS, and when it is given as a jit compiler option (``compiler_options``, the way
implicit_jax/engine/xla_options.py passes its CPU options).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from benchmarks import common
from benchmarks.main_job import run_job
from experiments import mlc, records

RECORD = common.ROOT / 'docs' / 'mlc' / 'runs' / f'{mlc.run_name("bibtex", mlc.MAIN_ROW, "official")}-seed0.json'
CONFIG = 'configs/bibtex.py'  # the row MAIN_ROW at seed 0, the record's config

# A softplus-tanh network's fused elementwise work and reductions, whose output bits depend on the code XLA emits.
PROBE = '''
import hashlib, sys
import numpy as np
import jax, jax.numpy as jnp
options = {'xla_cpu_max_isa': sys.argv[1]} if len(sys.argv) > 1 else {}
rng = np.random.default_rng(0)
a, w, v = (jnp.asarray(rng.standard_normal(s) * c, jnp.float32) for s, c in
           (((32, 1836), 1.0), ((1836, 150), 0.02), ((150, 159), 0.1)))
def f(a, w, v):
  z = jnp.tanh(jax.nn.softplus(a @ w) @ v)
  return jnp.exp(z).sum(axis=1), jax.nn.sigmoid(z), jnp.log1p(jnp.abs(z)).mean()
out = jax.jit(f, compiler_options=options)(a, w, v)
print(hashlib.sha1(b''.join(np.asarray(o).tobytes() for o in out)).hexdigest())
'''


def env_with(isa: str | None) -> dict:
  """This process's environment, with ``--xla_cpu_max_isa=isa`` added to XLA_FLAGS (none for ``None``)."""
  env = dict(os.environ)
  flags = env.get('XLA_FLAGS', '')
  if isa:
    env['XLA_FLAGS'] = f'{flags} --xla_cpu_max_isa={isa}'.strip()
  return env


def probe(isa: str | None = None, option: str | None = None) -> str:
  """The probe's output digest under the cap ``isa`` in XLA_FLAGS, or ``option`` as a jit compiler option."""
  done = subprocess.run([sys.executable, '-c', PROBE] + ([option] if option else []), env=env_with(isa),
                        capture_output=True, text=True, check=True)
  return done.stdout.strip()


def main():
  p = common.parser(__doc__, reps=3)
  p.add_argument('--isas', default='AVX2,AVX,SSE4_2', help='the caps to try, comma-separated (default AVX2,AVX,SSE4_2)')
  args = p.parse_args()
  isas = [s.strip() for s in args.isas.split(',') if s.strip()]
  machine = common.machine()
  record = records.load(RECORD)
  here = records.cpu_kind({'cpu': records.cpu()})
  lowest = isas[-1]
  base = probe()
  moved = {'XLA_FLAGS': probe(isa=lowest) != base, 'compiler option': probe(option=lowest) != base}
  print(f'probe, capped at {lowest}: output moved in XLA_FLAGS {moved["XLA_FLAGS"]}, as a jit compiler option '
        f'{moved["compiler option"]}', flush=True)

  settings = {'as it is': None, **{f'XLA capped at {isa}': isa for isa in isas}}
  seconds = {name: [] for name in settings}
  metrics = {name: [] for name in settings}
  with tempfile.TemporaryDirectory() as tmp:
    for rep in range(args.reps):
      order = list(settings) if rep % 2 == 0 else list(settings)[::-1]
      for name in order:
        workdir = Path(tmp) / f'{settings[name] or "none"}-{rep}'
        s, m = run_job(common.ROOT, CONFIG, workdir, env=env_with(settings[name]))
        seconds[name].append(s)
        metrics[name].append(m)
        print(f'rep {rep + 1}/{args.reps} {name}: {s:.1f} s, test F1 @0.5 {m["test_f1"]:.6f}, best epoch '
              f'{m["best_epoch"]}', flush=True)

  base_s = statistics.median(seconds['as it is'])
  base_train = statistics.median([m['train_seconds'] for m in metrics['as it is']])
  quartiles = lambda xs: '-'.join(f'{q:.1f}' for q in np.percentile(xs, [25, 75]))
  rows, repeats = [], []
  for name in settings:
    f1s = sorted({m['test_f1'] for m in metrics[name]})
    same = f1s == [record['test_f1']]
    if same and settings[name]:
      repeats.append(name)
    train = statistics.median([m['train_seconds'] for m in metrics[name]])
    # each turn's own ratio: a burst of load that lengthened one turn lengthened both of its runs
    turns = [a / b for a, b in zip(seconds[name], seconds['as it is'])]
    rows.append([name, ', '.join(f'{100 * f:.2f}' for f in f1s) + (' (differs between turns)' if len(f1s) > 1 else ''),
                 ', '.join(str(e) for e in sorted({m['best_epoch'] for m in metrics[name]})),
                 'yes' if same else 'no', f'{statistics.median(seconds[name]):.1f}', quartiles(seconds[name]),
                 f'{statistics.median(seconds[name]) / base_s:.3f}', f'{train:.1f}', f'{train / base_train:.3f}',
                 '–' if not settings[name] else f'{min(turns):.2f}-{max(turns):.2f}'])
  body = '\n'.join([
      '### Capping XLA\'s CPU instruction set (`benchmarks/cpu_pin.py`)', '', common.section_header(machine),
      f'This CPU: {here}. The committed record ({RECORD.relative_to(common.ROOT)}): test F1 @0.5 '
      f'{100 * record["test_f1"]:.2f} at best epoch {record["best_epoch"]}, made on "{record.get("machine")}", '
      f'{records.cpu_kind(record) or "whose vector sets it does not name"}.', '',
      f'Probe (a small fused program, fresh processes): capped at {lowest}, its output bits '
      f'{"move" if moved["XLA_FLAGS"] else "do not move"} when the cap is in XLA_FLAGS and '
      f'{"move" if moved["compiler option"] else "do not move"} when it is a jit compiler option '
      f'(`compiler_options={{"xla_cpu_max_isa": "{lowest}"}}`).', '',
      f'`python -m implicit_jax.main --config={CONFIG}` from a fresh workdir, {args.reps} turns of each setting. '
      'Seconds: the whole process; train seconds: the training loop\'s own count; x: over the uncapped run\'s '
      'median; per turn: the lowest and highest ratio of a run\'s seconds to the uncapped run\'s of its turn (a '
      'range that holds 1 does not tell the two apart under this load).', '',
      common.table(['setting', 'test F1 @0.5 x 100', 'best epoch', 'the record\'s F1', 'seconds, median', 'p25-p75',
                    'x', 'train seconds, median', 'x', 'x per turn'], rows), '',
      ('A cap that repeats the committed record on this CPU: ' + ', '.join(repeats) + '.') if repeats else
      'No cap repeats the committed record on this CPU: none makes runs repeat across these kinds of CPU.'])
  print(body)
  common.write_section(args.out, 'cpu_pin', body)
  print(json.dumps({n: [m['test_f1'] for m in metrics[n]] for n in settings}))


if __name__ == '__main__':
  main()
