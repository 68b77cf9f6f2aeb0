"""Run records: what the results scripts commit to docs/ for each run, and reading them back.

A record keeps what a table or a reader needs: the run's config (in the current format), command, date, device,
split record (``task_info``), final metrics and seconds, the per-epoch dev history as columns (one row per
epoch), and, in every record made since they were kept, the compact dev and test predictions of the best epoch
(``predictions``: implicit_jax/engine/predictions.py), from which experiments/rescore.py recomputes its figures. The
per-step training log stays in the run's workdir (``metrics.json``), out of git.

  python -m experiments.records --compact docs/   # rewrite older, full records in this form (idempotent)
"""

import argparse
import json
import re
import sys
from pathlib import Path

import numpy as np

from implicit_jax.engine import config as config_lib

# The repository: paths under it are shown relative to it.
ROOT = Path(__file__).resolve().parents[1]

# Training diagnostics a record keeps in summary (the per-step log itself stays in the workdir).
SUMMARISED = ('stationarity', 'cosine', 'explicit_norm', 'implicit_norm', 'residual', 'grad_norm', 'loss_prim',
              'loss_aux')


def mean_std(values, scale: float = 100.0, digits: int = 2) -> str:
  """``'mean ± s'`` of ``scale * values``, ``s`` the sample standard deviation (ddof 1), the spread every results
  table reports (``spread``); the mean alone for one value, '–' for none. Not ``np.std``'s default (ddof 0, the
  population one), which is sqrt((N - 1) / N) of it: 1.22x smaller for 3 seeds, 1.41x for 2."""
  values = scale * np.asarray(values, dtype=float).reshape(-1)
  if values.size == 0:
    return '–'
  if values.size == 1:
    return f'{values[0]:.{digits}f}'
  return f'{values.mean():.{digits}f} ± {values.std(ddof=1):.{digits}f}'


def paired(what: str, other: dict, base: dict, metric: str) -> str | None:
  """``'- WHAT, paired by seed (METRIC): seed 0 +d0, ...; mean +m, k/n seeds positive.'`` for ``{seed: value}`` maps
  (x 100, ``other - base`` over the seeds both hold), None when they share no seed: the line every table prints
  under its rows."""
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
  """What ``mean_std`` shows, in the words every table's caption uses: N is each row's count of ``unit``."""
  return f'mean ± sample standard deviation (ddof 1) over N {unit} (N per row; the value alone where N = 1)'


def _cpuinfo() -> tuple[str | None, list[str]]:
  """The first processor's model name and flags in /proc/cpuinfo (Linux); (None, []) where there is none."""
  model, flags = None, []
  try:
    for line in Path('/proc/cpuinfo').read_text().splitlines():
      key, _, value = line.partition(':')
      if key.strip() == 'model name' and model is None:
        model = value.strip()
      elif key.strip() == 'flags' and not flags:
        flags = value.split()
      if model is not None and flags:
        break
  except OSError:
    pass
  return model, flags


def machine() -> str:
  """The processor model and core count of this machine, e.g. 'Intel(R) Xeon(R) ..., 2 cores' ('1 of 2 cores' for a
  pinned process). Records carry it because XLA:CPU's float rounding differs between processors: the same seed's
  run on another machine can move by a point (bibtex seed 0: 39.54 on an AMD EPYC, 40.52 on an Intel Xeon), so only
  same-machine pairs are compared. The model name alone does not tell them apart: ``cpu`` adds what it does not say."""
  import os  # pylint: disable=import-outside-toplevel
  import platform  # pylint: disable=import-outside-toplevel
  model = _cpuinfo()[0] or platform.processor() or platform.machine()
  total = os.cpu_count()
  # a run pinned to fewer cores (taskset) is that much slower: its s/run is not comparable with an unpinned one's
  usable = len(os.sched_getaffinity(0)) if hasattr(os, 'sched_getaffinity') else total
  return f'{model}, {total} cores' if usable == total else f'{model}, {usable} of {total} cores'


# The /proc/cpuinfo flags that name a vector instruction set (SSE, AVX, AVX2, AVX-512 and its parts, FMA, AMX).
_VECTOR_FLAG = re.compile(r'sse\w*|ssse3|avx\w*|fma\w*|f16c|amx\w*')
_MAX_ISA = re.compile(r'--xla_cpu_max_isa=(\S+)')


def cpu() -> dict:
  """``{'model', 'vector'[, 'xla_max_isa']}``: the processor's model and the vector extensions it offers, and the
  instruction set XLA was capped at (``XLA_FLAGS=--xla_cpu_max_isa=...``) when it was. A virtual machine may give
  processors of different generations one name ('AMD EPYC' both for the machine that made the bibtex main job's
  records and for an AVX-512 one, on which the same seed's test F1 moves by most of a point: README, main job), so
  the name alone cannot tell a record's reader which of them a rerun should repeat."""
  import os  # pylint: disable=import-outside-toplevel
  import platform  # pylint: disable=import-outside-toplevel
  model, flags = _cpuinfo()
  out = {'model': model or platform.processor() or platform.machine(),
         'vector': sorted(f for f in flags if _VECTOR_FLAG.fullmatch(f))}
  pinned = _MAX_ISA.search(os.environ.get('XLA_FLAGS', ''))
  if pinned:
    out['xla_max_isa'] = pinned.group(1)
  return out


# The widest vector set a processor offers, by the flag that marks it, widest first, as cpu_kind names it.
_KINDS = (('avx512f', 'AVX-512'), ('avx2', 'AVX2'), ('avx', 'AVX'), ('sse4_2', 'SSE4.2'))


def cpu_kind(record: dict) -> str | None:
  """The kind of CPU a record's run was compiled for: its widest vector set ('AVX-512', 'AVX2', ...), the
  ``xla_max_isa`` cap beside it where there was one ('AVX-512, XLA capped at AVX2'); None for a record made before
  records named it (``cpu``)."""
  info = record.get('cpu')
  if not info:
    return None
  vector = set(info.get('vector') or ())
  kind = next((name for flag, name in _KINDS if flag in vector), 'no AVX' if vector else 'unknown vector set')
  return f'{kind}, XLA capped at {info["xla_max_isa"]}' if info.get('xla_max_isa') else kind


def made_here() -> dict:
  """What a record says of the process that trained its run: device, machine, CPU and packages. The experiments give it
  to implicit_jax.runner as ``provenance``, which calls it where the run trained: a Ray worker, not the driver that
  writes the record (whose JAX must not take the GPU its runs share)."""
  import jax  # pylint: disable=import-outside-toplevel
  return {'device': f'{jax.default_backend()}: {jax.devices()[0].device_kind}', 'machine': machine(), 'cpu': cpu(),
          'packages': packages()}


MADE = ('device', 'machine', 'cpu', 'packages')


def stamp(result: dict) -> dict:
  """``result`` with what a fresh run's record says of how it was made: command, date, device, machine and CPU (those
  the runner's ``provenance`` added where the run trained, else this process's). A fresh run's result must hold its
  predictions, which make the record rescorable (experiments/rescore.py)."""
  import datetime  # pylint: disable=import-outside-toplevel
  if not rescorable(result):
    raise ValueError(f'the {result.get("task")} run\'s result holds no predictions (its evaluator keeps no '
                     'decisions): its record could not be rescored')
  made = {k: result.pop(k) for k in MADE if k in result} or made_here()  # after command and date, as always
  result['command'] = 'python ' + ' '.join(sys.argv)
  result['date'] = datetime.datetime.now().isoformat(timespec='seconds')
  result.update(made)
  return result


def packages() -> dict:
  """The versions of the packages that set a run's float arithmetic, beside the machine: bibtex MBCE seed 0, recorded
  on 2026-11-23 with neither (test F1 @0.5 0.378319), gives 0.381079 from the code of its own commit (cf07fb7) on
  an AMD EPYC with the packages installed on 2026-11-26; with both recorded, such a drift is traced to one or the
  other instead of to the code."""
  from importlib import metadata  # pylint: disable=import-outside-toplevel
  out = {}
  for name in ('jax', 'jaxlib', 'flax', 'optax', 'numpy'):
    try:
      out[name] = metadata.version(name)
    except metadata.PackageNotFoundError:
      out[name] = None
  return out


def train_summary(train_log) -> dict:
  """``{metric: {'median', 'first', 'last'}}`` over the logged steps, for the diagnostics in ``SUMMARISED``."""
  if not train_log:
    return {}
  steps = sorted(train_log, key=int)
  out = {}
  for name in SUMMARISED:
    values = [train_log[s][name] for s in steps if name in train_log[s]]
    if values:
      out[name] = {'median': float(np.median(values)), 'first': float(values[0]), 'last': float(values[-1])}
  return out


def compact(result: dict) -> dict:
  """The committed form of a run's result (``train_and_evaluate``'s dict plus command, date and device)."""
  record = {k: v for k, v in result.items() if k != 'train_log'}
  if result.get('train_log'):
    record['train_summary'] = train_summary(result['train_log'])
  record['config'] = config_lib.upgrade(result['config'])
  history = result.get('history')
  if isinstance(history, list):
    columns = list(history[0]) if history else []
    record['history'] = {'columns': columns, 'rows': [[h.get(c) for c in columns] for h in history]}
  return record


# How docs show a data directory: every record's data came from the project's shared data (``../shared/data``
# beside the checkout), whatever the path of the machine that made it: ``/work/shared/data`` or ``shared/data`` on
# the CPU machine, ``.devdata`` (``/work/main/.devdata``, ``.devdata/data``) on the GPU machine, where it was a copy
# of the shared data sent along with the code.
DATA_DIR = '../shared/data'
_DATA_FLAG = re.compile(r'(--(?:config\.data\.)?data_dir[= ])(\S+)')
_SHARED_DATA = re.compile(r'(^|.*/)(shared/data|\.devdata(/data)?)/?$')
_SCRATCH_WORKDIR = re.compile(r' --workdir[= ]/tmp/\S*')
# A command that ran a file of scripts/ (where these modules lived before), experiments/ or benchmarks/ is shown as
# the module it is run as today, from the repository's root.
_AS_MODULE = re.compile(r'\bpython3? (scripts|experiments|benchmarks)/(\w+)\.py\b')
_ABSOLUTE = re.compile(r'(?<![\w.~])/[\w.+-]+(?:/[\w.+-]+)+')
# The repository's top-level folders: /anything/<folder>/<file of the repository> names a file of a checkout.
_TOP_LEVEL = ('benchmarks', 'configs', 'docs', 'examples', 'experiments', 'implicit_jax', 'notebooks', 'scripts',
              'tests')


def portable(text: str, workdir: str | None = None, root: Path = ROOT) -> str:
  """``text`` (a run's command, an override) without the paths of the machine that made it, as docs show it: a
  data directory of the shared data becomes ``DATA_DIR`` (``../shared/data``); an absolute path to a file of the
  repository, in this checkout or another (``/work/main/tests/...``), becomes relative to the repository; a
  ``--workdir`` under /tmp, a reproduce script's scratch folder for a run's per-step log (each script has a default
  one there), is dropped. ``workdir``: for a command whose --workdir is its input (a run it analyses), the
  placeholder every --workdir becomes instead (e.g. 'WORKDIR'), which the page then says what run it is."""
  text = _DATA_FLAG.sub(lambda m: m.group(1) + (DATA_DIR if _SHARED_DATA.match(m.group(2)) else m.group(2)), text)
  if workdir is None:
    text = _SCRATCH_WORKDIR.sub('', text)
  else:
    text = re.sub(r'(--workdir[= ])\S+', lambda m: m.group(1) + workdir, text)
  text = _ABSOLUTE.sub(lambda m: _in_repository(m.group(0), root), text)
  return _AS_MODULE.sub(lambda m: f'python -m {m.group(1).replace("scripts", "experiments")}.{m.group(2)}', text)


# A path, anywhere in a record's text, into the shared data (or the GPU machine's copy of it) or an installed
# package: what follows it is the same on every machine.
_DATA_PATH = re.compile(r'(?<![\w.~])(?:/[\w.+-]+)*/(?:shared/data|\.devdata(?:/data)?)(?=/|"|\s|$)')
_PACKAGE_PATH = re.compile(r'(?<![\w.~])(?:/[\w.+-]+)*/(?:site-packages|\.stub)/')  # .stub: a stand-in install
# Where a machine's path starts in a string: at its start, or after a space or a flag's '='.
_MACHINE_PATH = re.compile(r'(?:^"|[\s=])/(?:work|root|tmp|home|Users|opt|mnt)/')
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')  # a JSON string literal


def portable_record(text: str, root: Path = ROOT) -> str:
  """A run record's JSON text without the paths of the machine that made it, as ``portable`` writes a command:
  the shared data as ``DATA_DIR``, files of the repository relative to it, an installed package's files as
  ``site-packages/...``, and a reproduce script's scratch ``--workdir`` left out of its command. Text-level, so
  that the record keeps its layout byte for byte elsewhere; a record's data folder is ``--config.data.data_dir``
  of its rerun, relative to the checkout by default."""
  checkout = str(root) + '/'  # wherever the checkout lies (CI's need not be under one of _MACHINE_PATH's folders)

  def one(m):
    literal = m.group(0)
    # most literals, encoded arrays among them; the shared data wherever it lies (CI's is beside its checkout)
    if not (_MACHINE_PATH.search(literal) or checkout in literal or _DATA_PATH.search(literal)):
      return literal
    inner = _PACKAGE_PATH.sub('site-packages/', _DATA_PATH.sub(DATA_DIR, literal[1:-1]))  # before the checkout's
    return '"' + portable(inner, root=root) + '"'  # without its quotes: a flag's value runs to the end
  return _STRING.sub(one, text)


def _in_repository(path: str, root: Path) -> str:
  """``path`` relative to the repository when it names a file of it, from this checkout or another; else as is."""
  parts = Path(path).parts
  for k in range(1, len(parts)):
    rest = Path(*parts[k:])
    if (root / rest).exists() and (Path(*parts[:k]) == root or rest.parts[0] in _TOP_LEVEL):
      return rest.as_posix()
  return path


def merge_seeds(commands) -> list[str]:
  """The distinct commands, sorted, those that differ only in --seeds shown once with their seeds joined."""
  seeds = {}
  for c in commands:
    m = re.search(r'--seeds=(\S+)', c)
    key = re.sub(r'--seeds=\S+', '--seeds={}', c) if m else c
    seeds.setdefault(key, set()).update(m.group(1).split(',') if m else [])
  return sorted(k.replace('{}', ','.join(sorted(v, key=int))) if v else k for k, v in seeds.items())


def command_list(commands) -> list[str]:
  """``commands`` (run records' ``command`` fields) as a page lists them: ``portable``, then ``merge_seeds``."""
  return merge_seeds(portable(c) for c in commands if c)


def commands_path(page: Path, section: str = '') -> Path:
  """Where a page's command list goes: beside it, ``<page>.commands.txt`` (docs/mlc_results.md:
  docs/mlc_results.commands.txt), or ``<page>.<section>.commands.txt`` for a section of the page made by other
  runs (docs/horses.md's ``--scale=full`` section: docs/horses.full.commands.txt)."""
  page = Path(page)
  return page.with_name(f'{page.stem}{"." + section if section else ""}.commands.txt')


def write_commands(page: Path, commands, section: str = '', write: bool = True) -> str:
  """Writes ``command_list(commands)``, one command a line, to ``commands_path(page, section)`` (not when
  ``write`` is False), and returns ``the N commands in [NAME](NAME)`` (``the command in ...`` for one), the link to
  it from the page: what a page's "made by" paragraph says instead of listing the commands inline."""
  lines = command_list(commands)
  path = commands_path(page, section)
  if write:
    path.write_text(''.join(f'{c}\n' for c in lines), encoding='utf-8')
  return f'{"the command" if len(lines) == 1 else f"the {len(lines)} commands"} in [{path.name}]({path.name})'


# A line of a page is wrapped before WIDTH columns; a word that would open a markdown block there (a list marker, a
# heading's #, a quote, a table row, a fence, HTML, a thematic break or setext underline) never starts a wrapped
# line, nor does the ± of a mean ± spread.
WIDTH = 120
OPENS_BLOCK = re.compile(r'(?:[-+*=_#]+|\d+[.)])$|>|\||<|`{3}|~{3}|\[[^\]]*\]:')
_LIST_MARKER = re.compile(r'\s*(?:[-+*]|\d+[.)])\s+')


def wrap(text: str, width: int = WIDTH) -> str:
  """``text`` (markdown) with every line of prose longer than ``width`` wrapped at word boundaries, a list item's
  continuation lines indented under its text; tables, headings, HTML comments, indented and fenced code as they
  are. Markdown renders the result as it rendered the long lines: a line break inside a paragraph (or a code span)
  is a space."""
  out, fence = [], False
  for line in text.split('\n'):
    if line.lstrip().startswith(('```', '~~~')):
      fence = not fence
    if (fence or len(line) <= width or line.lstrip().startswith(('|', '#', '<!--', '```', '~~~'))
        or line.startswith(('    ', '\t'))):
      out.append(line)
      continue
    marker = _LIST_MARKER.match(line)
    lead = marker.group(0) if marker else re.match(r'\s*', line).group(0)
    out += _fill(line[len(lead):], lead, ' ' * len(lead), width)
  return '\n'.join(out)


def _fill(text: str, lead: str, indent: str, width: int) -> list[str]:
  """The lines of ``wrap``: ``text``'s words, the first line after ``lead``, the others after ``indent``."""
  words = []
  for word in text.split(' '):  # 'mean ± s' stays on one line
    if words and (word == '±' or words[-1].endswith(' ±')):
      words[-1] += ' ' + word
    else:
      words.append(word)
  lines, current = [], [words[0]]
  for word in words[1:]:
    prefix = indent if lines else lead
    if not word or len(prefix) + len(' '.join(current + [word])) <= width:
      current.append(word)
      continue
    # a new line starts at ``word``, or before it at the nearest word that a line may start with
    candidate = current + [word]
    k = len(current)
    while k > 0 and OPENS_BLOCK.match(candidate[k]):
      k -= 1
    if k == 0:  # nowhere to break: the line runs on
      current.append(word)
      continue
    lines.append(prefix + ' '.join(candidate[:k]))
    current = candidate[k:]
  lines.append((indent if lines else lead) + ' '.join(current))
  return lines


_FIELD = re.compile(r'\{\w+\}')


def unwrap(text: str) -> str:
  """``wrap``'s inverse, for page templates (experiments/tables.py): each paragraph and list item of ``text`` on one
  line (a continuation line joined to the line before with one space, its indent dropped); headings, tables, HTML
  comments, code, blank lines and a line that is one ``{field}`` alone stay as they are and end the paragraph
  before them. A line whose first word opens a block (``OPENS_BLOCK``: a list marker, ...) starts a new one, as
  ``wrap`` never starts a continuation line with such a word."""
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


def _prose(line: str) -> bool:
  bare = line.strip()
  return bool(bare) and not (bare.startswith(('|', '#', '<!--', '```', '~~~')) or line.startswith(('    ', '\t'))
                             or _FIELD.fullmatch(bare))


def write_page(path: Path, text: str) -> None:
  """Writes a page of docs/ (``wrap``ped)."""
  Path(path).write_text(wrap(text), encoding='utf-8')


def write_block(path: Path, name: str, body: str, required: bool = True) -> bool:
  """Writes ``body`` (``wrap``ped) between ``<!-- results:NAME -->`` and ``<!-- /results:NAME -->`` in ``path`` (a
  doc the scripts keep tables in), leaving the rest of the file as it is. A file without the markers: ValueError
  naming it when ``required``, else unchanged. Returns whether it wrote."""
  start, end = f'<!-- results:{name} -->', f'<!-- /results:{name} -->'
  text = Path(path).read_text(encoding='utf-8')
  if start not in text or end not in text:
    if required:
      raise ValueError(f'{Path(path).name}: no {start} ... {end} block to write into')
    return False
  head, rest = text.split(start, 1)
  tail = rest.split(end, 1)[1]
  Path(path).write_text(f'{head}{start}\n{wrap(body)}\n{end}{tail}', encoding='utf-8')
  return True


def history(record: dict) -> list[dict]:
  """The per-epoch history as a list of dicts, from either form."""
  h = record.get('history') or []
  return [dict(zip(h['columns'], row)) for row in h['rows']] if isinstance(h, dict) else h


def last_tenth_gain(record: dict, key: str) -> float:
  """100 x (the best dev ``key`` over the last tenth of the epochs - the best before): above 0, the run found a new
  best in its last tenth, so that the model chosen on dev could still improve with more epochs; the one test of
  "has the dev curve flattened" of every table (NaN for a history of under two tenths)."""
  dev = [h[key] for h in history(record) if key in h]
  tenth = max(1, len(dev) // 10)
  return 100 * (max(dev[-tenth:]) - max(dev[:-tenth])) if len(dev) > tenth else float('nan')


def write(path: Path, result: dict) -> None:
  """Writes ``compact(result)`` atomically: one line per history row, the rest indented."""
  record = compact(result)
  rows = record.pop('history', None)
  text = json.dumps(record, indent=2)
  if rows is not None:
    body = ',\n'.join('      ' + json.dumps(row) for row in rows['rows'])
    text = (text[:-2] + ',\n  "history": {\n    "columns": ' + json.dumps(rows['columns']) + ',\n    "rows": [\n'
            + body + ('\n' if body else '') + '    ]\n  }\n}')
  text = portable_record(text)  # docs name no path of the machine that made them
  path.parent.mkdir(parents=True, exist_ok=True)
  tmp = path.with_suffix(path.suffix + '.tmp')
  tmp.write_text(text + '\n')
  tmp.replace(path)
  assert json.loads(path.read_text())['config'].keys() == record['config'].keys()


def load(path: Path) -> dict:
  """The run record at ``path`` with its per-epoch history read back; ValueError naming the file when it holds
  JSON that is not a record (an object)."""
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
  (their commands say so: docs/tagging.commands.txt). Used by whatever rebuilds a run from its record."""
  model = config.model
  if model.get('embeddings') == 'glove' and model.embeddings_path and not Path(model.embeddings_path).exists():
    print(f'   model.embeddings_path {model.embeddings_path} is not here: the package\'s GloVe 6B 50d instead',
          flush=True)
    model.embeddings_path = ''


def save(path: Path, result: dict) -> None:
  """A fresh run's record: ``write(path, stamp(result))``, the writer the experiments give implicit_jax.runner."""
  write(path, stamp(result))


def recipe_here(data_dir: str, adapt=None):
  """The ``recipe`` the experiments give implicit_jax.runner (``--verify``, ``--supersede``): a committed record's
  config (its row may have changed since), reading its data from ``data_dir`` here (unless its data ship inside
  the package: ``data.data_dir`` empty, bibtex's official split); ``adapt(config)``, if given, points the record's
  other inputs at this machine (``package_vectors``)."""
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
  """How far reruns of replaced records moved, as a page says it: ``pairs`` are ``(name, old, new)`` records of one
  config and seed. On the same kind of device, the median |change| of ``metric`` (x 100) and the largest, and
  where the dev curves (``dev``) part, then ``why`` they part. A rerun on the other kind of device is counted
  apart: another trajectory from the start."""
  same = [(n, o, r) for n, o, r in pairs if device_of(o) == device_of(r)]
  text = ''
  if same:
    moves = [100 * (r[metric] - o[metric]) for _, o, r in same]

    def parting(o, r):  # the first epoch whose dev score differs, 0 if none
      return next((a['epoch'] for a, b in zip(o.get('history', []), r.get('history', [])) if a[dev] != b[dev]), 0)
    parts = [parting(o, r) for _, o, r in same]
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


# What a record holds of where and how it was launched, not of what it ran: a row's config today names its own (the
# data folder, a local copy of the word vectors some NER runs read instead of the package's, and the dataset its
# settings were chosen on, which records older than the field do not name), and how often the run printed and saved,
# which leaves every step as it was (tests/test_resume.py).
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
  """A table row's "config" cell: the row's config where its records are that config (``differences``, the fields
  where any record differs from it, is empty), otherwise its records ``pattern`` (a glob relative to the
  repository), each of which ``python -m implicit_jax.main --config=<record>.json`` reruns: the runs of a row
  changed since they were made (today's row named beside), or of a design no row holds (``config_name`` None)."""
  if config_name and not differences:
    return f'`{config_name}`'
  return f'its records `{pattern}`' + (
      f' (today\'s row `{config_name}` differs in {", ".join(sorted(set(differences)))})' if config_name else '')


RECIPE_NOTE = ('Where a row\'s records differ from its config today (or no config holds their design any more), the '
               'cell names the records instead: each is its own recipe, `python -m implicit_jax.main '
               '--config=RECORD --config.data.data_dir=DIR --workdir=DIR2`.')


def main():
  parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument('--compact', required=True, help='folder whose run records (*/runs/*.json and '
                      'sweeps/*/*.json) are rewritten in the committed form')
  args = parser.parse_args()
  root = Path(args.compact)
  paths = sorted(set(root.glob('**/runs/*.json')) | set(root.glob('sweeps/*/*.json')))
  before = sum(p.stat().st_size for p in paths)
  for p in paths:
    write(p, json.loads(p.read_text()))
  after = sum(p.stat().st_size for p in paths)
  print(f'{len(paths)} records: {before / 1e6:.2f} MB -> {after / 1e6:.2f} MB')


if __name__ == '__main__':
  main()
