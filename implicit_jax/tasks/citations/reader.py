"""The Cora citation-field corpus (McCallum et al. 2000; ``cora_citation/tagged_references.txt``): 500 references,
each a ``<ref>`` whose text is cut into fields by inline tags, e.g.::

    <ref><author> A. Cau, R. Kuiper. </author> <title> Formalising ... </title> <date> 1992. </date>
    </ref>

Tokenisation: the text inside each field tag is split on white space; a token keeps its punctuation
(``Kuiper,``, ``1992.``, ``pp.``), which the reward's boundary rule and the token-shape feature read. Text
outside every field tag (a lone ``.`` after the last field in 5 references) is dropped: it has no field and the
13 fields cover every other token. Errors name the file and the line.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import NamedTuple

FIELDS = ('author', 'title', 'editor', 'booktitle', 'date', 'journal', 'volume', 'tech', 'institution', 'pages',
          'location', 'publisher', 'note')  # the 13 fields; a field's tag id is its index here
FILE = 'cora_citation/tagged_references.txt'

_REF_TAG = re.compile(r'<(/?)ref>')
_FIELD = re.compile(r'<(/?)([A-Za-z]+)>')


class Citation(NamedTuple):
  tokens: tuple[str, ...]
  tags: tuple[str, ...]      # one field name per token
  line: int                  # 1-based line of the <ref> in the file


def parse_reference(text: str, where: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
  """``(tokens, tags)`` of one reference's inner text; ``where`` (file:line) names it in errors."""
  tokens, tags, field, pos = [], [], None, 0
  for m in _FIELD.finditer(text):
    closing, name = m.group(1) == '/', m.group(2)
    chunk = text[pos:m.start()]
    pos = m.end()
    if field is not None:
      words = chunk.split()
      tokens.extend(words)
      tags.extend([field] * len(words))
    if name not in FIELDS:
      raise ValueError(f'{where}: unknown field tag <{m.group(1)}{name}>; the fields are {FIELDS}')
    if closing:
      if field != name:
        raise ValueError(f'{where}: </{name}> closes {"nothing" if field is None else f"<{field}>"}')
      field = None
    else:
      if field is not None:
        raise ValueError(f'{where}: <{name}> opens inside <{field}> (fields do not nest)')
      field = name
  if field is not None:
    raise ValueError(f'{where}: <{field}> is never closed')
  if not tokens:
    raise ValueError(f'{where}: a reference without tagged tokens')
  return tuple(tokens), tuple(tags)


def read(path) -> list[Citation]:
  """Every reference of a tagged-references file, in file order. A ``<ref>`` left open (its ``</ref>`` missing) is
  an error naming its line, not a reference swallowing the next one."""
  path = Path(path)
  if not path.is_file():
    raise FileNotFoundError(f'{path}: no such file (the Cora citations are read from {FILE} under '
                            f'data.data_dir)')
  text = path.read_text(encoding='utf-8', errors='replace')
  out, start, first = [], None, 0
  for m in _REF_TAG.finditer(text):
    line = text.count('\n', 0, m.start()) + 1
    if not m.group(1):
      if start is not None:
        raise ValueError(f'{path}:{first}: <ref> is not closed before the next <ref> on line {line}: add </ref> at '
                         'the end of the reference')
      start, first = m.end(), line
    elif start is None:
      raise ValueError(f'{path}:{line}: </ref> closes no <ref>')
    else:
      tokens, tags = parse_reference(text[start:m.start()], f'{path}:{first}')
      out.append(Citation(tokens, tags, first))
      start = None
  if start is not None:
    raise ValueError(f'{path}:{first}: <ref> is never closed: add </ref> at the end of the reference')
  if not out:
    raise ValueError(f'{path}: no <ref>...</ref> reference found')
  return out


def untagged_tokens(reference_text: str) -> tuple[str, ...]:
  """The tokens of a reference with every tag removed, as a user's untagged citation would give them (the text
  outside fields dropped as ``parse_reference`` drops it)."""
  kept = re.sub(r'</[A-Za-z]+>(.*?)(?=<[A-Za-z]+>|$)', ' ', reference_text, flags=re.S)
  return tuple(re.sub(r'<[A-Za-z]+>', ' ', kept).split())
