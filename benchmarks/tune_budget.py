r"""Issue 63's check of ``python -m implicit_jax.tune``: implicit CD (configs/custom.py as given) tuned with a
10-minute budget on three multi-label files, and one of them killed by SIGKILL part-way and rerun by the same
command; writes docs/tune/budget.md (every figure read from the tunes' records, none typed).

  python -m benchmarks.tune_budget --data_dir=../shared/data [--budget_minutes=10] [--kill_after=240] [--lanes=2]

The tunes run ``--lanes`` at a time (two on the 2-core machine it was made on: the killed tune beside the
undisturbed tune of the same file, so that both see alike load). Each is ``python -m implicit_jax.tune`` in its own
process, its wall time measured around the command (start-up included).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import datetime
import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def files(data_dir: str) -> dict:
  """The three files: name -> the tune's --config.data.* flags."""
  mulan = Path(data_dir) / 'mulan'
  return {
      'cal500': [f'--config.data.train_file={mulan / "cal500" / "cal500.arff"}',
                 f'--config.data.xml_file={mulan / "cal500" / "cal500.xml"}'],
      'genbase': [f'--config.data.train_file={mulan / "genbase" / "genbase-train.arff"}',
                  f'--config.data.test_file={mulan / "genbase" / "genbase-test.arff"}',
                  f'--config.data.xml_file={mulan / "genbase" / "genbase.xml"}'],
      'scaled_1500': [f'--config.data.train_file={ROOT / "tests" / "fixtures" / "mlc" / "scaled_1500.arff"}'],
  }


def command(flags, workdir, budget) -> list[str]:
  return [sys.executable, '-m', 'implicit_jax.tune', '--config=configs/custom.py', *flags, '--config.log_every=1000',
          f'--workdir={workdir}', f'--budget_minutes={budget:g}']


def env() -> dict:
  return dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get('PYTHONPATH', '')])))


def straight(name, flags, workdir, budget) -> dict:
  start = time.perf_counter()
  done = subprocess.run(command(flags, workdir, budget), cwd=ROOT, env=env(), capture_output=True, text=True,
                        check=False)
  wall = time.perf_counter() - start
  if done.returncode:
    raise SystemExit(f'{name}: the tune failed ({done.returncode}): {done.stderr[-2000:]}')
  return {'name': name, 'wall': wall, 'out': done.stdout, 'workdir': str(workdir)}


def killed(name, flags, workdir, budget, after) -> dict:
  """The tune, SIGKILLed ``after`` seconds in, then the same command."""
  start = time.perf_counter()
  proc = subprocess.Popen(command(flags, workdir, budget), cwd=ROOT, env=env(), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True)
  try:
    proc.wait(timeout=after)
    raise SystemExit(f'{name}: the tune ended before its kill at {after} s: give a smaller --kill_after')
  except subprocess.TimeoutExpired:
    os.kill(proc.pid, signal.SIGKILL)
  out, _ = proc.communicate()
  first = time.perf_counter() - start
  made = [int(line.split()[2]) for line in out.splitlines() if line.startswith('tune: trial ') and 'log:' in line]
  start = time.perf_counter()
  done = subprocess.run(command(flags, workdir, budget), cwd=ROOT, env=env(), capture_output=True, text=True,
                        check=False)
  if done.returncode:
    raise SystemExit(f'{name}: the rerun failed ({done.returncode}): {done.stderr[-2000:]}')
  rerun = [int(line.split()[2]) for line in done.stdout.splitlines()
           if line.startswith('tune: trial ') and 'log:' in line]
  return {'name': name, 'wall': first + time.perf_counter() - start, 'killed_at': first, 'before_kill': made,
          'rerun': rerun, 'out': done.stdout, 'first_line': done.stdout.splitlines()[0], 'workdir': str(workdir)}


def summary(tune: dict) -> dict:
  plan = json.loads((Path(tune['workdir']) / 'tune.json').read_text())
  trials = [t for t in plan['trials'] if not t['killed']]
  states = {}
  for t in trials:
    key = ('stopped' if t['stopped'] and 'budget' in t['stopped'] else
           {'COMPLETE': 'finished', 'PRUNED': 'pruned', 'FAIL': 'diverged'}.get(t['state'], t['state']))
    states[key] = states.get(key, 0) + 1
  default = next(t for t in trials if t['default'])
  chosen = next(t for t in trials if t['name'] == plan['chosen'] and t['state'] == 'COMPLETE')
  return {'plan': plan, 'trials': trials, 'states': states, 'default': default, 'chosen': chosen}


def fig(x) -> str:
  return '' if x is None else f'{100 * x:.2f}'


def main():
  parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
  parser.add_argument('--data_dir', default=str(ROOT.parent / 'shared' / 'data'))
  parser.add_argument('--budget_minutes', type=float, default=10.0)
  parser.add_argument('--kill_after', type=float, default=240.0, help='seconds into the killed tune')
  parser.add_argument('--kill_file', default='cal500')
  parser.add_argument('--lanes', type=int, default=2)
  parser.add_argument('--workdir', default='/tmp/implicit_jax/tune_budget')
  parser.add_argument('--out', default=str(ROOT / 'docs' / 'tune' / 'budget.md'))
  args = parser.parse_args()
  root = Path(args.workdir)
  if root.exists():
    raise SystemExit(f'{root} exists: give a new --workdir (the tunes would resume there)')
  chosen = files(args.data_dir)
  started = datetime.datetime.now().isoformat(timespec='minutes')
  with concurrent.futures.ThreadPoolExecutor(args.lanes) as pool:
    # the killed tune second in the queue: it runs beside the undisturbed tune of its file
    order = [args.kill_file, *(n for n in chosen if n != args.kill_file)]
    jobs = {order[0]: pool.submit(straight, order[0], chosen[order[0]], root / order[0], args.budget_minutes)}
    kill = pool.submit(killed, args.kill_file, chosen[args.kill_file], root / f'{args.kill_file}-killed',
                       args.budget_minutes, args.kill_after)
    jobs.update({name: pool.submit(straight, name, chosen[name], root / name, args.budget_minutes)
                 for name in order[1:]})
    results = {name: job.result() for name, job in jobs.items()}
    k = kill.result()
  rows = []
  for name, tune in results.items():
    s = summary(tune)
    states = ', '.join(f'{v} {key}' for key, v in sorted(s['states'].items()))
    rows.append(f'| {name} | {s["plan"]["folds_note"]} | {tune["wall"] / 60:.1f} | {len(s["trials"])} ({states}) | '
                f'{fig(s["default"]["score"])} | {fig(s["chosen"]["score"])} | {s["chosen"]["name"]} |')
  ks, us = summary(k), summary(results[args.kill_file])
  repeated = sorted(set(k['rerun']) & set(k['before_kill']))
  # trials the two tunes both made, compared by number: the same settings and, finished in both, the same score
  common = [(a, b) for a, b in zip(us['trials'], ks['trials'])]
  same_settings = sum(a['params'] == b['params'] for a, b in common)
  both = [(a, b) for a, b in common if a['state'] == b['state'] == 'COMPLETE']
  same_scores = sum(a['score'] == b['score'] for a, b in both)
  from experiments import records  # pylint: disable=import-outside-toplevel
  # docs name no path of the machine that made them: the data as ../shared/data, the scratch workdir as WORKDIR
  made_by = records.portable(shlex.join(['python', '-m', 'benchmarks.tune_budget', *sys.argv[1:]]), workdir='WORKDIR')
  lines = [
      '# The tuner within a 10-minute budget (issue 63)', '',
      f'Made by `{made_by}` on {started} ({os.cpu_count()} CPU '
      f'cores shared with other jobs; {args.lanes} tunes at a time). Each row is `python -m implicit_jax.tune '
      f'--config=configs/custom.py` (implicit CD as given, the default trial) with `--budget_minutes='
      f'{args.budget_minutes:g}`; wall minutes are measured around the command. Score: dev F1 @0.5 of the selected '
      'epoch (its mean over the dev splits where the file\'s dev split is small); test is never read for the choice.',
      '', '| file | dev split | wall min | trials (how they ended) | default score | chosen score | chosen |',
      '|---|---|---|---|---|---|---|', *rows, '',
      f'**Killed and resumed.** The tune of {args.kill_file} was killed by SIGKILL after {k["killed_at"]:.0f} s '
      f'(trials {k["before_kill"]} started), then the same command rerun: its first line was '
      f'`{k["first_line"]}`; trial numbers the rerun started that the killed process had started too: '
      f'{repeated or "none"} (the trial cut short is made again under a new number with the same settings, in its '
      f'folder); {k["wall"] / 60:.1f} min of wall time over both processes. It made {len(ks["trials"])} trials '
      f'({", ".join(f"{v} {key}" for key, v in sorted(ks["states"].items()))}) against the undisturbed tune\'s '
      f'{len(us["trials"])}; of the {len(common)} trial numbers both made, {same_settings} had the same settings, '
      f'and of the {len(both)} both finished, {same_scores} the same score. Its choice: {ks["chosen"]["name"]} '
      f'(score {fig(ks["chosen"]["score"])}); the undisturbed tune\'s: {us["chosen"]["name"]} '
      f'(score {fig(us["chosen"]["score"])}): '
      + ('the same.' if ks['chosen']['name'] == us['chosen']['name'] else 'different.'),
      '',
      'Why they can differ: the sampler is seeded by the trial\'s number among those not killed, so the same results '
      'give the same next settings, but the budget is wall time: the killed tune loses the time of its restart and of '
      'the cut trial\'s lost epochs, and two tunes on a shared machine see different load, so they end after '
      'different numbers of trials, and a trial near the deadline may be stopped in one and finish in the other; '
      'the pruner\'s decisions depend on which trials had finished when each epoch ended. The choice is the same '
      'when the best trial is among those both made.', '']
  Path(args.out).parent.mkdir(parents=True, exist_ok=True)
  records.write_page(Path(args.out), '\n'.join(lines))
  print('\n'.join(lines))


if __name__ == '__main__':
  main()
