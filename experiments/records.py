"""Run records: what the results scripts commit to docs/ for each run, reading them back, and writing the pages.

A record keeps the run's config (in the current format), command, date, device, split record (``task_info``), final
metrics and seconds, the per-epoch dev history as columns, and, in every record made since they were kept, the
compact dev and test predictions of the best epoch (``predictions``: implicit_jax/engine/predictions.py), from which
experiments/rescore.py recomputes its figures. The per-step training log stays in the run's workdir, out of git.

  python -m experiments.records           # rewrite docs/**/*.json without the paths of the machines that made them
  python -m experiments.records --check   # rewrite nothing: list the records that name such a path, exit 1 if any
"""

import argparse
import datetime
import json
import os
import platform
import re
import sys
import textwrap
from pathlib import Path

import numpy as np

from implicit_jax.engine import cli, config as config_lib, workdir

ROOT = Path(__file__).resolve().parents[1]

SUMMARISED = ('stationarity', 'cosine', 'explicit_norm', 'implicit_norm', 'residual', 'grad_norm', 'loss_prim',
              'loss_aux')


def mean_std(values, scale: float = 100.0, digits: int = 2) -> str:
  """``'mean ± s'`` of ``scale * values``, ``s`` the sample standard deviation (ddof 1, not ``np.std``'s default,
  which is 1.22x smaller for 3 seeds); the mean alone for one value, '–' for none."""
  values = scale * np.asarray(values, dtype=float).reshape(-1)
  if values.size == 0:
    return '–'
  if values.size == 1:
    return f'{values[0]:.{digits}f}'
  return f'{values.mean():.{digits}f} ± {values.std(ddof=1):.{digits}f}'


def paired(what: str, other: dict, base: dict, metric: str) -> str | None:
  """``'- WHAT, paired by seed (METRIC): seed 0 +d0, ...; mean +m, k/n seeds positive.'``; None without common
  seeds."""
  seeds, diffs = paired_diffs(other, base)
  if not seeds:
    return None
  return (f'- {what}, paired by seed ({metric}): ' + ', '.join(f'seed {s} {d:+.2f}' for s, d in zip(seeds, diffs))
          + f'; mean {np.mean(diffs):+.2f}, {sum(d > 0 for d in diffs)}/{len(diffs)} seeds positive.')


def paired_diffs(other: dict, base: dict) -> tuple[list, list]:
  """The seeds both ``{seed: value}`` maps hold, and ``100 * (other - base)`` on each."""
  seeds = sorted(set(base) & set(other))
  return seeds, [100 * (other[s] - base[s]) for s in seeds]


def spread(unit: str = 'seeds') -> str:
  """What ``mean_std`` shows, in the words of every table's caption."""
  return f'mean ± sample standard deviation (ddof 1) over N {unit} (N per row; the value alone where N = 1)'


def _cpuinfo() -> tuple[str, list[str]]:
  """The first processor's model name (else the platform's) and flags, from /proc/cpuinfo where there is one."""
  try:
    lines = Path('/proc/cpuinfo').read_text().splitlines()
  except OSError:
    lines = []
  first = {}
  for key, _, value in (line.partition(':') for line in lines):
    first.setdefault(key.strip(), value.strip())
  return first.get('model name') or platform.processor() or platform.machine(), first.get('flags', '').split()


def machine() -> str:
  """The processor model and core count, e.g. 'Intel(R) Xeon(R) ..., 2 cores' ('1 of 2 cores' for a process pinned
  with taskset, whose s/run is not comparable). Records carry it because XLA:CPU's float rounding differs between
  processors: the same seed can move by a point on another machine, so only same-machine pairs are compared."""
  total = os.cpu_count()
  usable = len(os.sched_getaffinity(0)) if hasattr(os, 'sched_getaffinity') else total
  return f'{_cpuinfo()[0]}, {total if usable == total else f"{usable} of {total}"} cores'


# The /proc/cpuinfo flags that name a vector instruction set (SSE, AVX, AVX2, AVX-512 and its parts, FMA, AMX).
_VECTOR_FLAG = re.compile(r'sse\w*|ssse3|avx\w*|fma\w*|f16c|amx\w*')
_MAX_ISA = re.compile(r'--xla_cpu_max_isa=(\S+)')


def cpu() -> dict:
  """``{'model', 'vector'[, 'xla_max_isa']}``: the processor's vector extensions, and the instruction set XLA was
  capped at (``XLA_FLAGS=--xla_cpu_max_isa=...``). A virtual machine may give processors of different generations
  one name ('AMD EPYC', with and without AVX-512, on which the same seed's test F1 moves by most of a point)."""
  model, flags = _cpuinfo()
  out = {'model': model, 'vector': sorted(f for f in flags if _VECTOR_FLAG.fullmatch(f))}
  pinned = _MAX_ISA.search(os.environ.get('XLA_FLAGS', ''))
  if pinned:
    out['xla_max_isa'] = pinned.group(1)
  return out


# The widest vector set a processor offers, by the flag that marks it, widest first.
_KINDS = (('avx512f', 'AVX-512'), ('avx2', 'AVX2'), ('avx', 'AVX'), ('sse4_2', 'SSE4.2'))


def cpu_kind(record: dict) -> str | None:
  """The widest vector set of a record's ``cpu`` ('AVX-512, XLA capped at AVX2'); None for a record without one."""
  info = record.get('cpu')
  if not info:
    return None
  vector = set(info.get('vector') or ())
  kind = next((name for flag, name in _KINDS if flag in vector), 'no AVX' if vector else 'unknown vector set')
  return f'{kind}, XLA capped at {info["xla_max_isa"]}' if info.get('xla_max_isa') else kind


def made_here() -> dict:
  """The device, machine, CPU and packages of this process: implicit_jax.runner's ``provenance``, called where the
  run trained (a Ray worker, not the driver, whose JAX must not take the GPU its runs share)."""
  import jax  # pylint: disable=import-outside-toplevel
  from importlib import metadata  # pylint: disable=import-outside-toplevel
  # the versions of the packages that set a run's float arithmetic, so that a drift between a record and its rerun on
  # the same machine is traced to them or to the code
  versions = {}
  for name in ('jax', 'jaxlib', 'flax', 'optax', 'numpy'):
    try:
      versions[name] = metadata.version(name)
    except metadata.PackageNotFoundError:
      versions[name] = None
  return {'device': f'{jax.default_backend()}: {jax.devices()[0].device_kind}', 'machine': machine(), 'cpu': cpu(),
          'packages': versions}


def stamp(result: dict) -> dict:
  """``result`` with command, date and where it was made; refused without predictions, as it could not be rescored."""
  if not rescorable(result):
    raise ValueError(f'the {result.get("task")} run\'s result holds no predictions (its evaluator keeps no '
                     'decisions): its record could not be rescored')
  made = {k: result.pop(k) for k in ('device', 'machine', 'cpu', 'packages') if k in result} or made_here()
  result['command'] = 'python ' + ' '.join(sys.argv)
  result['date'] = datetime.datetime.now().isoformat(timespec='seconds')
  result.update(made)  # after command and date, as always
  return result


def train_summary(train_log) -> dict:
  """``{metric: {'median', 'first', 'last'}}`` over the logged steps, for the diagnostics in ``SUMMARISED``."""
  steps = sorted(train_log or {}, key=int)
  out = {}
  for name in SUMMARISED:
    values = [train_log[s][name] for s in steps if name in train_log[s]]
    if values:
      out[name] = {'median': float(np.median(values)), 'first': float(values[0]), 'last': float(values[-1])}
  return out


# Every record's data came from the project's shared data (``../shared/data`` beside the checkout), whatever its path
# on the machine that made it: ``/work/shared/data`` or ``shared/data``, or ``.devdata`` (``.devdata/data``) on the
# GPU machine, a copy sent along with the code.
DATA_DIR = '../shared/data'
_DATA_FLAG = re.compile(r'(--(?:config\.data\.)?data_dir[= ])(\S+)')
_SHARED_DATA = re.compile(r'(^|.*/)(shared/data|\.devdata(/data)?)/?$')
_SCRATCH_WORKDIR = re.compile(r' --workdir[= ]/tmp/\S*')
# A file of scripts/ (where these modules lived before), experiments/ or benchmarks/, as the module run today.
_AS_MODULE = re.compile(r'\bpython3? (scripts|experiments|benchmarks)/(\w+)\.py\b')
_ABSOLUTE = re.compile(r'(?<![\w.~])/[\w.+-]+(?:/[\w.+-]+)+')
# The repository's top-level folders: /anything/<folder>/<file of the repository> names a file of a checkout.
_TOP_LEVEL = ('benchmarks', 'configs', 'docs', 'examples', 'experiments', 'implicit_jax', 'notebooks', 'scripts',
              'tests')


def portable(text: str, workdir: str | None = None) -> str:
  """``text`` (a command, an override) as docs show it: the shared data as ``DATA_DIR``, a repository file relative,
  a scratch /tmp ``--workdir`` dropped, or each --workdir as ``workdir`` (for a command that reads a run's)."""
  text = _DATA_FLAG.sub(lambda m: m.group(1) + (DATA_DIR if _SHARED_DATA.match(m.group(2)) else m.group(2)), text)
  if workdir is None:
    text = _SCRATCH_WORKDIR.sub('', text)
  else:
    text = re.sub(r'(--workdir[= ])\S+', lambda m: m.group(1) + workdir, text)
  text = _ABSOLUTE.sub(lambda m: _in_repository(m.group(0)), text)
  return _AS_MODULE.sub(lambda m: f'python -m {m.group(1).replace("scripts", "experiments")}.{m.group(2)}', text)


def _in_repository(path: str) -> str:
  """``path`` relative to the repository when it names a file of it, from this checkout or another; else as is."""
  parts = Path(path).parts
  for k in range(1, len(parts)):
    rest = Path(*parts[k:])
    if (ROOT / rest).exists() and (Path(*parts[:k]) == ROOT or rest.parts[0] in _TOP_LEVEL):
      return rest.as_posix()
  return path


# A path into the shared data (or the GPU machine's copy) or an installed package (.stub: a stand-in install).
_DATA_PATH = re.compile(r'(?<![\w.~])(?:/[\w.+-]+)*/(?:shared/data|\.devdata(?:/data)?)(?=/|"|\s|$)')
_PACKAGE_PATH = re.compile(r'(?<![\w.~])(?:/[\w.+-]+)*/(?:site-packages|\.stub)/')
# Where a machine's path starts in a string: at its start, or after a space or a flag's '='.
_MACHINE_PATH = re.compile(r'(?:^"|[\s=])/(?:work|root|tmp|home|Users|opt|mnt)/')
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')  # a JSON string literal


def portable_record(text: str) -> str:
  """A run record's JSON text with each string ``portable``, an installed package's files as ``site-packages/...``;
  text-level, so that the record keeps its layout byte for byte elsewhere."""
  checkout = str(ROOT) + '/'  # CI's checkout need not lie under one of _MACHINE_PATH's folders

  def one(m):
    literal = m.group(0)
    if not (_MACHINE_PATH.search(literal) or checkout in literal or _DATA_PATH.search(literal)):
      return literal
    inner = _PACKAGE_PATH.sub('site-packages/', _DATA_PATH.sub(DATA_DIR, literal[1:-1]))
    return '"' + portable(inner) + '"'  # without its quotes: a flag's value runs to the end
  return _STRING.sub(one, text)


def command_list(commands) -> list[str]:
  """``commands`` (run records' ``command`` fields) as a page lists them: ``portable``, distinct, sorted, those that
  differ only in --seeds shown once with their seeds joined."""
  seeds = {}
  for c in (portable(command) for command in commands if command):
    m = re.search(r'--seeds=(\S+)', c)
    key = re.sub(r'--seeds=\S+', '--seeds={}', c) if m else c
    seeds.setdefault(key, set()).update(m.group(1).split(',') if m else [])
  return sorted(k.replace('{}', ','.join(sorted(v, key=int))) if v else k for k, v in seeds.items())


def commands_path(page: Path, section: str = '') -> Path:
  """``<page>[.<section>].commands.txt`` beside the page (a section by other runs: docs/horses.full.commands.txt)."""
  page = Path(page)
  return page.with_name(f'{page.stem}{"." + section if section else ""}.commands.txt')


def write_commands(page: Path, commands, section: str = '', write: bool = True) -> str:
  """Writes ``command_list(commands)`` to ``commands_path(page, section)`` if ``write``; returns the page's link."""
  lines = command_list(commands)
  path = commands_path(page, section)
  if write:
    path.write_text(''.join(f'{c}\n' for c in lines), encoding='utf-8')
  return f'{"the command" if len(lines) == 1 else f"the {len(lines)} commands"} in [{path.name}]({path.name})'


# A page's prose is wrapped before WIDTH columns; a word that would open a markdown block (a list marker, a heading's
# #, a quote, a table row, a fence, HTML, a thematic break or setext underline) never starts a wrapped line.
WIDTH = 120
OPENS_BLOCK = re.compile(r'(?:[-+*=_#]+|\d+[.)])$|>|\||<|`{3}|~{3}|\[[^\]]*\]:')
_LIST_MARKER = re.compile(r'\s*(?:[-+*]|\d+[.)])\s+')
_FIELD = re.compile(r'\{\w+\}')


def _prose(line: str) -> bool:
  """Whether a line is prose: not a table, heading, HTML comment, fence, indented code or a ``{field}`` alone."""
  bare = line.strip()
  return bool(bare) and not (bare.startswith(('|', '#', '<!--', '```', '~~~')) or line.startswith(('    ', '\t'))
                             or _FIELD.fullmatch(bare))


def wrap(text: str, width: int = WIDTH) -> str:
  """``text`` (markdown) with every prose line longer than ``width`` wrapped at word boundaries, a list item's
  continuation lines indented under its text; markdown renders it as it rendered the long lines."""
  out, fence = [], False
  for line in text.split('\n'):
    if line.lstrip().startswith(('```', '~~~')):
      fence = not fence
    if fence or len(line) <= width or not _prose(line):
      out.append(line)
      continue
    marker = _LIST_MARKER.match(line)
    lead = marker.group(0) if marker else re.match(r'\s*', line).group(0)
    # a word that opens a block is glued to the one before it, and 'mean ± s' is one word (\0: a space that does not
    # break); a line runs on where it cannot break
    words = line[len(lead):].split(' ')
    glued = words[0] + ''.join(
        ('\0' if w == '±' or (i > 1 and words[i - 1] == '±') or OPENS_BLOCK.match(w) else ' ') + w
        for i, w in enumerate(words[1:], 1))
    out += [part.replace('\0', ' ') for part in textwrap.wrap(
        glued, width, initial_indent=lead, subsequent_indent=' ' * len(lead), break_long_words=False,
        break_on_hyphens=False)]
  return '\n'.join(out)


def unwrap(text: str) -> str:
  """``wrap``'s inverse, for page templates: each paragraph and list item on one line; a line that is not prose
  (``_prose``) stays as it is, and a line whose first word opens a block starts a new one."""
  out, fence = [], False
  for line in text.split('\n'):
    bare = line.strip()
    if bare.startswith(('```', '~~~')):
      fence = not fence
    if out and not fence and bare and _prose(out[-1]) and _prose(line) and not OPENS_BLOCK.match(bare.split(' ')[0]):
      out[-1] += ' ' + bare
    else:
      out.append(line)
  return '\n'.join(out)


def write_page(path: Path, text: str) -> None:
  """Writes a page of docs/ (``wrap``ped)."""
  Path(path).write_text(wrap(text), encoding='utf-8')


def write_block(path: Path, name: str, body: str) -> None:
  """Writes ``body`` (``wrap``ped) between ``path``'s ``<!-- results:NAME -->`` and ``<!-- /results:NAME -->``."""
  start, end = f'<!-- results:{name} -->', f'<!-- /results:{name} -->'
  text = Path(path).read_text(encoding='utf-8')
  if start not in text or end not in text:
    raise ValueError(f'{Path(path).name}: no {start} ... {end} block to write into')
  head, rest = text.split(start, 1)
  Path(path).write_text(f'{head}{start}\n{wrap(body)}\n{end}{rest.split(end, 1)[1]}', encoding='utf-8')


def history(record: dict) -> list[dict]:
  """The per-epoch history as a list of dicts, from either form."""
  h = record.get('history') or []
  return [dict(zip(h['columns'], row)) for row in h['rows']] if isinstance(h, dict) else h


def last_tenth_gain(record: dict, key: str) -> float:
  """100 x (the best dev ``key`` over the last tenth of the epochs - the best before): above 0, the model chosen on
  dev could still improve with more epochs (NaN for a history of under two tenths)."""
  dev = [h[key] for h in history(record) if key in h]
  tenth = max(1, len(dev) // 10)
  return 100 * (max(dev[-tenth:]) - max(dev[:-tenth])) if len(dev) > tenth else float('nan')


def write(path: Path, result: dict) -> None:
  """Writes a run's (``stamp``ed) result as committed, atomically, ``portable_record``: its train log summarised,
  its config in the current format, one line per history row (columns named once), the rest indented."""
  record = {k: v for k, v in result.items() if k not in ('train_log', 'history')}
  if result.get('train_log'):
    record['train_summary'] = train_summary(result['train_log'])
  record['config'] = config_lib.upgrade(result['config'])
  rows = result.get('history')
  if isinstance(rows, list):
    columns = list(rows[0]) if rows else []
    rows = {'columns': columns, 'rows': [[h.get(c) for c in columns] for h in rows]}
  text = json.dumps(record, indent=2)
  if rows is not None:
    body = ',\n'.join('      ' + json.dumps(row) for row in rows['rows'])
    text = (text[:-2] + ',\n  "history": {\n    "columns": ' + json.dumps(rows['columns']) + ',\n    "rows": [\n'
            + body + ('\n' if body else '') + '    ]\n  }\n}')
  write_file(path, portable_record(text) + '\n')
  assert json.loads(path.read_text())['config'].keys() == record['config'].keys()


def write_file(path: Path, text: str) -> None:
  """Writes ``text`` to ``path`` atomically (``workdir.write_text``), its folder made if need be."""
  path.parent.mkdir(parents=True, exist_ok=True)
  workdir.write_text(str(path), text)


def load(path: Path) -> dict:
  """The run record at ``path``, its history as dicts; ValueError naming the file for JSON that is not an object."""
  record = json.loads(Path(path).read_text())
  if not isinstance(record, dict):
    raise ValueError(f'{path}: not a run record (a JSON {type(record).__name__}, not an object)')
  record['history'] = history(record)
  return record


def device_of(record: dict) -> str:
  """'cpu' or 'gpu': runs made before the device was recorded were all made on the 2-core CPU machine."""
  return str(record.get('device', 'cpu')).split(':')[0]


def rescorable(record: dict) -> bool:
  """Whether a record keeps the predictions that experiments/rescore.py scores again."""
  return bool(record.get('predictions'))


def package_vectors(config) -> None:
  """A record's word-vector file that this machine lacks is read from the package instead: the device runs' files
  (.devdata/glove_ner.txt) held the first 50000 GloVe 6B 50d rows and every CoNLL word, the package's initial table
  (docs/tagging.commands.txt)."""
  model = config.model
  if model.get('embeddings') == 'glove' and model.embeddings_path and not Path(model.embeddings_path).exists():
    print(f'   model.embeddings_path {model.embeddings_path} is not here: the package\'s GloVe 6B 50d instead',
          flush=True)
    model.embeddings_path = ''


def save(path: Path, result: dict) -> None:
  """A fresh run's record, the writer the experiments give implicit_jax.runner."""
  write(path, stamp(result))


def recipe_here(data_dir: str, adapt=None):
  """The runner's ``recipe`` (``--verify``, ``--supersede``): a committed record's config, its data read from
  ``data_dir`` (unless they ship in the package: ``data.data_dir`` empty), then ``adapt(config)`` if given."""
  def recipe(path):
    config = config_lib.from_record(path)
    if config.data.data_dir:
      config.data.data_dir = data_dir
    if adapt:
      adapt(config)
    return config
  return recipe


SAME_COMPUTATION = 'the same computation, its last-bit rounding compounding over the steps into another trajectory'


def rerun_moves(pairs, metric: str = 'test_f1', label: str = 'test F1', dev: str = 'dev_f1',
                why: str = SAME_COMPUTATION) -> str:
  """How far reruns of replaced records moved (``pairs``: ``(name, old, new)`` records of one config and seed): on
  the same kind of device, the median and largest |change| of ``metric`` (x 100) and where the ``dev`` curves part,
  then ``why``; a rerun on the other kind of device counted apart."""
  same = [(n, o, r) for n, o, r in pairs if device_of(o) == device_of(r)]
  text = ''
  if same:
    moves = [100 * (r[metric] - o[metric]) for _, o, r in same]
    # the first epoch whose dev score differs, 0 if none
    parts = [next((a['epoch'] for a, b in zip(o.get('history', []), r.get('history', [])) if a[dev] != b[dev]), 0)
             for _, o, r in same]
    worst = max(range(len(same)), key=lambda i: abs(moves[i]))
    text += (f' On the same kind of device ({len(same)} of them), {label} moved by {np.median(np.abs(moves)):.2f}'
             f' (median of |change|; largest {moves[worst]:+.2f}, {same[worst][0]} seed {same[worst][1]["seed"]}). '
             f'Epoch 1\'s dev F1 equals the old record\'s to every digit in {sum(p != 1 for p in parts)} of '
             f'{len(same)}, every epoch\'s in {sum(p == 0 for p in parts)}'
             + (f', and the others part at epoch {int(np.median([p for p in parts if p]))} (median)'
                if any(parts) else '')
             + f': {why}.')
  moved = [(device_of(o).upper(), device_of(r).upper()) for _, o, r in pairs if device_of(o) != device_of(r)]
  for old, new in sorted(set(moved)):  # CPU -> GPU first
    k = moved.count((old, new))
    text += (f' {k} {"was" if k == 1 else "were"} rerun on a {new} instead of the {old}: another trajectory from the '
             'start.')
  return text


# What a record holds of where and how it was launched, not of what it ran (the data folder, a local copy of the word
# vectors, the dataset its settings were chosen on), and how often it printed and saved (tests/test_resume.py).
_LAUNCH = {'config_file', 'overrides', 'chosen_on', 'data.data_dir', 'model.embeddings_path', 'log_every',
           'checkpoint_every', 'checkpoint_epoch_ends'}


def row_differences(record: dict, config) -> list[str]:
  """The fields where ``record``'s config and ``config`` (its row today, at the record's seed) differ, the epoch
  budget included; a field the record lacks (added since) counts where ``config`` holds other than its default."""
  old = config_lib.flatten(config_lib.upgrade(record['config']))
  new = config_lib.flatten(config_lib.recorded(config))
  defaults = config_lib.flatten(config_lib.recorded(config_lib.base_config(config.task, config.method)))
  return [key for key in sorted((set(old) | set(new)) - _LAUNCH) if old.get(key, defaults.get(key)) != new.get(key)]


def recipe(config_name: str | None, pattern: str, differences=()) -> str:
  """A table row's "config" cell: the row's config where its records are that config (no ``differences``), else
  its records ``pattern`` (each reruns with ``--config=<record>.json``), today's row named beside where there is one."""
  if config_name and not differences:
    return f'`{config_name}`'
  return f'its records `{pattern}`' + (
      f' (today\'s row `{config_name}` differs in {", ".join(sorted(set(differences)))})' if config_name else '')


RECIPE_NOTE = ('Where a row\'s records differ from its config today (or no config holds their design any more), the '
               'cell names the records instead: each is its own recipe, `python -m implicit_jax.main '
               '--config=RECORD --config.data.data_dir=DIR --workdir=DIR2`.')


def main() -> int:
  parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument('--check', action='store_true', help='list the records a rewrite would change; exit 1 if any')
  args = parser.parse_args()
  changed = []
  for path in sorted((ROOT / 'docs').rglob('*.json')):
    text = path.read_text()
    if portable_record(text) != text:
      changed.append(path.relative_to(ROOT))
      if not args.check:
        write_file(path, portable_record(text))
  print(f'{len(changed)} records {"name a machine path" if args.check else "rewritten"}'
        + ''.join(f'\n  {p}' for p in changed[:20]) + ('\n  ...' if len(changed) > 20 else ''))
  return 1 if args.check and changed else 0


if __name__ == '__main__':
  sys.exit(cli.guarded(main))
