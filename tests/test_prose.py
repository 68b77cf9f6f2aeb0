"""docs/results.md's prose against the records: every number in its prose outside the generated blocks (those the
scripts write between ``<!-- results:NAME -->`` markers, which tests/test_tables.py holds to the records) is either
checked here against a computation from the committed records or the papers' published numbers (``CHECKED``: a
passage and what its numbers must be), or listed in ``UNCHECKED`` beside its paragraph: numbers no computation here
reads yet (sweep and benchmark logs, configuration constants, years). A number typed into the prose, or one changed,
fails until it is checked, generated, or listed."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from experiments import mlc, records, reproduce_tagging

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / 'docs' / 'results.md'
NUMBER = re.compile(r'(?<![\w.])[+-]?\d+(?:\.\d+)?(?![\w.])')
_CODE = re.compile(r'`[^`]*`|\]\([^)]*\)')  # code spans and link targets: paths and flags, not figures


def prose(text: str, blank: bool = True) -> list[str]:
  """The paragraphs of ``text`` outside its generated blocks and code fences, each joined into one line (the page
  wraps them), code spans and link targets blanked out (``blank``)."""
  paragraphs, current, block, fence = [], [], False, False
  for line in text.split('\n'):
    if re.match(r'<!-- results:[\w-]+ -->', line):
      block = True
    if line.startswith('```'):
      fence = not fence
    if block or fence or not line.strip():
      if current:
        paragraphs.append(' '.join(current))
      current = []
    else:
      current.append(line.strip())
    if re.match(r'<!-- /results:[\w-]+ -->', line):
      block = False
  if current:
    paragraphs.append(' '.join(current))
  return [_CODE.sub(lambda m: ' ' * len(m.group()), p) if blank else p for p in paragraphs]


def _keyed(text: str) -> list[tuple[str, str]]:
  """``(key, paragraph)`` of ``prose(text)``: the UNCHECKED key the paragraph starts with, else its first 40
  characters as written."""
  out = []
  for raw, blanked in zip(prose(text, blank=False), prose(text)):
    out.append((next((k for k in UNCHECKED if raw.startswith(k)), raw[:40]), blanked))
  return out


def _runs(folder: str, name: str, key: str) -> dict:
  """``{seed: 100 * record[key]}`` of ``docs/<folder>/<name>-seed*.json``."""
  out = {}
  for path in sorted((ROOT / 'docs' / folder).glob(f'{name}-seed*.json')):
    record = records.load(path)
    out[record['seed']] = 100 * record[key]
  return out


def _paired(folder, a, b, key) -> list[float]:
  first, second = _runs(folder, a, key), _runs(folder, b, key)
  return [first[s] - second[s] for s in sorted(set(first) & set(second))]


def _tagging(dataset, a, b, key='test_f1_conlleval') -> list[float]:
  return _paired('tagging/runs', f'{dataset}-{a}', f'{dataset}-{b}', key)


def _mean(values) -> float:
  return float(np.mean(values))


def _published(dataset, system, table):
  return reproduce_tagging.PUBLISHED[dataset][system][table]


def _sweep(folder, name, key='dev_accuracy') -> str:
  return f'{100 * records.load(ROOT / "docs" / "tagging" / "sweeps" / folder / f"{name}-seed0.json")[key]:.2f}'


def _under(dataset, systems, table) -> tuple[str, str]:
  """The span of (published - ours) over ``systems``, one decimal each end."""
  gaps = [_published(dataset, s, table) - _mean(list(_runs('tagging/runs', f'{dataset}-{s}',
                                                             'test_f1_conlleval' if dataset != 'pos'
                                                             else 'test_accuracy').values())) for s in systems]
  return f'{min(gaps):.1f}', f'{max(gaps):.1f}'


def _span_under(dataset) -> tuple[float, float]:
  """The least and greatest (published - ours) over the rows of ``dataset`` with a published number."""
  key = 'test_accuracy' if dataset == 'pos' else 'test_f1_conlleval'
  gaps = [v - _mean(list(runs.values())) for system, pub in reproduce_tagging.PUBLISHED[dataset].items()
          for runs in [_runs('tagging/runs', f'{dataset}-{system}', key)] if runs for v in pub.values()]
  return min(gaps), max(gaps)


def _positive(values) -> str:
  return str(sum(v > 0 for v in values))


# (passage, what its groups must read): each passage matches once in the prose, its groups the values computed.
CHECKED = [
    (r'on bibtex it is ([+-]\d+\.\d+) with mixed signs\. The paper\'s margins \(CD (\d+\.\d+) against MBCE '
     r'(\d+\.\d+) on bibtex\)',
     lambda: (f'{_mean(_paired("mlc/runs", "bibtex-implicit-cd-h400", "bibtex-mbce-h400", "test_f1")):+.2f}',
              f'{mlc.PAPER["bibtex"]["implicit-cd"]:.2f}', f'{mlc.PAPER["bibtex"]["mbce"]:.2f}')),
    (r'rate 0\.5 lifts the CRF from (\d+\.\d+) to (\d+\.\d+) and SPEN from (\d+\.\d+) to (\d+\.\d+) \(NER dev: CRF '
     r'(\d+\.\d+) to (\d+\.\d+)\)',
     lambda: (_sweep('pos-energy-dropout', 'crf'), _sweep('pos-energy-dropout', 'crf-edrop0.5'),
              _sweep('pos-energy-dropout', 'spen'), _sweep('pos-energy-dropout', 'spen-edrop0.5'),
              _sweep('ner-energy-dropout', 'crf', 'dev_f1'), _sweep('ner-energy-dropout', 'crf-edrop0.5', 'dev_f1'))),
    (r'does not move \((\d+\.\d+) against (\d+\.\d+)\)',
     lambda: (_sweep('pos-energy-dropout', 'cd-edrop0.5'),
              f'{_runs("tagging/runs", "pos-implicit-cd-before", "dev_accuracy")[0]:.2f}')),
    (r'is the size of the paper\'s \(([+-]\d+\.\d+)\), positive on all (\d+) seeds',
     lambda: (f'{_published("ner", "implicit-cd", "impl T3") - _published("ner", "bilstm", "impl T3"):+.1f}',
              _positive(_tagging('ner', 'implicit-cd', 'bilstm')))),
    (r'reports SPEN at (\d+\.\d+) and no CRF on NER', lambda: (f'{_published("ner", "spen", "impl T3"):.1f}',)),
    (r'([+-]\d+\.\d+) on NER\+\)',
     lambda: (f'{_mean(_tagging("ner_plus", "infnet-plus-stacked-ge-c", "bilstm")):+.2f}',)),
    (r'Table 4 gains \(([+-]\d+\.\d+) to ([+-]\d+\.\d+) over stacked\)',
     lambda: tuple(f'{v:+.1f}' for v in sorted(
         _published('ner', f'infnet-plus-stacked-ge-{g}', 'InfNet+ T4')
         - _published('ner', 'infnet-plus-stacked', 'InfNet+ T2') for g in 'abc')[::2])),
    (r'separated and shared sit within (\d+\.\d+) of InfNet\+\'s (\d+\.\d+) and (\d+\.\d+)',
     lambda: (f'{reproduce_tagging.TOLERANCE:g}', f'{_published("ner", "infnet-plus-separated", "InfNet+ T2"):.1f}',
              f'{_published("ner", "infnet-plus-shared", "InfNet+ T2"):.1f}')),
    (r'both rows sit (\d+\.\d+)-(\d+\.\d+) under the published ones',
     lambda: _under('ner_fixed', ('bilstm', 'implicit-cd'), 'impl T3')),
    (r'keeps about a third of the paper\'s ([+-]\d+\.\d+) over the BiLSTM, positive on (\d+) of (\d+) seeds',
     lambda: (f'{_published("ner_plus", "implicit-cd", "impl T3") - _published("ner_plus", "bilstm", "impl T3"):+.1f}',
              _positive(_tagging('ner_plus', 'implicit-cd', 'bilstm')),
              str(len(_tagging('ner_plus', 'implicit-cd', 'bilstm'))))),
    (r'the paper\'s CRF gains (\d+\.\d+)',
     lambda: (f'{_published("pos", "crf", "impl T9") - _published("pos", "bilstm", "impl T9"):.1f}',)),
    (r'\(conlleval, paired: margin ([+-]\d+\.\d+) and ([+-]\d+\.\d+), NCE ([+-]\d+\.\d+) and ([+-]\d+\.\d+), (\d+) '
     r'seeds each\)',
     lambda: (*(f'{_mean(_tagging(d, s, "bilstm")):+.2f}' for s in ('seal-margin', 'seal-nce')
                for d in ('ner', 'ner_plus')), str(len(_tagging('ner', 'seal-margin', 'bilstm'))))),
    (r'\(NER strict F1: CD ([+-]\d+\.\d+), (\d+)/(\d+) seeds; POS accuracy: CD ([+-]\d+\.\d+), (\d+)/(\d+)\)',
     lambda: (f'{_mean(_tagging("ner", "implicit-cd", "implicit-cd-before", "test_f1")):+.2f}',
              _positive(_tagging('ner', 'implicit-cd', 'implicit-cd-before', 'test_f1')),
              str(len(_tagging('ner', 'implicit-cd', 'implicit-cd-before', 'test_f1'))),
              f'{_mean(_tagging("pos", "implicit-cd", "implicit-cd-before", "test_accuracy")):+.2f}',
              _positive(_tagging('pos', 'implicit-cd', 'implicit-cd-before', 'test_accuracy')),
              str(len(_tagging('pos', 'implicit-cd', 'implicit-cd-before', 'test_accuracy'))))),
    (r'every row sits (\d+)-(\d+) points under its published number',
     lambda: tuple(f'{v:.0f}' for v in _span_under('pos'))),
    (r'a run took (\d+)-(\d+) s on the 2-core CPU',
     lambda: tuple(f'{f(seconds):.0f}' for seconds in [[records.load(p)['train_seconds'] for p in sorted(
         (ROOT / 'docs' / 'tagging' / 'runs').glob('ner*-implicit-*-before-seed*.json'))]] for f in (min, max))),
]

# Numbers of the prose no computation above reads, by paragraph (its first words): the "Reading it" of the
# multi-label ablation (its records' logs: stationarity, norms, per-seed terms), protocol constants (units, epochs,
# thresholds, steps), years, and log-only figures (run times, steps reached).
UNCHECKED = {
    'Reading it: at threshold 0.5': '0.5 1 150 400 0.5',
    'The same on a GPU': '0.2',
    'Reading it: on bibtex, at both widths': (
        '-0.49 -0.91 150 -0.23 -0.44 400 5 -0.02 -0.08 0.03 0.05 150 400 5 +0.39 +0.11 +0.97 +0.10 +0.25 +0.42 5 20 '
        '0.5 150 400 20 0.025 0.45 5 0.62 +0.32 0.5 +0.29 +0.05 +0.63 +0.60 -0.03 1.5 400 5 -0.23 20 5 8 1.9 0.22 0.11 '
        '0.49 -0.39 -0.57 -0.50 150 20 27.59 0.5 29.10 5 28.97 29.47 0.43 0.92 5 -0.06 +0.67 -0.23 -0.61 -0.44 20 0.5 '
        '5'),
    'The proximal design': (
        '3 150 1 0.10 150 0.06 400 0.72 0.45 5 6 0.34 150 +0.27 0.5 +0.34 +0.22 +0.25 +0.20 +2.42 20 400 1.83 -0.28 '
        '400 0 1 0.5 43.76 42.56 45.11 45.94 150 0 1 -0.11 +0.25 -0.47 5 150 20 0.5 0 44.06 44.66 5'),
    'A second task shows': '2003',
    '## Sequence labeling': '2003',
    '`python -m implicit_jax.main --config=configs/pos.py': '7 2003',
    '**The energy needs': '7 0.5 8 1.6 0 0.5 3 0.10 3',
    'Read by row of that table': '7 3 2 4 1.5 4.5 2018 2026 11 26 11 2 15 200 300 4380 9 0 2',
    '`python -m implicit_jax.main --config=configs/horses.py': '1',
    '`python -m implicit_jax.main --config=configs/cora.py': '10 15',
    'The implicit paper\'s Table 2': '2 2018',
}


def unchecked(text: str) -> dict:
  """``{paragraph's key: its numbers that no CHECKED passage covers}``, for every prose paragraph with such a
  number; a paragraph is keyed by the UNCHECKED key it starts with, else its first 40 characters."""
  out = {}
  for key, paragraph in _keyed(text):
    spans = [(m.start(g), m.end(g)) for passage, _ in CHECKED for m in re.finditer(passage, paragraph)
             for g in range(1, m.re.groups + 1)]
    numbers = [m.group() for m in NUMBER.finditer(paragraph)
               if not any(a <= m.start() and m.end() <= b for a, b in spans)]
    if numbers:
      out[key] = ' '.join(numbers) if key not in out else f'{out[key]} {" ".join(numbers)}'
  return out


def mismatches(text: str) -> list[str]:
  """Each CHECKED passage that does not match exactly once in ``text``'s prose, or whose numbers are not what the
  records give."""
  out = []
  paragraphs = prose(text)
  for passage, compute in CHECKED:
    found = [m for p in paragraphs for m in re.finditer(passage, p)]
    if len(found) != 1:
      out.append(f'{passage!r}: {len(found)} matches in the prose, not 1')
      continue
    expected = compute()
    if found[0].groups() != tuple(expected):
      out.append(f'{passage!r}: the prose reads {found[0].groups()}, the records give {tuple(expected)}')
  return out


def test_the_prose_numbers_are_what_the_records_give():
  assert mismatches(RESULTS.read_text(encoding='utf-8')) == []


def test_every_prose_number_is_checked_generated_or_listed():
  assert unchecked(RESULTS.read_text(encoding='utf-8')) == UNCHECKED


def test_a_changed_number_fails(tmp_path):
  """The check can fail: one number of a checked passage changed, or a number typed into a paragraph."""
  text = RESULTS.read_text(encoding='utf-8')
  old = 'on bibtex it is +0.25 with mixed signs'
  assert old in text
  wrong = mismatches(text.replace(old, 'on bibtex it is +0.52 with mixed signs'))
  assert len(wrong) == 1 and "the prose reads ('+0.52'," in wrong[0]
  head = 'The same on a GPU (one H100, one H200)'
  assert head in text
  typed = unchecked(text.replace(head, 'The same on a GPU (one H100, one H200, 2.5 hours)'))
  assert typed['The same on a GPU'] == '2.5 0.2'


@pytest.mark.parametrize('paragraph, numbers', [('A +0.25 [+1.0, -2] at `--seed=3` ([x](y2.md))', ['+0.25', '+1.0',
                                                                                                  '-2'])])
def test_numbers_are_read_outside_code_and_links(paragraph, numbers):
  assert [m.group() for m in NUMBER.finditer(prose(paragraph)[0])] == numbers
