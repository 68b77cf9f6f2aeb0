r"""What a user sees for each bad input or fault: the table of docs/faults.md, made by trying each one.

  python -m experiments.faults [--out docs/faults.md] [--only SUBSTRING]

Every case is run as a user runs it: the command lines (``python -m implicit_jax.main|evaluate|predict``) in a
subprocess from the repository root, on the tiny config or a one-epoch MBCE model of the embedded bibtex, and
reading files through the library where the fault is in a file. The table records each case's exit status, the
lines it printed to stderr (the first two), whether that is what it should be, and the check that says so.
Takes about five minutes on two CPU cores. ``tests/test_faults.py`` (and the ARFF / predict tests) assert the
same behaviour; this script shows it.
"""

import argparse
import dataclasses
import datetime
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from implicit_jax.engine import checkpoints
from experiments import records
from implicit_jax.tasks.mlc.arff import read_mulan
from implicit_jax.tasks.mlc.datasets import load_embedded_bibtex
from implicit_jax.tasks.segmentation import horses
from implicit_jax.testing import MAIN_WITH_SIGINT, rewrite_arff

ROOT = Path(__file__).resolve().parents[1]

TINY = ['--config=configs/tiny.py']
ENV = dict(os.environ, JAX_PLATFORMS='cpu')


def cli(module, *args, code=None, wait=True, env=None):
  cmd = [sys.executable, *(['-c', code] if code else ['-m', f'implicit_jax.{module}']), *map(str, args)]
  proc = subprocess.Popen(cmd, cwd=ROOT, env=env or ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
  if not wait:
    return proc
  out, err = proc.communicate(timeout=900)
  return proc.returncode, out, err


def shown(err: str) -> list[str]:
  """The lines a user reads on stderr (absl's hint to --help aside)."""
  return [line.rstrip() for line in err.splitlines() if line.strip() and not line.startswith('(run ')]


class Table:
  def __init__(self, tmp: Path, only: str = ''):
    self.rows, self.tmp, self.only = [], tmp, [o for o in only.lower().split('|') if o]

  def wants(self, *faults) -> bool:
    """Whether --only selects any of these cases (every case without it): blocks guarded by it are skipped."""
    return not self.only or any(o in f.lower() for o in self.only for f in faults)

  def add(self, fault, how, code, err_lines, ok, check):
    if not self.wants(fault):
      return
    text = ' / '.join(err_lines[:2]).replace(str(self.tmp), '$TMP').replace(str(ROOT), '$REPO')
    text = text.replace('|', '\\|')
    if len(err_lines) > 2:
      text += f' (+{len(err_lines) - 2} lines)'
    self.rows.append((fault, how, '' if code is None else str(code), text or '(nothing)',
                      'yes' if ok else '**no**', check))
    print(f'[{"ok" if ok else "NO"}] {fault}: {code} {text[:160]}', flush=True)


def one_error(code, err, want_code=1):
  lines = shown(err)
  return code == want_code and len(lines) == 1 and lines[0].startswith('error: ')


def arff_text(names, rows, relation='rows'):
  body = ['{' + ','.join(f'{j} 1' for j in np.flatnonzero(r)) + '}' for r in rows]
  return (f'@relation {relation}\n' + ''.join(f"@attribute '{n}' {{0,1}}\n" for n in names) + '@data\n' +
          '\n'.join(body) + '\n')


# --- the engine and the workdir, after training (issue 34) ---------------------------------------------------------
# Each case is a function of (table, scratch folder, a finished 2-epoch tiny run with a checkpoint every 4 steps);
# `--only SUBSTRING` runs just the ones whose name holds it.

# `main` on a disk that fills at the third save of the training state (step 12), inside Orbax's worker thread as a
# real full disk fails it (tests/test_faults.py: ORBAX_FULL_DISK).
ORBAX_FULL_DISK = (
    'import errno, runpy, sys\n'
    'from orbax.checkpoint._src.serialization import jax_array_handlers\n'
    'spec = jax_array_handlers.ts_utils.get_sharding_tensorstore_spec\n'
    'def full(directory, *args, **kwargs):\n'
    '  if "/checkpoints/12." in str(directory):\n'
    '    raise OSError(errno.ENOSPC, "No space left on device", str(directory))\n'
    '  return spec(directory, *args, **kwargs)\n'
    'jax_array_handlers.ts_utils.get_sharding_tensorstore_spec = full\n'
    'sys.argv[0] = "implicit_jax.main"\n'
    'runpy.run_module("implicit_jax.main", run_name="__main__")\n')
# `main` where no file may grow past 100 bytes: the kernel fails a write as on a full disk (EFBIG for ENOSPC).
SMALL_FILES_ONLY = (
    'import resource, runpy, signal, sys\n'
    'signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n'
    'resource.setrlimit(resource.RLIMIT_FSIZE, (100, 100))\n'
    'sys.argv[0] = "implicit_jax.main"\n'
    'runpy.run_module("implicit_jax.main", run_name="__main__")\n')


def _wait_for(proc, ready, timeout=300):
  deadline = time.time() + timeout
  while proc.poll() is None and time.time() < deadline and not ready():
    time.sleep(0.05)
  return proc.poll() is None


def _steps(folder: Path) -> list[int]:
  return sorted(int(d.name) for d in folder.iterdir() if d.name.isdigit()) if folder.is_dir() else []


def case_lock_file_deleted(t, tmp, base):
  busy = tmp / 'lock_deleted'
  first = cli('main', *TINY, f'--workdir={busy}', '--config.num_epochs=300', wait=False)
  running = _wait_for(first, lambda: bool(_steps(busy / 'best')))
  (busy / 'lock').unlink(missing_ok=True)
  code, _, err = cli('main', *TINY, f'--workdir={busy}', '--config.num_epochs=300')
  first.kill()  # started here; its checkpoints are not needed
  first.communicate()
  t.add('`lock` file deleted while a run trains', 'second `main` on the workdir after `rm DIR/lock`', code,
        shown(err), running and one_error(code, err) and f'process {first.pid}' in err and str(busy) in err,
        'refused in one line naming the workdir and the holder (the lock is on the folder, not the file)')


def case_full_disk_in_orbax(t, tmp, base):
  run = tmp / 'orbax_full'
  args = [*TINY, f'--workdir={run}', '--config.num_epochs=3', '--config.checkpoint_every=4']
  code, _, err = cli(None, *args, code=ORBAX_FULL_DISK)
  code2, out2, _ = cli('main', *args)
  t.add('disk full while Orbax writes a checkpoint', '`main`, the step-12 save failing with ENOSPC in Orbax\'s '
        'worker thread; then the same command', code, shown(err),
        one_error(code, err) and 'the last good checkpoint is step 8' in err and code2 == 0 and
        'resuming from step 8' in out2, 'one line: the checkpoint, the cause, the step a rerun resumes from; the '
        'rerun resumes')


def case_empty_loop_record(t, tmp, base):
  run = tmp / 'empty_loop'
  shutil.copytree(base, run)
  (run / 'checkpoints' / '16' / 'loop' / 'metadata').write_text('{}')
  code, _, err = cli('main', *TINY, f'--workdir={run}', '--config.num_epochs=3', '--config.checkpoint_every=4')
  t.add('a checkpoint whose loop record is `{}`', '`main --config.num_epochs=3` (resume)', code, shown(err),
        code == 0 and 'loop record lacks' in err and len(shown(err)) == 1,
        'warning naming it; set aside like a damaged one; resumes from the one before')


def case_extension_killed(t, tmp, base):
  run = tmp / 'extension'
  shutil.copytree(base, run)
  old = json.loads((run / 'metrics.json').read_text())
  proc = cli('main', *TINY, f'--workdir={run}', '--config.num_epochs=300', '--config.checkpoint_every=4',
             wait=False)
  running = _wait_for(proc, lambda: any(s > 16 for s in _steps(run / 'best')))
  proc.kill()  # SIGKILL once the extension saved a best epoch of its own
  out, _ = proc.communicate()
  code, out_eval, err = cli('evaluate', f'--workdir={run}', '--json')
  used = json.loads(out_eval)['test']['threshold'] if code == 0 else None
  loaded = checkpoints.load_trained(str(run))
  dev = loaded.task.splits['dev']
  chosen = loaded.task.evaluator.calibrate(loaded.predict(dev), dev)['threshold']
  moved = [line for line in out.splitlines() if 'metrics.previous.json' in line]
  t.add('a finished run extended (`num_epochs` raised), killed part way, then `evaluate`',
        f'`main --config.num_epochs=300` killed after a new best; `evaluate` (threshold {used}, the old run\'s '
        f'{old["threshold"]}, chosen on dev for the parameters read {chosen})', code, moved + shown(err),
        running and code == 0 and used == chosen and not (run / 'metrics.json').exists() and bool(moved),
        'the old metrics.json moved aside when the extension starts; `evaluate` chooses the threshold for the '
        'parameters it reads')


def case_grown_cora(t, tmp, base):
  run = tmp / 'cora_run'
  fixture = ROOT / 'tests' / 'fixtures' / 'cora'
  code, _, err = cli('main', '--config=configs/cora.py', f'--workdir={run}', '--config.method=feedforward',
                     '--config.data.unlabeled=False', f'--config.data.data_dir={fixture}',
                     '--config.data.num_test=15', '--config.data.num_dev=10', '--config.data.labeled_rows=20',
                     '--config.model.embeddings=random', '--config.model.encoder=conv', '--config.model.hidden=16',
                     '--config.model.energy_hidden=16', '--config.batch_size=10', '--config.num_epochs=1')
  assert code == 0, err
  text = (fixture / 'cora_citation' / 'tagged_references.txt').read_text()
  refs = text[text.index('<ref>'):text.rindex('</data>')]
  grown = tmp / 'cora_grown'
  (grown / 'cora_citation').mkdir(parents=True)
  (grown / 'cora_citation' / 'tagged_references.txt').write_text(
      text.replace('</data>', refs.replace('Chen', 'Zorblax') + '</data>'))
  code, _, err = cli('evaluate', f'--workdir={run}', f'--data_dir={grown}')
  t.add('`evaluate` with a data folder that grew (Cora, 60 more references)', '`evaluate --data_dir=DIR`', code,
        shown(err), one_error(code, err) and 'trained on other data' in err and 'unreadable' not in err,
        'one line naming the splits and the file that differ (not the checkpoints)')


def case_write_fails_at_start(t, tmp, base):
  run = tmp / 'small_files'
  env = {k: v for k, v in ENV.items() if k != 'JAX_COMPILATION_CACHE_DIR'}
  proc = subprocess.run([sys.executable, '-c', SMALL_FILES_ONLY, *TINY, f'--workdir={run}'], cwd=ROOT, env=env,
                        capture_output=True, text=True, timeout=900, check=False)
  code, err = proc.returncode, proc.stderr
  left = [str(p.relative_to(run)) for p in run.rglob('*.tmp')] if run.exists() else []
  t.add('a write fails at the start (as on a full disk)', '`main` with files limited to 100 bytes (RLIMIT_FSIZE)',
        code, shown(err), one_error(code, err) and 'config.json' in err and not left,
        'one line naming the file; no temporary file left')


def case_out_of_range_fields(t, tmp, base):
  for override in ('--config.seed=-1', '--config.data.num_train=0'):
    run = tmp / f'range_{override.split(".")[-1].split("=")[0]}'
    code, _, err = cli('main', *TINY, f'--workdir={run}', override)
    field = override.split('=')[0][2:]
    t.add(f'`{override}`', '`main`', code, shown(err), one_error(code, err) and field in err and not run.exists(),
          'one line naming the field; nothing written')


def case_cora_unlabeled_tokens(t, tmp, base):
  fault = '`evaluate --split=all` on a semi-supervised Cora run (unlabeled tokens: gold -1)'
  if not t.wants(fault):
    return
  run = tmp / 'cora_semi'
  code, _, err = cli('main', '--config=configs/cora.py', f'--workdir={run}', '--config.method=implicit',
                     f'--config.data.data_dir={ROOT / "tests" / "fixtures" / "cora"}', '--config.data.num_test=15',
                     '--config.data.num_dev=10', '--config.data.labeled_rows=20', '--config.model.embeddings=random',
                     '--config.model.encoder=conv', '--config.model.hidden=16', '--config.model.energy_hidden=16',
                     '--config.batch_size=10', '--config.num_epochs=1')
  assert code == 0, err
  code, out, err = cli('evaluate', f'--workdir={run}', '--split=all', '--json')
  shown_acc = json.loads(out)['train']['accuracy'] if code == 0 else None
  loaded = checkpoints.load_trained(str(run))
  train_split = loaded.task.splits['train']
  tags, gold = np.argmax(np.asarray(loaded.predict(train_split)), -1), np.asarray(train_split['y'])
  real = np.asarray(train_split['mask']) > 0
  labeled, unlabeled = real & (gold >= 0), real & (gold < 0)
  by_hand, all_tokens = float(np.mean(tags[labeled] == gold[labeled])), float(np.mean(tags[real] == gold[real]))
  t.add(fault, f'`evaluate --split=all --json` (train accuracy {shown_acc}; by hand over the {labeled.sum()} '
        f'labeled tokens {by_hand:.4f}, over all {real.sum()} tokens {all_tokens:.4f})', code, shown(err),
        code == 0 and bool(unlabeled.any()) and shown_acc is not None and abs(shown_acc - by_hand) < 1e-6,
        'train accuracy counts the labeled tokens only (the unlabeled ones are not errors)')


def case_ctrl_c(t, tmp, base):
  fault = 'Ctrl-C while training'
  if not t.wants(fault):
    return
  run = tmp / 'ctrl_c'
  args = [*TINY, f'--workdir={run}', '--config.num_epochs=200', '--config.checkpoint_every=4']
  proc = cli(None, *args, code=MAIN_WITH_SIGINT, wait=False)
  running = _wait_for(proc, lambda: bool(_steps(run / 'checkpoints')))
  proc.send_signal(signal.SIGINT)
  _, err = proc.communicate(timeout=300)
  code = proc.returncode
  code2, out2, _ = cli('main', *TINY, f'--workdir={run}', '--config.num_epochs=2', '--config.checkpoint_every=4')
  t.add(fault, 'SIGINT to `main` once a checkpoint is saved; then the same command', code, shown(err),
        running and code == 130 and shown(err) == [
            f'interrupted: {run} keeps its last checkpoint; the same command resumes from it'] and code2 == 0 and
        'resuming from step' in out2, 'one line saying the run resumes; exit 130; the same command resumes')


def case_ctrl_c_during_saves(t, tmp, base):
  fault = 'Ctrl-C while a checkpoint is written'
  if not t.wants(fault):
    return
  results = []
  for k, delay in enumerate((0.3, 0.9, 1.7)):  # a run that saves every step is almost always inside a save
    run = tmp / f'ctrl_c_saving{k}'
    proc = cli(None, *TINY, f'--workdir={run}', '--config.num_epochs=400', '--config.checkpoint_every=1',
               code=MAIN_WITH_SIGINT, wait=False)
    running = _wait_for(proc, lambda run=run: bool(_steps(run / 'checkpoints')))
    time.sleep(delay)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=300)
    left = sorted(str(p.relative_to(run)) for p in run.rglob('*') if p.name.endswith('orbax-checkpoint-tmp'))
    results.append((running, proc.returncode, shown(err), left))
  code, lines = results[0][1], results[0][2]
  t.add(fault, 'SIGINT to `main` saving a checkpoint every step, 0.3, 0.9 and 1.7 s after its first (3 runs)',
        code, lines, all(r and c == 130 and len(e) == 1 and e[0].startswith('interrupted: ') and not left
                         for r, c, e, left in results),
        'each: one line, exit 130, no temporary checkpoint folder left')


def case_users_run_file_names(t, tmp, base):
  fault = "`--workdir` holding the user's own metrics.jsonl, lock and checkpoints/, no config.json"
  if not t.wants(fault):
    return
  mine = tmp / 'users_files'
  (mine / 'checkpoints').mkdir(parents=True)
  files = {'metrics.jsonl': '{"step": 1}\n', 'lock': 'my lock\n', 'checkpoints/readme.txt': 'notes'}
  for name, text in files.items():
    (mine / name).write_text(text)
  code, _, err = cli('main', *TINY, f'--workdir={mine}')
  t.add(fault, '`main`', code, shown(err), one_error(code, err) and 'holds files a training run did not write' in err
        and all((mine / name).read_text() == text for name, text in files.items()),
        'refused in one line, every file untouched (metrics.jsonl was replaced, lock deleted)')


def _with_config_field(tmp, base, name, section, field, value) -> tuple[Path, str]:
  """A copy of the finished base run whose config.json sets ``section.field`` to ``value``; and that text."""
  run = tmp / name
  shutil.copytree(base, run)
  record = json.loads((run / 'config.json').read_text())
  record[section][field] = value
  text = json.dumps(record)
  (run / 'config.json').write_text(text)
  return run, text


def case_record_of_a_newer_version(t, tmp, base):
  fault = 'config.json with a field this version does not know (a newer version\'s)'
  if not t.wants(fault):
    return
  run, text = _with_config_field(tmp, base, 'newer', 'optimizer', 'momentum_schedule', 'cosine')
  code, _, err = cli('main', *TINY, f'--workdir={run}', '--config.num_epochs=3')
  code2, _, err2 = cli('evaluate', f'--workdir={run}')
  t.add(fault, '`main --config.num_epochs=3` (resume), then `evaluate`', code, shown(err) + shown(err2),
        one_error(code, err) and one_error(code2, err2) and 'optimizer.momentum_schedule' in err + err2 and
        (run / 'config.json').read_text() == text,
        'both refused in one line naming the file and field; config.json untouched (it was rewritten without it)')


def case_config_of_another_network(t, tmp, base):
  fault = '`evaluate` after config.json was given a layer more'
  if not t.wants(fault):
    return
  run, _ = _with_config_field(tmp, base, 'edited_config', 'model', 'energy_feature_hidden', [16, 16])
  code, _, err = cli('evaluate', f'--workdir={run}')
  t.add(fault, '`evaluate`', code, shown(err), one_error(code, err) and 'do not fit the model built' in err and
        'unreadable' not in err and not (run / 'corrupt').exists(),
        'one line naming the array and the config (the intact checkpoint was called unreadable)')


def case_overrides_recorded(t, tmp, base):
  fault = 'a row of a config file with another method given'
  if not t.wants(fault):
    return
  run = tmp / 'row_and_override'
  given = ['--config.method=feedforward', '--config.optimizer.learning_rate=0.02']
  code, _, err = cli('main', *TINY, f'--workdir={run}', *given)
  record = json.loads((run / 'config.json').read_text()) if code == 0 else {}
  t.add(fault, '`main --config=configs/tiny.py ' + ' '.join(given) + '`', code, shown(err),
        code == 0 and record.get('config_file') == 'configs/tiny.py' and record.get('overrides') == given,
        'config.json records the config file and every override: the command that makes the run again')


def case_rescore_bad_data_dir(t, tmp, base):
  fault = '`experiments/rescore.py` with a --data_dir that is a file'
  if not t.wants(fault):
    return
  record = ROOT / 'docs' / 'tagging' / 'runs' / 'pos-crf-seed0.json'
  code, _, err = cli(None, str(record), f'--data_dir={ROOT / "README.md"}',
                     code='import runpy, sys; sys.argv[0] = "rescore"; '
                     'runpy.run_module("experiments.rescore", run_name="__main__")')
  t.add(fault, '`rescore.py RECORD --data_dir=README.md`', code, shown(err),
        one_error(code, err) and 'not a folder' in err, 'one line before any record')


def _free_port() -> int:
  with socket.socket() as s:
    s.bind(('localhost', 0))
    return s.getsockname()[1]


def _served(port: int) -> bool:
  with socket.socket() as s:
    return s.connect_ex(('localhost', port)) == 0


def _distributed(port, process_id, *args, cwd=ROOT):
  """One process of a two-process `--distributed` run on this machine (a coordinator on localhost, Gloo)."""
  cmd = [sys.executable, '-m', 'implicit_jax.main', '--distributed', f'--coordinator_address=localhost:{port}',
         '--num_processes=2', f'--process_id={process_id}', '--heartbeat_timeout=10', *map(str, args)]
  return subprocess.Popen(cmd, cwd=cwd, env=dict(ENV, PYTHONPATH=str(ROOT)), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True)


def _two_processes(each, *args, cwds=(ROOT, ROOT)):
  """Process i of a two-process run given args then each[i]: ``('code0, code1', [stderr lines of both], ok)``,
  ok when each ended with status 1 and one line."""
  port = _free_port()
  procs = [_distributed(port, i, *args, *each[i], cwd=cwds[i]) for i in range(2)]
  errs = []
  for p in procs:
    try:
      errs.append(shown(p.communicate(timeout=300)[1]))
    except subprocess.TimeoutExpired:
      p.kill()
      errs.append(shown(p.communicate()[1]) + ['(hung: killed after 300 s)'])
  codes = [p.returncode for p in procs]
  return ', '.join(map(str, codes)), [e for err in errs for e in err], all(
      code == 1 and len(err) == 1 for code, err in zip(codes, errs))


def _disagree(t, tmp, fault, how, each, named, *args, cwds=(ROOT, ROOT)):
  if not t.wants(fault):
    return
  work = tmp / f'disagree_{len(t.rows)}'
  code, err, ended = _two_processes(each, *args, f'--workdir={work}', cwds=cwds)
  t.add(fault, how, code, err,
        ended and all(f'error: process {i} of 2: the processes of this run disagree: {named}' in line
                      for i, line in enumerate(err)) and not work.exists(),
        'both stop before training, each with one line naming what differs; nothing written')


def case_processes_other_learning_rate(t, tmp, base):
  _disagree(t, tmp, 'two processes of a run, one given another learning rate',
            'process 1 `--config.optimizer.learning_rate=0.5`, process 0 none', ((), ('--config.optimizer.'
                                                                                    'learning_rate=0.5',)),
            'config.optimizer.learning_rate (process 0: 0.01, process 1: 0.5)', *TINY)


def case_processes_other_seed(t, tmp, base):
  _disagree(t, tmp, 'two processes of a run, one given another seed', 'process 1 `--config.seed=1`',
            ((), ('--config.seed=1',)), 'config.seed (process 0: 0, process 1: 1)', *TINY)


def case_processes_other_epochs(t, tmp, base):
  _disagree(t, tmp, 'two processes of a run, one given another num_epochs', 'process 1 `--config.num_epochs=3`',
            ((), ('--config.num_epochs=3',)), 'config.num_epochs (process 0: 2, process 1: 3)', *TINY)


def case_processes_other_workdir(t, tmp, base):
  other = tmp / 'processes_other_workdir'
  _disagree(t, tmp, 'two processes of a run, one given another workdir', 'process 1 `--workdir` another folder',
            ((), (f'--workdir={other}',)), '--workdir (process 0: ', *TINY)


def case_processes_other_data(t, tmp, base):
  fault = 'two processes of a run reading different copies of the data'
  if not t.wants(fault):
    return
  rng = np.random.default_rng(0)
  x, y = rng.integers(0, 2, (60, 8)), rng.integers(0, 2, (60, 3))
  hosts = [tmp / 'host0', tmp / 'host1']
  for host in hosts:
    host.mkdir()
    (host / 'rows.arff').write_text(arff_text([f'f{j}' for j in range(8)] + [f'l{j}' for j in range(3)],
                                              np.concatenate([x, y], axis=1), relation='rows -C -3'))
    x[5, 2] = 1 - x[5, 2]
  _disagree(t, tmp, fault, 'the same command in two folders whose `rows.arff` differ in one value', ((), ()),
            'data train.x (process 0: ', f'--config={ROOT}/configs/custom.py',
            '--config.data.train_file=rows.arff', '--config.data.protocol=resplit', '--config.method=feedforward',
            '--config.batch_size=12', '--config.eval_batch_size=12', cwds=hosts)


def case_processes_same_id(t, tmp, base):
  fault = 'two processes of a run both given --process_id=0'
  if not t.wants(fault):
    return
  port, work = _free_port(), tmp / 'same_id'
  args = [*TINY, f'--workdir={work}', '--initialization_timeout=10']
  first = _distributed(port, 0, *args)
  deadline = time.time() + 300
  while first.poll() is None and not _served(port) and time.time() < deadline:
    time.sleep(0.1)
  second = _distributed(port, 0, *args)
  errs = [shown(p.communicate(timeout=300)[1]) for p in (second, first)]
  codes = [first.returncode, second.returncode]
  t.add(fault, 'the second started once the first serves the coordinator; `--initialization_timeout=10`',
        f'{codes[0]}, {codes[1]}', errs[1] + errs[0],
        codes == [1, 1] and [len(e) for e in errs] == [1, 1] and 'already in use' in errs[0][0] and
        'did not all join' in errs[1][0] and not work.exists(),
        'the second refused at once, naming the port; the first stops at the timeout, naming what each process '
        'needs')


ENGINE_CASES = [case_lock_file_deleted, case_full_disk_in_orbax, case_empty_loop_record, case_extension_killed,
                case_grown_cora, case_write_fails_at_start, case_out_of_range_fields, case_cora_unlabeled_tokens,
                case_ctrl_c, case_ctrl_c_during_saves, case_users_run_file_names, case_record_of_a_newer_version,
                case_config_of_another_network, case_overrides_recorded, case_rescore_bad_data_dir,
                case_processes_other_learning_rate, case_processes_other_seed, case_processes_other_epochs,
                case_processes_other_workdir, case_processes_other_data, case_processes_same_id]


# --- plug-ins that break the contract (issue 44): a package of them on the subprocess's PYTHONPATH ---------------
PLUGINS = 'faults_plugins'
PLUGIN_FILES = {
    '__init__.py': '',
    # A small multi-class task; config.data.variant breaks one part of the task contract at a time.
    'multiclass.py': (
        'import ml_collections\nimport numpy as np\nfrom implicit_jax.spaces.categorical import Multiclass\n'
        'from implicit_jax.tasks import Evaluator, Task\n'
        'from implicit_jax.tasks.mlc.models import MLCEnergy, MLPInferenceNet\n'
        'def default_config():\n'
        "  return ml_collections.ConfigDict({'data': {'variant': 'good'}, 'model': {'outputs': 10}})\n"
        'class Accuracy(Evaluator):\n'
        "  select = 'accuracy'\n"
        '  def metrics(self, pred, split):\n'
        "    return {'accuracy': float(np.mean(np.argmax(pred, axis=-1) == split['y']))}\n"
        'class NaNAccuracy(Accuracy):\n'
        '  def metrics(self, pred, split):\n'
        "    return {'accuracy': float('nan')}\n"
        'def make_task(config):\n'
        '  variant, rng = config.data.variant, np.random.default_rng(0)\n'
        "  if variant == 'none':\n"
        '    return None\n'
        '  x = rng.normal(size=(160, 8)).astype(np.float32)\n'
        '  y = np.argmax(x @ rng.normal(size=(8, 10)), axis=1)\n'
        "  y = y + 5 if variant == 'shifted' else np.eye(10, dtype=np.float32)[y] if variant == 'one_hot' else y\n"
        "  cut = {'train': slice(0, 96), 'dev': slice(96, 128), 'test': slice(128, 160)}\n"
        '  outputs = config.model.outputs\n'
        "  return Task('multiclass', {s: {'x': x[c], 'y': y[c]} for s, c in cut.items()}, Multiclass(10),\n"
        '              lambda heads=1: MLPInferenceNet(outputs, (16,), heads=heads),\n'
        '              lambda: MLCEnergy(10, (16,), 16, 4),\n'
        "              NaNAccuracy() if variant == 'nan_metric' else Accuracy(), score='accuracy')\n"),
    'config.py': (
        'from implicit_jax.engine import config as config_lib\n'
        'def get_config():\n'
        f"  c = config_lib.base_config('{PLUGINS}.multiclass', 'feedforward')\n"
        '  c.batch_size = c.eval_batch_size = 16\n'
        '  c.num_epochs = 1\n'
        '  return c\n'),
    # A method whose predict keeps 7 of the 10 classes.
    'seven.py': (
        'from implicit_jax.methods import feedforward\n'
        'def build(task, config):\n'
        '  method = feedforward.build(task, config)\n'
        '  return method._replace(predict=lambda params, batch: method.predict(params, batch)[..., :7])\n'),
    'solver.py': (
        'import jax, jax.numpy as jnp\n'
        'def nan_u(matvec, v, solver):\n'
        "  return jax.tree.map(lambda a: a * jnp.nan, v), {'iterations': 1}\n"
        'def words(matvec, v, solver):\n'
        "  return v, {'iterations': 'many'}\n"),
}


def plugins(tmp: Path) -> tuple[dict, list[str]]:
  """The environment with the plug-in package on PYTHONPATH (written once under ``tmp``), and the arguments of
  its multi-class task's config."""
  root = tmp / 'plugins'
  if not root.exists():
    (root / PLUGINS).mkdir(parents=True)
    for name, text in PLUGIN_FILES.items():
      (root / PLUGINS / name).write_text(text)
  path = os.pathsep.join(p for p in (str(root), ENV.get('PYTHONPATH', '')) if p)
  return dict(ENV, PYTHONPATH=path), [f'--config={root / PLUGINS / "config.py"}']


def _plugin_refused(t, tmp, fault, how, extra, wants):
  """``main`` on the plug-in task with the ``extra`` flags: refused in one line holding each of ``wants``, before
  the workdir is made."""
  if not t.wants(fault):
    return
  env, args = plugins(tmp)
  run = tmp / f'plugin_{extra[0].split(".")[-1].replace("=", "_")}'
  code, _, err = cli('main', *args, f'--workdir={run}', *extra, env=env)
  t.add(fault, how, code, shown(err), one_error(code, err) and all(w in err for w in wants) and not run.exists(),
        'one line naming the plug-in, the cause and the fix, before training; nothing written')


def case_plugin_labels_outside_the_space(t, tmp, base):
  _plugin_refused(t, tmp, 'plug-in task with labels 5..14 for a 10-class space', '`main --config.data.variant=shifted`',
                  ['--config.data.variant=shifted'], ["the train split's y", '10, 11, 12, 13, 14', 'class ids 0..9'])


def case_plugin_one_hot_labels(t, tmp, base):
  _plugin_refused(t, tmp, 'plug-in task with one-hot y where the space wants class ids',
                  '`main --config.data.variant=one_hot`', ['--config.data.variant=one_hot'],
                  ["the train split's y has shape (96, 10)", 'wants (96,)', 'argmax'])


def case_plugin_make_task_none(t, tmp, base):
  _plugin_refused(t, tmp, 'plug-in `make_task` returning None', '`main --config.data.variant=none`',
                  ['--config.data.variant=none'], [f"make_task of '{PLUGINS}.multiclass' returned None"])


def case_plugin_inference_net_width(t, tmp, base):
  _plugin_refused(t, tmp, 'plug-in inference net with 7 outputs for a 10-class space',
                  '`main --config.model.outputs=7`', ['--config.model.outputs=7'],
                  ["make_inference_net()'s output has shape (1, 7)", 'wants (1, 10)'])


def case_plugin_predict_width(t, tmp, base):
  _plugin_refused(t, tmp, 'plug-in method whose `predict` returns 7 of 10 classes',
                  f'`main --config.method={PLUGINS}.seven`', [f'--config.method={PLUGINS}.seven'],
                  [f"config.method: '{PLUGINS}.seven': predict(params, batch) returned shape (1, 7)", 'wants (1, 10)'])


def case_plugin_nan_select_metric(t, tmp, base):
  fault = "plug-in evaluator returning {'accuracy': nan}"
  if not t.wants(fault):
    return
  env, args = plugins(tmp)
  run = tmp / 'plugin_nan_metric'
  code, _, err = cli('main', *args, f'--workdir={run}', '--config.data.variant=nan_metric', env=env)
  t.add(fault, '`main --config.data.variant=nan_metric`', code, shown(err),
        one_error(code, err) and "NaNAccuracy.metrics() gave the dev 'accuracy' nan at epoch 1" in err and
        not (run / 'metrics.json').exists(), 'one line naming the evaluator and the metric; no metrics.json')


def case_plugin_solver_nan(t, tmp, base):
  fault = 'plug-in solver returning a NaN u'
  if not t.wants(fault):
    return
  env, _ = plugins(tmp)
  code, _, err = cli('main', *TINY, f'--workdir={tmp / "plugin_solver_nan"}', '--config.log_every=1',
                     f'--config.implicit.solver.name={PLUGINS}.solver.nan_u', env=env)
  t.add(fault, '`main --config.implicit.solver.name=...nan_u`', code, shown(err), one_error(code, err) and
        f"inverse-HVP solver implicit.solver.name='{PLUGINS}.solver.nan_u', non-finite at step 1" in err,
        'stops at the first log: quantity, step, last good checkpoint, and the solver named')


def case_plugin_solver_info(t, tmp, base):
  fault = 'plug-in solver whose `info` is not a number'
  if not t.wants(fault):
    return
  env, _ = plugins(tmp)
  run = tmp / 'plugin_solver_info'
  code, _, err = cli('main', *TINY, f'--workdir={run}', f'--config.implicit.solver.name={PLUGINS}.solver.words',
                     env=env)
  t.add(fault, "`main`, the solver's info `{'iterations': 'many'}`", code, shown(err), one_error(code, err) and
        f"implicit.solver.name: '{PLUGINS}.solver.words' returned info['iterations'] = 'many'" in err,
        'one line naming the solver and the value, as the first step is traced')


ENGINE_CASES += [case_plugin_labels_outside_the_space, case_plugin_one_hot_labels, case_plugin_make_task_none,
                 case_plugin_inference_net_width, case_plugin_predict_width, case_plugin_nan_select_metric,
                 case_plugin_solver_nan, case_plugin_solver_info]


# --- the cases main walks, group by group, in the table's order ---------------------------------------------------
@dataclasses.dataclass
class Shared:
  """What every group of cases is given: the table, the scratch folder and the runs made once at the start."""
  t: Table
  tmp: Path
  base: Path  # a finished tiny run (2 epochs, a checkpoint every 4 steps)
  bib: Path  # a one-epoch bibtex MBCE model
  test: Any  # the embedded bibtex's test split
  names: list[str]  # its feature and label names,
  rows: np.ndarray  # its first 6 rows (features then labels),
  rows_arff: Path  # and those rows as an ARFF
  clean: Path | None = None  # an undisturbed 60-epoch tiny run (two best-on-dev checkpoints), made by busy_workdir

  def copy(self, name: str) -> Path:
    """A copy of the finished base run, to damage or resume."""
    dst = self.tmp / name
    shutil.copytree(self.base, dst)
    return dst


def shared_runs(t: Table, tmp: Path) -> Shared:
  """A finished tiny run (2 epochs) and a one-epoch bibtex MBCE model with 6 test rows as ARFF."""
  base = tmp / 'base'
  code, _, err = cli('main', *TINY, f'--workdir={base}', '--config.checkpoint_every=4')
  assert code == 0, err
  bib = tmp / 'bibtex'
  code, _, err = cli('main', '--config=configs/bibtex.py', f'--workdir={bib}', '--config.method=feedforward',
                     '--config.num_epochs=1')
  assert code == 0, err
  test = load_embedded_bibtex()['test']
  names = [*test.feature_names, *test.label_names]
  rows = np.concatenate([test.x[:6], test.y[:6]], axis=1)
  rows_arff = tmp / 'rows.arff'
  rows_arff.write_text(arff_text(names, rows))
  return Shared(t, tmp, base, bib, test, names, rows, rows_arff)


def busy_workdir(s: Shared):
  """A second trainer, and `evaluate` in a loop, on a workdir in training; keeps the undisturbed run it is compared
  with as ``s.clean``."""
  t, tmp = s.t, s.tmp
  busy = tmp / 'busy'
  first = cli('main', *TINY, f'--workdir={busy}', '--config.num_epochs=60', wait=False)
  while first.poll() is None and not (busy / 'best').is_dir():
    time.sleep(0.05)
  while first.poll() is None and not any(d.name.isdigit() for d in (busy / 'best').iterdir()):
    time.sleep(0.05)
  code, _, err = cli('main', *TINY, f'--workdir={busy}', '--config.num_epochs=60')
  t.add('two trainers on one workdir', 'second `main` on a workdir in training', code, shown(err),
        one_error(code, err) and f'process {first.pid}' in err, 'refused in one line naming the holder')
  reads = 0
  while first.poll() is None:
    code, _, err = cli('evaluate', f'--workdir={busy}', '--split=dev')
    reads += code == 0
  _, err_first = first.communicate()
  clean = tmp / 'clean'
  cli('main', *TINY, f'--workdir={clean}', '--config.num_epochs=60')
  same = ((busy / 'metrics.jsonl').read_text() == (clean / 'metrics.jsonl').read_text() and
          {k: v for k, v in json.loads((busy / 'metrics.json').read_text()).items() if k != 'train_seconds'} ==
          {k: v for k, v in json.loads((clean / 'metrics.json').read_text()).items() if k != 'train_seconds'})
  t.add('`evaluate` in a loop beside a live training', f'{reads} `evaluate` runs while it trained',
        first.returncode, shown(err_first), first.returncode == 0 and reads >= 1 and same,
        'training completes; metrics.json and metrics.jsonl equal an undisturbed run\'s')
  s.clean = clean


def bad_workdir(s: Shared):
  """A workdir that is a file, cannot be made, is read-only or fills; a start that fails, then the corrected one."""
  t, tmp = s.t, s.tmp
  a_file = tmp / 'a_file'
  a_file.write_text('')
  code, _, err = cli('main', *TINY, f'--workdir={a_file}')
  t.add('`--workdir` names an existing file', '`main`', code, shown(err), one_error(code, err), 'one line')
  code, _, err = cli('main', *TINY, f'--workdir={a_file}/sub')
  t.add('workdir cannot be created', '`main --workdir=<file>/sub`', code, shown(err), one_error(code, err),
        'one line')
  ro = tmp / 'ro'
  ro.mkdir()
  ro.chmod(0o500)
  code, _, err = cli('main', *TINY, f'--workdir={ro}')
  ro.chmod(0o700)
  as_root = os.geteuid() == 0
  t.add('read-only workdir', '`main`' + (' (run as root: the folder is writable to it)' if as_root else ''), code,
        shown(err), code == 0 if as_root else one_error(code, err), 'one line (root: trains)')
  full_disk = ('import errno, sys\nfrom implicit_jax import main\nfrom implicit_jax.engine import checkpoints, cli\n'
               'def full(self, state, loop):\n  raise OSError(errno.ENOSPC, "No space left on device", '
               'self.directory)\ncheckpoints.Checkpointer.save = full\nsys.argv = ["main"] + sys.argv[1:]\n'
               'cli.run(main.main)\n')
  code, _, err = cli(None, *TINY, f'--workdir={tmp / "full"}', code=full_disk)
  t.add('full disk', '`main`, checkpoint saves raising ENOSPC', code, shown(err), one_error(code, err), 'one line')
  failed = tmp / 'failed'
  code, _, err = cli('main', *TINY, f'--workdir={failed}', '--config.num_devices=5')
  untouched = not failed.exists()
  code2, _, err2 = cli('main', *TINY, f'--workdir={failed}')
  t.add('a failed start, then the corrected command', '`main --config.num_devices=5` on 1 device, then without',
        code, shown(err), one_error(code, err) and untouched and code2 == 0,
        'one line; nothing written; the corrected command runs')


def resume_other_config(s: Shared):
  """A config record without a checkpoint; a finished run resumed with another seed, or fewer epochs."""
  t, tmp, base, copy = s.t, s.tmp, s.base, s.copy
  stale = tmp / 'stale'
  stale.mkdir()
  record = json.loads((base / 'config.json').read_text())
  (stale / 'config.json').write_text(json.dumps({**record, 'seed': 7}))
  code, out, err = cli('main', *TINY, f'--workdir={stale}')
  t.add('a config record left by a start that saved no checkpoint', '`main` with another config', code,
        [line for line in out.splitlines() if 'replacing' in line] + shown(err), code == 0,
        'replaced with a notice, the run trains')
  other = copy('other')
  code, _, err = cli('main', *TINY, f'--workdir={other}', '--config.seed=3')
  t.add('resume with a different config', '`main --config.seed=3` on a finished run', code, shown(err),
        one_error(code, err) and 'seed' in err, 'refused, naming the field')
  shorter = copy('shorter')
  before = (shorter / 'metrics.json').read_text()
  code, _, err = cli('main', *TINY, f'--workdir={shorter}', '--config.num_epochs=1', '--config.checkpoint_every=4')
  t.add('resume a finished run with fewer epochs', '`main --config.num_epochs=1` on a 2-epoch run', code,
        shown(err), one_error(code, err) and (shorter / 'metrics.json').read_text() == before,
        'refused; metrics.json untouched')


def data_under_a_run(s: Shared):
  """A custom training file changed under a run, a label column that is always 0, the files a new user trains on."""
  t, tmp = s.t, s.tmp
  rng = np.random.default_rng(0)
  x, y = rng.integers(0, 2, (60, 8)), rng.integers(0, 2, (60, 3))
  data = tmp / 'custom.arff'

  def write_custom(x):
    cols = [f'f{j}' for j in range(8)] + [f'l{j}' for j in range(3)]
    data.write_text('@relation r -C -3\n' + ''.join(f'@attribute {n} {{0,1}}\n' for n in cols) + '@data\n' +
                    '\n'.join(','.join(map(str, r)) for r in np.concatenate([x, y], axis=1)) + '\n')

  custom = ['--config=configs/custom.py', f'--config.data.train_file={data}',
            '--config.data.protocol=resplit', '--config.batch_size=12', '--config.eval_batch_size=12',
            f'--workdir={tmp / "custom_run"}']
  write_custom(x)
  cli('main', *custom, '--config.num_epochs=1')
  x[5, 2] = 1 - x[5, 2]
  write_custom(x)
  code, _, err = cli('main', *custom, '--config.num_epochs=2')
  t.add('data file changed at the same path, then resume', '`main` again after one value changed', code,
        shown(err), one_error(code, err) and str(data) in err, 'refused, naming the file')
  dense_data_changed(t, tmp)
  if t.wants('a label column that is always 0'):
    y[:, 2] = 0
    write_custom(x)
    never = tmp / 'never_run'
    cli('main', *custom[:-1], f'--workdir={never}', '--config.num_epochs=1')
    code, _, err = cli('evaluate', f'--workdir={never}', '--split=all')
    t.add('a label column that is always 0', '`evaluate --split=all` on a custom dataset whose label l2 is never 1',
          code, shown(err), code == 0 and shown(err) == [
              f"warning: the {split} split has no positive example of 1 of 3 labels: 'l2'; its scores say nothing "
              'about them' for split in ('train', 'dev', 'test')], 'a warning per split naming the label')
  training_files(t, tmp)


def divergence(s: Shared):
  """Adam at a huge learning rate, a Neumann series that diverges, a NaN loss."""
  t, tmp = s.t, s.tmp
  for what, extra in (('Adam at learning rate 1e3', ['--config.optimizer.learning_rate=1e3']),
                      ('Neumann with alpha 2', ['--config.implicit.solver.name=neumann',
                                                '--config.implicit.solver.alpha=2'])):
    code, _, err = cli('main', *TINY, f'--workdir={tmp / what.split()[0]}', '--config.log_every=1', *extra)
    t.add(what, '`main`', code, shown(err), one_error(code, err) and 'diverged' in err,
          'stops: quantity, step, last good checkpoint; exit 1')
  code, _, err = cli('main', *TINY, f'--workdir={tmp / "nan"}', '--config.log_every=1',
                     '--config.implicit.inner_optimizer.name=sgd',
                     '--config.implicit.inner_optimizer.learning_rate=1e3',
                     '--config.divergence.max_loss=0')
  t.add('NaN loss (divergence checks off)', '`main`, inner SGD at 1e3', code, shown(err),
        one_error(code, err) and 'non-finite' in err, 'stops: quantity, step, last good checkpoint')


def damage(s: Shared):
  """A torn metrics.jsonl, emptied checkpoints and best-on-dev parameters, a config.json cut short."""
  t, tmp, copy, clean = s.t, s.tmp, s.copy, s.clean
  torn = copy('torn')
  with open(torn / 'metrics.jsonl', 'a') as f:
    f.write('{"step": 17, "train/lo')
  code, _, err = cli('main', *TINY, f'--workdir={torn}', '--config.num_epochs=3', '--config.checkpoint_every=4')
  t.add('half-written last line in metrics.jsonl', '`main --config.num_epochs=3` (resume)', code, shown(err),
        code == 0 and 'dropped a torn last line' in err, 'warning; the run resumes')
  damaged = copy('damaged')
  for f in (damaged / 'checkpoints' / '16').rglob('*'):
    if f.is_file():
      f.write_bytes(b'')
  code, _, err = cli('main', *TINY, f'--workdir={damaged}', '--config.num_epochs=3', '--config.checkpoint_every=4')
  t.add('latest checkpoint\'s files emptied', '`main --config.num_epochs=3` (resume)', code, shown(err),
        code == 0 and 'unreadable' in err, 'warning naming it; moved aside; resumes from the previous one')
  best = tmp / 'best_damaged'
  shutil.copytree(clean, best)  # the 60-epoch run: two best-on-dev checkpoints kept
  newest = max((best / 'best').iterdir(), key=lambda d: int(d.name))
  for f in newest.rglob('*'):
    if f.is_file():
      f.write_bytes(b'')
  code, _, err = cli('evaluate', f'--workdir={best}')
  t.add('latest best-on-dev parameters emptied', '`evaluate`', code, shown(err), code == 0 and 'unreadable' in err,
        'warning naming them; scores the previous best')
  broken = copy('broken_config')
  (broken / 'config.json').write_text('{"seed": 0, "task"')
  code, _, err = cli('evaluate', f'--workdir={broken}')
  t.add('config.json cut short', '`evaluate`', code, shown(err), one_error(code, err) and 'config.json' in err,
        'one line naming the file')


def command_lines(s: Shared):
  """Misspelt or unknown config, `evaluate`/`predict` without a checkpoint, an output folder missing."""
  t, tmp, base, bib, rows_arff = s.t, s.tmp, s.base, s.bib, s.rows_arff
  code, _, err = cli('main', *TINY, f'--workdir={tmp / "w"}', '--config.optimzer.learning_rate=1')
  t.add('misspelt config override', '`main --config.optimzer.learning_rate=1`', code, shown(err),
        one_error(code, err, 2) and 'Did you mean' in err, 'one line with the suggestion; exit 2')
  code, _, err = cli('main', '--config=configs/nope.py', f'--workdir={tmp / "w"}')
  t.add('config file that does not exist', '`main --config=configs/nope.py`', code, shown(err),
        one_error(code, err, 2), 'one line; exit 2')
  code, _, err = cli('main', *TINY, f'--workdir={tmp / "w"}', '--config.method=implicitt')
  t.add('unknown config value', '`main --config.method=implicitt`', code, shown(err), one_error(code, err),
        'one line naming the field')
  empty = tmp / 'empty'
  empty.mkdir()
  shutil.copy(base / 'config.json', empty / 'config.json')
  for module, extra in (('evaluate', []), ('predict', [f'--input={rows_arff}'])):
    code, _, err = cli(module, f'--workdir={empty}', *extra)
    t.add(f'`{module}` on a workdir with no checkpoint', f'`{module}`', code, shown(err), one_error(code, err),
          'one line')
  code, _, err = cli('predict', f'--workdir={bib}', f'--input={rows_arff}', f'--output={tmp}/no/dir/out.txt')
  t.add('`predict --output` into a missing folder', '`predict`', code, shown(err), one_error(code, err),
        'one line, before any work')


def tracebacks_and_lost_files(s: Shared):
  """Command lines and workdirs that once ended in a traceback or lost the user's files."""
  t, tmp, bib, rows_arff = s.t, s.tmp, s.bib, s.rows_arff
  code, _, err = cli('main', *TINY, f'--workdir={tmp / "w"}', '--config.optimizer.learning_rat=1')
  t.add('misspelt nested config override', '`main --config.optimizer.learning_rat=1`', code, shown(err),
        one_error(code, err, 2) and 'learning_rat' in err, 'one line naming the field; exit 2')
  broken_configs = {'a syntax error': 'def get_config(:\n  pass\n', 'no get_config()': 'X = 1\n',
                    'get_config() raising': 'def get_config():\n  raise RuntimeError("boom")\n',
                    'get_config() returning a dict': 'def get_config():\n  return {"seed": 0}\n'}
  for k, (what, text) in enumerate(broken_configs.items()):
    path = tmp / f'config_{k}.py'
    path.write_text(text)
    code, _, err = cli('main', f'--config={path}', f'--workdir={tmp / "w"}')
    t.add(f'config file with {what}', '`main --config=FILE`', code, shown(err),
          one_error(code, err, 2) and str(path) in err, 'one line naming the file; exit 2')
  own = tmp / 'own_files'
  own.mkdir()
  mine = {'config.json': '{"lr": 0.1}', 'metrics.json': '{"accuracy": 0.9}', 'data.json': '[1, 2, 3]'}
  for name, text in mine.items():
    (own / name).write_text(text)
  code, _, err = cli('main', *TINY, f'--workdir={own}')
  t.add('`--workdir` holding the user\'s own config.json, metrics.json, data.json', '`main`', code, shown(err),
        one_error(code, err) and all((own / n).read_text() == v for n, v in mine.items()) and
        len(list(own.iterdir())) == 3, 'refused in one line naming them; nothing written')
  before = rows_arff.read_text()
  code, _, err = cli('predict', f'--workdir={bib}', f'--input={rows_arff}', f'--output={rows_arff}')
  t.add('`predict --output` equal to `--input`', '`predict`', code, shown(err),
        one_error(code, err) and rows_arff.read_text() == before, 'refused in one line; the input untouched')


def prediction_inputs(s: Shared):
  """ARFFs and .npy files given to `predict`: features reordered or renamed, Inf, the files of prediction_files."""
  t, tmp, bib, rows_arff, test, names, rows = s.t, s.tmp, s.bib, s.rows_arff, s.test, s.names, s.rows
  code, original, _ = cli('predict', f'--workdir={bib}', f'--input={rows_arff}', '--threshold=0.2')
  order = list(range(len(test.feature_names)))[::-1]
  permuted = tmp / 'permuted.arff'
  permuted.write_text(arff_text([test.feature_names[j] for j in order] + list(test.label_names),
                                np.concatenate([test.x[:6][:, order], test.y[:6]], axis=1)))
  code, out, err = cli('predict', f'--workdir={bib}', f'--input={permuted}', '--threshold=0.2')
  t.add('`predict` on an ARFF with the features in another order', '`predict`', code, shown(err),
        code == 0 and out == original and original.strip() != '', 'the same labels as the original order')
  renamed = tmp / 'renamed.arff'
  renamed.write_text(arff_text(['abstrakt' if n == 'abstract' else n for n in names], rows))
  code, _, err = cli('predict', f'--workdir={bib}', f'--input={renamed}')
  t.add('`predict` on an ARFF with a renamed feature', '`predict`', code, shown(err),
        one_error(code, err) and 'abstrakt' in err, 'one line naming the names that differ')
  nan = tmp / 'nan.npy'
  values = np.zeros((3, len(test.feature_names)), np.float32)
  values[1, 4] = np.inf
  np.save(nan, values)
  code, _, err = cli('predict', f'--workdir={bib}', f'--input={nan}')
  t.add('`predict` on a .npy holding Inf', '`predict`', code, shown(err), one_error(code, err) and '(1, 4)' in err,
        'one line naming the example and column')
  prediction_files(t, tmp, bib, rows_arff, original)


def label_files(s: Shared):
  """MULAN files read by the library: a UTF-8 BOM, label XMLs that omit labels or contradict the ARFF."""
  t, tmp = s.t, s.tmp
  fixtures = ROOT / 'tests' / 'fixtures' / 'mlc'
  bom = tmp / 'bom.arff'
  bom.write_bytes(b'\xef\xbb\xbf' + (fixtures / 'bibtex_cut.arff').read_bytes())
  try:
    ok = read_mulan(bom, fixtures / 'bibtex_cut.xml').x.shape[0] == 5
    seen = ['(read)']
  except ValueError as e:
    ok, seen = False, [str(e)]
  t.add('UTF-8 BOM at the start of an ARFF', '`read_mulan`', None, seen, ok, 'read as without it')
  label_names = read_mulan(fixtures / 'bibtex_cut.arff', fixtures / 'bibtex_cut.xml').label_names
  short = tmp / 'short.xml'
  short.write_text('<labels>' + ''.join(f'<label name="{n}"/>' for n in label_names[:7]) + '</labels>')
  with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter('always')
    read_mulan(fixtures / 'bibtex_cut.arff', short)
  t.add('label XML omitting 3 of the labels', '`read_mulan`', None, [f'warning: {w.message}' for w in caught],
        len(caught) == 1, 'a warning naming the attributes read as features')
  meka = tmp / 'meka.arff'
  meka.write_text("@relation 'r: -C -2'\n@attribute a {0,1}\n@attribute b {0,1}\n@attribute L {0,1}\n@data\n{0 1}\n")
  one = tmp / 'one.xml'
  one.write_text('<labels><label name="L"/></labels>')
  with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter('always')
    labels = read_mulan(meka, one).label_names
  t.add('label XML contradicting the ARFF\'s -C header', '`read_mulan`', None,
        [f'warning: {w.message}' for w in caught],
        labels == ('L',) and len(caught) == 1 and 'following the XML' in str(caught[0].message),
        'the XML decides (MULAN\'s convention), with a warning naming both')
  if t.wants('label XML omitting the first label'):
    first = tmp / 'first.xml'
    first.write_text('<labels>' + ''.join(f'<label name="{n}"/>' for n in label_names[1:]) + '</labels>')
    with warnings.catch_warnings(record=True) as caught:
      warnings.simplefilter('always')
      read_mulan(fixtures / 'bibtex_cut.arff', first)
    t.add('label XML omitting the first label', '`read_mulan`', None, [f'warning: {w.message}' for w in caught],
          len(caught) == 1 and repr(label_names[0]) in str(caught[0].message),
          'a warning naming the attribute read as a feature')


def holes_in_training_files(s: Shared):
  """Inf, or a missing value, in the features of a custom training file."""
  t, tmp = s.t, s.tmp
  holes = tmp / 'holes.arff'
  holes.write_text('@relation r -C -1\n@attribute a numeric\n@attribute b numeric\n@attribute L {0,1}\n@data\n' +
                   ''.join(f'{i},{i % 3},{i % 2}\n' for i in range(30)) + '5,inf,1\n')
  code, _, err = cli('main', '--config=configs/custom.py',
                     f'--config.data.train_file={holes}', '--config.data.protocol=resplit',
                     f'--workdir={tmp / "holes_run"}')
  t.add('Inf in the features of a training file', '`main` on a custom dataset', code, shown(err),
        one_error(code, err) and 'holes.arff:36' in err, 'one line naming file, line and attribute')
  holes.write_text(holes.read_text().replace('5,inf,1', '5,?,1'))
  # data.standardise='auto' imputes a missing value (mean of the train split) since it exists: 'never' is the
  # dataset that does not impute, and the batch fits the file's 19 training rows so that reading is what fails
  code, _, err = cli('main', '--config=configs/custom.py',
                     f'--config.data.train_file={holes}', '--config.data.protocol=resplit',
                     '--config.data.standardise=never', '--config.batch_size=8', f'--workdir={tmp / "holes_run"}')
  t.add('missing (?) feature in a dataset that does not impute', '`main` on a custom dataset', code, shown(err),
        one_error(code, err) and 'holes.arff:36' in err, 'one line naming file, line and attribute')


def engine_cases(s: Shared):
  """The engine and the workdir after training, and the plug-ins that break the contract (ENGINE_CASES)."""
  for case in ENGINE_CASES:  # each adds its rows through t.add, which keeps those --only selects
    case(s.t, s.tmp, s.base)


# --- the data readers and predict on files a new user brings (issue 34) ---------------------------------------
TAGGING = ['--config=configs/tiny_tagging.py', '--config.data.name=twitter_pos', '--config.method=feedforward',
           '--config.num_epochs=1', '--config.batch_size=2', '--config.eval_batch_size=4']


def tagging_data(folder: Path, dev_text: str | None = None) -> Path:
  """A Twitter POS data folder of the fixture's 5 tweets as every split (``dev_text``: the dev file instead)."""
  tweets = (ROOT / 'tests' / 'fixtures' / 'tagging' / 'twitter_pos_oct27_train_cut.conll').read_text()
  (folder / 'twitter_pos').mkdir(parents=True)
  for name in ('oct27.traindev', 'oct27.test', 'daily547.conll'):
    (folder / 'twitter_pos' / name).write_text(dev_text if dev_text is not None and name == 'oct27.test' else tweets)
  return folder


def training_files(t: Table, tmp: Path):
  """Files a new user trains on: MULAN's medical layout, labels not named, too few rows, an empty tagging split,
  GloVe with a NaN, a Cora reference without its end."""
  rng = np.random.default_rng(1)
  custom = ['--config=configs/custom.py', '--config.num_epochs=1', '--config.batch_size=8',
            '--config.eval_batch_size=8']
  if t.wants('MULAN medical'):
    words = [f'w{j}' for j in range(20)]
    labels = ['Class-0-593_70', 'Class-1-079_99', 'Class-2-786_09']
    rows = np.concatenate([rng.integers(0, 2, (40, 20)), rng.integers(0, 2, (40, 3))], axis=1)
    arff = tmp / 'medical-train.arff'
    arff.write_text("@relation 'MEDC: -C 3-weka.filters.unsupervised.instance.RemovePercentage-P70.0-V'\n" +
                    ''.join(f'@attribute {n} {{0,1}}\n' for n in words + labels) + '@data\n' +
                    '\n'.join(','.join(map(str, r)) for r in rows) + '\n')
    xml = tmp / 'medical.xml'
    xml.write_text('<labels xmlns="http://mulan.sourceforge.net/labels">' +
                   ''.join(f'<label name="{n}"/>' for n in labels) + '</labels>')
    code, _, err = cli('main', *custom, f'--config.data.train_file={arff}', f'--config.data.xml_file={xml}',
                       f'--workdir={tmp / "medical_run"}')
    t.add('MULAN medical layout: `-C 45` in @relation, the XML naming the last 45 (here 3)',
          '`main --config=configs/custom.py` with the ARFF and XML', code, shown(err),
          code == 0 and 'following the XML' in err, 'trains on the XML\'s labels, with a warning naming both')
  header = '@relation r\n@attribute a {0,1}\n@attribute b {0,1}\n@attribute c {0,1}\n@data\n'
  for fault, text, extra, check in (
      ('ARFF with features only, to train on', header + '0,1,1\n1,0,0\n' * 10, [], 'no label columns were found'),
      ('ARFF with no rows, to train on', header.replace('r\n', 'r -C -1\n'), [], 'no data rows after @data'),
      ('ARFF with one row, to train on', header.replace('r\n', 'r -C -1\n') + '0,1,1\n', ['--config.batch_size=1'],
       'the dev and test splits are empty')):
    if not t.wants(fault):
      continue
    path, workdir = tmp / f'{fault.split()[2]}.arff', tmp / f'{fault.split()[2]}_run'
    path.write_text(text)
    code, _, err = cli('main', *custom, f'--config.data.train_file={path}', *extra, f'--workdir={workdir}')
    t.add(fault, '`main --config=configs/custom.py`', code, shown(err),
          one_error(code, err) and check in err and not workdir.exists(), 'one line saying what to do; nothing written')
  if t.wants('empty tagging split'):
    folder = tagging_data(tmp / 'empty_split', dev_text='\n\n')
    code, _, err = cli('main', *TAGGING, f'--config.data.data_dir={folder}', f'--workdir={tmp / "empty_split_run"}')
    t.add('empty tagging split', '`main` on Twitter POS with an empty dev file', code, shown(err),
          one_error(code, err) and 'oct27.test: no sentences' in err, 'one line naming the file')
  if t.wants('GloVe file holding NaN'):
    glove = tmp / 'glove.4d.txt'
    glove.write_text('the 0.1 0.2 0.3 0.4\nrt 0.5 nan 0.1 0.2\n')
    code, _, err = cli('main', *TAGGING, f'--config.data.data_dir={tagging_data(tmp / "glove_data")}',
                       '--config.model.embeddings=glove', f'--config.model.embeddings_path={glove}',
                       '--config.model.embedding_dim=4', f'--workdir={tmp / "glove_run"}')
    t.add('GloVe file holding NaN', '`main` on Twitter POS with model.embeddings_path', code, shown(err),
          one_error(code, err) and 'glove.4d.txt:2' in err, 'one line naming the file, line and word, at load')
  if t.wants('Cora reference missing </ref>'):
    cora = tmp / 'cora'
    shutil.copytree(ROOT / 'tests' / 'fixtures' / 'cora' / 'cora_citation', cora / 'cora_citation')
    refs = cora / 'cora_citation' / 'tagged_references.txt'
    text = refs.read_text()
    refs.write_text(text.replace('</ref>', '', 1))
    line = text[:text.index('<ref>')].count('\n') + 1
    code, _, err = cli('main', '--config=configs/cora.py', f'--config.data.data_dir={cora}',
                       '--config.model.embeddings=random', f'--workdir={tmp / "cora_run"}')
    t.add('Cora reference missing </ref>', '`main --config=configs/cora.py`', code, shown(err),
          one_error(code, err) and f'tagged_references.txt:{line}: <ref> is not closed' in err,
          'one line naming the file and line')


def dense_data_changed(t: Table, tmp: Path):
  """A one-epoch MBCE run on a copy of the dense, standardised fixture scaled.arff (split 60/20/20); then its
  training file changed: one feature scaled by 3 (`predict`), its rows shuffled (`evaluate`)."""
  faults = ('`predict` after the training file changed', '`evaluate` after the training file\'s rows were shuffled')
  if not t.wants(*faults):
    return
  data_dir = tmp / 'dense_data'
  data_dir.mkdir()
  shutil.copy(ROOT / 'tests' / 'fixtures' / 'mlc' / 'scaled.arff', data_dir / 'train.arff')
  run = tmp / 'dense_run'
  code, _, err = cli('main', '--config=configs/custom.py', '--config.method=feedforward', '--config.num_epochs=1',
                     '--config.batch_size=10', '--config.eval_batch_size=10', f'--config.data.data_dir={data_dir}',
                     '--config.data.train_file=train.arff', f'--workdir={run}')
  assert code == 0, err
  lines = (data_dir / 'train.arff').read_text().split('\n')
  start = lines.index('@data') + 1
  rows = [line for line in lines[start:] if line.strip()]

  def changed(name, new_rows):
    (tmp / name).mkdir()
    (tmp / name / 'train.arff').write_text('\n'.join(lines[:start] + new_rows) + '\n')
    return tmp / name

  if t.wants(faults[0]):
    new = tmp / 'dense_new.arff'
    new.write_text('\n'.join(lines[:start + 10]) + '\n')  # 10 rows to predict
    scaled = changed('dense_scaled', [','.join(v if j != 4 else f'{float(v) * 3:g}' for j, v in
                                               enumerate(r.split(','))) for r in rows])
    _, before, _ = cli('predict', f'--workdir={run}', f'--input={new}', '--scores', f'--data_dir={data_dir}')
    code, after, err = cli('predict', f'--workdir={run}', f'--input={new}', '--scores', f'--data_dir={scaled}')
    t.add(faults[0] + ' (one feature scaled by 3)', '`predict --scores --data_dir=DIR` on 10 rows', code,
          shown(err), code == 0 and after == before and len(before.split('\n')) == 11,
          'the scores made with the run\'s recorded standardisation statistics, not refitted on today\'s file')
  if t.wants(faults[1]):
    shuffled = changed('dense_shuffled', [rows[i] for i in np.random.default_rng(0).permutation(len(rows))])
    code, _, err = cli('evaluate', f'--workdir={run}', f'--data_dir={shuffled}', '--split=all')
    code2, _, _ = cli('evaluate', f'--workdir={run}', f'--data_dir={data_dir}')
    t.add(faults[1] + ' (custom file split 60/20/20)', '`evaluate --data_dir=DIR --split=all`', code, shown(err),
          one_error(code, err) and f'was trained on other data: the train, dev, test splits read now from '
          f'{shuffled / "train.arff"} differ' in err and code2 == 0,
          'refused in one line naming the splits that differ and the file; the run\'s own data evaluates')


def horses_data(s: Shared):
  """Horse masks stored otherwise than {0, 255} grey, images as .jpg, masks that are not two-valued."""
  t, tmp = s.t, s.tmp
  fixture = ROOT / 'tests' / 'fixtures' / 'horses'
  original = horses.load(str(fixture), 16, 6, 3, 0)[0]
  for encoding in ('0/1', 'red on black RGB', '0/100'):
    fault = f'horse masks stored {encoding}'
    if not t.wants(fault):
      continue
    folder = tmp / f'horses_{encoding.split()[0].replace("/", "_")}'
    shutil.copytree(fixture / 'weizmann_horse', folder / 'weizmann_horse')
    for path in (folder / 'weizmann_horse' / 'masks').iterdir():
      with Image.open(path) as m:
        horse = np.asarray(m) > 0
      if encoding.startswith('red'):
        Image.fromarray(np.stack([horse * 255, 0 * horse, 0 * horse], -1).astype(np.uint8), 'RGB').save(path)
      else:
        Image.fromarray((horse * int(encoding.split('/')[1])).astype(np.uint8), 'L').save(path)
    splits, info = horses.load(str(folder), 16, 6, 3, 0)
    same = all(np.array_equal(splits[s]['y'], original[s]['y']) for s in original)
    seen = [f'(read: horse fraction {info["horse_fraction"]["train"]:.2f} in train)']
    t.add(fault, '`horses.load` (what `main` reads)', None, seen, same, 'read as the {0, 255} originals')
  if t.wants('horse images saved as .jpg'):
    folder = tmp / 'horses_jpg'
    shutil.copytree(fixture / 'weizmann_horse', folder / 'weizmann_horse')
    images = folder / 'weizmann_horse' / 'images'
    for i in (2, 5):
      with Image.open(images / f'image-{i}.png') as im:
        im.save(images / f'image-{i}.jpg', quality=95)
      (images / f'image-{i}.png').unlink()
    (images / 'README.txt').write_text('where the horses came from')
    with warnings.catch_warnings(record=True) as caught:
      warnings.simplefilter('always')
      _, info = horses.load(str(folder), 16, 6, 3, 0)
    t.add('horse images saved as .jpg, and a stray file', '`horses.load`', None,
          [f'warning: {w.message}' for w in caught] + [f'(read: {info["num_pairs"]} pairs)'],
          info['num_pairs'] == 12 and len(caught) == 1 and 'README.txt' in str(caught[0].message),
          'the .jpg images read; the stray file named in a warning')
  if t.wants('horse mask with three values'):
    folder = tmp / 'horses_grey'
    shutil.copytree(fixture / 'weizmann_horse', folder / 'weizmann_horse')
    mask = folder / 'weizmann_horse' / 'masks' / 'mask-0.png'
    with Image.open(mask) as m:
      values = np.asarray(m).copy()
    values[0, :3] = 128  # an anti-aliased edge
    Image.fromarray(values, 'L').save(mask)
    try:
      horses.load(str(folder), 16, 6, 3, 0)
      ok, seen = False, ['(read)']
    except ValueError as e:
      ok, seen = 'mask-0.png: 3 distinct values' in str(e), [str(e)]
    t.add('horse mask with three values', '`horses.load`', None, seen, ok, 'an error naming the file')


def prediction_files(t: Table, tmp: Path, bib: Path, rows_arff: Path, original: str):
  """Files given to predict: labels '?', an object or text .npy, no rows; new text for a tagging run."""
  if t.wants("labels '?' in an ARFF given to `predict`"):
    lines = rows_arff.read_text().split('\n')
    start = lines.index('@data') + 1
    data = read_mulan(rows_arff, num_labels=159)
    unknown = tmp / 'unknown_labels.arff'
    unknown.write_text('\n'.join(lines[:start] + [','.join([*map(str, r.astype(int)), *['?'] * 159]) for r in data.x])
                       + '\n')
    code, out, err = cli('predict', f'--workdir={bib}', f'--input={unknown}', '--threshold=0.2')
    t.add("labels '?' in an ARFF given to `predict`", '`predict`', code, shown(err),
          code == 0 and out == original, 'the labels of the same rows with their gold labels')
  labels_by_name(t, tmp, bib, rows_arff, original)
  objects, text = tmp / 'objects.npy', tmp / 'text.npy'
  np.save(objects, np.array([{'a': 1}, None], dtype=object), allow_pickle=True)
  np.save(text, np.array([['0', '1'], ['1', '0']]))
  empty = tmp / 'no_rows.arff'
  empty.write_text(rows_arff.read_text().split('@data')[0] + '@data\n')
  for fault, path, check in (('`predict` on an object .npy', objects, 'Python objects'),
                             ('`predict` on a text .npy', text, 'holds text'),
                             ('`predict` on an ARFF with no rows', empty, 'no data rows')):
    if t.wants(fault):
      code, _, err = cli('predict', f'--workdir={bib}', f'--input={path}')
      t.add(fault, '`predict`', code, shown(err), one_error(code, err) and check in err,
            'one line saying what the file holds')
  if t.wants('`predict` for a tagging run'):
    run = tmp / 'tagging_run'
    code, _, err = cli('main', *TAGGING, f'--config.data.data_dir={tagging_data(tmp / "tagging_data")}',
                       f'--workdir={run}')
    assert code == 0, err
    sentences = [['I', 'love', 'the', 'Blorptastic', '!'], ['RT', 'zqxv', 'the']]
    raw, conll = tmp / 'new.txt', tmp / 'new.conll'
    raw.write_text('\n'.join(' '.join(s) for s in sentences) + '\n')
    conll.write_text('\n\n'.join('\n'.join(f'{w}\tN' for w in s) for s in sentences) + '\n')
    outs = []
    for path in (raw, conll):
      code, out, err = cli('predict', f'--workdir={run}', f'--input={path}')
      outs.append((code, out, err))
    (c1, o1, e1), (c2, o2, e2) = outs
    tokens = [line.split('\t')[0] for line in o1.split('\n') if line]
    t.add('`predict` for a tagging run, on raw text and on CoNLL columns', '`predict --input=new.txt`, '
          '`--input=new.conll`', c1 or c2, shown(e1) + shown(e2),
          c1 == c2 == 0 and o1 == o2 and tokens == [w for s in sentences for w in s],
          'token<TAB>tag lines, a blank line between sentences; the same for both')
    code, out, err = cli('predict', f'--workdir={run}', f'--input={raw}', '--format=conll')
    t.add('`predict --format=conll` on raw text', '`predict --input=new.txt --format=conll` (2 sentences, 8 words)',
          code, shown(err), one_error(code, err) and f'{raw}:2: 3 columns where line 1 has 5' in err and not out,
          'refused in one line naming the line (it tagged the first word of each line)')
    code, out, err = cli('predict', f'--workdir={run}', f'--input={tmp}')
    t.add('`predict` given a folder as --input', '`predict --input=<a folder>`', code, shown(err),
          one_error(code, err) and f'--input={tmp} is a folder' in err, 'one line naming it a folder')


def labels_by_name(t: Table, tmp: Path, bib: Path, rows_arff: Path, original: str):
  """Label columns reordered or renamed, nominal values declared in another order or unknown to the run."""
  fault = '`predict` on an ARFF with the label columns in reversed order'
  if t.wants(fault):
    path = rewrite_arff(rows_arff, tmp / 'labels_reversed.arff', label_order=np.arange(159)[::-1])
    code, out, err = cli('predict', f'--workdir={bib}', f'--input={path}', '--threshold=0.2')
    t.add(fault, '`predict`', code, shown(err), code == 0 and out == original and original.strip() != '',
          'the same label names as the original order (labels matched by name)')
  fault = '`predict` on an ARFF with a renamed label (TAG_apob as TAG_apoB)'
  if t.wants(fault):
    path = rewrite_arff(rows_arff, tmp / 'label_renamed.arff', rename_label=('TAG_apob', 'TAG_apoB'))
    code, _, err = cli('predict', f'--workdir={bib}', f'--input={path}')
    t.add(fault, '`predict`', code, shown(err), one_error(code, err) and
          f"{path}: no attribute for 1 of the run's labels: 'TAG_apob' (labels are matched by name)" in err,
          'one line naming the file and the label')
  fault = '`predict` on an ARFF whose nominal values are declared in another order ({1,0} for {0,1})'
  if t.wants(fault):
    path = rewrite_arff(rows_arff, tmp / 'nominal_swapped.arff', nominal='{1,0}')
    code, out, err = cli('predict', f'--workdir={bib}', f'--input={path}', '--threshold=0.2')
    t.add(fault, '`predict`', code, shown(err), code == 0 and out == original and original.strip() != '',
          'the same labels as the original file (values matched by value)')
  fault = '`predict` on an ARFF with a nominal value the run never saw'
  if t.wants(fault):
    lines = rewrite_arff(rows_arff, tmp / 'nominal_unknown.arff', nominal='{0,1,2}').read_text().split('\n')
    header = lines.index('@data')
    first = lines[header + 1].split(',')
    first[0] = '2'  # the first feature, '0', takes a value the model never saw
    lines[header + 1] = ','.join(first)
    path = tmp / 'nominal_unknown.arff'
    path.write_text('\n'.join(lines))
    code, _, err = cli('predict', f'--workdir={bib}', f'--input={path}')
    t.add(fault, '`predict` (declared {0,1,2}, a row holding 2)', code, shown(err), one_error(code, err) and
          f"{path}:{header + 2}: feature '0': value '2' is not one the model was trained on {{0,1}}" in err,
          'one line naming the file, line, feature and value')


# The groups main walks, in the order of the table's rows. Each runs its cases unless --only leaves out a case that
# Table.wants guards; the others run unshown (--only's help).
GROUPS = [busy_workdir, bad_workdir, resume_other_config, data_under_a_run, divergence, damage, command_lines,
          tracebacks_and_lost_files, prediction_inputs, label_files, horses_data, holes_in_training_files,
          engine_cases]


def write_table(path: str, rows: list[tuple], minutes: float):
  lines = [
      '# Bad input and faults: what a user sees',
      '',
      f'Made by `python -m experiments.faults` on {datetime.date.today().isoformat()} ({minutes:.1f} min, '
      f'{os.cpu_count()} CPU cores). Each case was run as a user runs it; "stderr" is what it printed there (first '
      'two lines; `$TMP` is the scratch folder). Exit 1 is a bad input or fault, exit 2 a bad command line. The '
      'same behaviour is asserted by `tests/test_faults.py`, `tests/test_predict.py`, `tests/test_arff.py`, '
      '`tests/test_plugins.py`, `tests/test_configs.py`, `tests/test_rescore.py`, `tests/test_multihost.py` (marker '
      'multihost) and the reader tests of each task (`test_mlc_data.py`, `test_tagging_predict.py`, '
      '`test_tagging_embeddings.py`, `test_segmentation.py`, `test_citations.py`).',
      '',
      '| fault | how it was tried | exit | stderr | as it should be | what should happen |',
      '|---|---|---|---|---|---|',
      *[f'| {" | ".join(row)} |' for row in rows],
      '',
  ]
  records.write_page(path, '\n'.join(lines))


def main():
  parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument('--out', default=None, help='the table (default docs/faults.md; none with --only)')
  parser.add_argument('--only', default='', help='keep the cases whose fault holds this text (any case; A|B for '
                      'either); cases in blocks guarded by Table.wants are not run at all, the others run unshown')
  args = parser.parse_args()
  table_path = args.out or (None if args.only else str(ROOT / 'docs' / 'faults.md'))
  tmp = Path(tempfile.mkdtemp(prefix='implicit_jax_faults_'))
  t = Table(tmp, args.only)
  started = time.time()
  shared = shared_runs(t, tmp)
  for group in GROUPS:
    group(shared)
  minutes = (time.time() - started) / 60
  shutil.rmtree(tmp, ignore_errors=True)
  bad = [row[0] for row in t.rows if row[4] != 'yes']
  if table_path is None:
    print(f'{len(t.rows)} cases (--only {args.only!r}; no table written), {len(bad)} not as they should be {bad}')
  else:
    write_table(table_path, t.rows, minutes)
    print(f'wrote {table_path}: {len(t.rows)} cases, {len(bad)} not as they should be {bad}')
  sys.exit(1 if bad else 0)


if __name__ == '__main__':
  main()
