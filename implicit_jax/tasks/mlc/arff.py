"""Readers for multi-label classification data in its original ARFF-based formats (numpy only).

Formats
-------
**ARFF** (Weka).  A header of ``@relation NAME``, one ``@attribute NAME TYPE`` line per column and ``@data``,
then one row per line.  Keywords are case-insensitive; ``%`` starts a comment line.  ``TYPE`` is ``numeric``
(also ``real``/``integer``), ``string``, or a nominal list ``{v1,v2,...}``.  Names and values may be quoted
with ``'`` or ``"`` (backslash escapes inside quotes); unquoted names are taken verbatim, so MULAN's
``TAG_m\\'usica`` keeps its backslash, exactly as in the matching XML label file.  Rows are either dense
(``v1,v2,...``, one value per attribute) or sparse (``{i v,j w,...}``, 0-based strictly increasing indices;
an omitted numeric value is 0 and an omitted nominal value is the first declared one).  ``?`` is missing.

**MULAN** (bibtex, delicious, genbase, CAL500).  A plain ARFF file in which some attributes are the labels,
named by a separate XML file ``<labels xmlns="http://mulan.sourceforge.net/labels"><label name="..."/>...``
(labels may nest to form a hierarchy; every ``label`` element at any depth is a label).  **MEKA** files carry
no XML: ``-C n`` in the ``@relation`` name says that the first ``n`` attributes (``n > 0``) or the last
``|n|`` (``n < 0``) are the labels.  Where a file has both and they disagree, the XML decides, as in MULAN, with
a warning (MULAN's medical files say ``-C 45`` while medical.xml names the last 45 attributes).

**Clus HMC** (FunCat ``*_FUN``).  An ARFF file with one ``@attribute class hierarchical p1,p2,...`` whose
value list enumerates the hierarchy nodes as ``/``-separated paths (``01``, ``01/01``, ``01/01/03``).  A
row's class value lists its paths separated by ``@``; a row is positive for each path and all its ancestors.

Encodings chosen here
---------------------
* ``read_mulan``: a nominal feature becomes one column holding the index of its value in the declared list,
  except two-valued yes/no and true/false lists, where yes/true is 1 whatever the declared order
  (genbase declares ``{YES,NO}``).  ``string`` attributes are dropped, and so, by default, are nominal
  features with more than ``ID_LIKE_NOMINAL_VALUES`` declared values: such a column is a row identifier
  (genbase's first attribute ``protein`` is *nominal* with 662 values, not ``string``), and its index
  would be a meaningless ordinal feature.  Pass ``drop_features`` to choose the dropped columns yourself.
  Missing feature values become NaN; a missing or non-0/1 label is an error.
* ``read_clus_hmc``: nominal features are one-hot coded, one column per declared value named
  ``attr=value`` (FunCat's ``failed_pcr {1,2,3,4,5}`` is a category, not an amount); a missing nominal
  value makes its whole block NaN, so that mean imputation fills it with the training frequencies.
  Missing values stay NaN: ``impute_and_standardise`` fills and scales them with training statistics.

Labels keep the order of their attributes in the ARFF file.  Every reader error is a ``ValueError`` whose
message starts with ``PATH:LINE:`` (1-based) where a line is at fault; a missing file is a
``FileNotFoundError`` naming the path.
"""

from __future__ import annotations

import codecs
import dataclasses
import errno
import os
import re
import warnings
import xml.etree.ElementTree as ET
from os import PathLike
from pathlib import Path
from typing import Callable, Iterable, Sequence

import numpy as np

__all__ = [
    'ID_LIKE_NOMINAL_VALUES',
    'MultiLabelData',
    'hierarchy_ancestors',
    'impute_and_standardise',
    'read_clus_hmc',
    'read_mulan',
    'standardisation',
    'standardise',
]

# A nominal feature with more declared values than this is taken to be a row identifier (see module doc).
ID_LIKE_NOMINAL_VALUES = 100

_QUOTES = ('"', "'")
_ESCAPES = {'n': '\n', 't': '\t', 'r': '\r'}
# A whole sparse row body without quotes: "i v,j w,...", validated in one C-level call.
_SPARSE_BODY = re.compile(r'\s*\d+\s+[^\s,{}]+\s*(?:,\s*\d+\s+[^\s,{}]+\s*)*')
_MEKA_C = re.compile(r'(?:^|\s)-C\s+(-?\d+)')
_BOOLEAN_PAIRS = ({'yes', 'no'}, {'true', 'false'})

StrPath = str | PathLike


@dataclasses.dataclass(frozen=True)
class MultiLabelData:
    """Features ``x`` (float32, ``[n, d]``, NaN = missing) and 0/1 labels ``y`` (int8, ``[n, L]``)."""

    x: np.ndarray
    y: np.ndarray
    feature_names: tuple[str, ...]
    label_names: tuple[str, ...]
    source: str
    row_lines: np.ndarray | None = dataclasses.field(default=None, compare=False, repr=False)  # [n] file lines
    # {feature name: {declared value: code}} of the nominal features coded by value (``read_mulan``): a run records
    # its training file's, so that a file declaring the values in another order is read the same way.
    nominal: dict | None = dataclasses.field(default=None, compare=False, repr=False)

    def __post_init__(self):
        # Coerce once here so that every consumer can rely on the dtypes.
        x = np.asarray(self.x, dtype=np.float32)
        y = np.asarray(self.y)
        if y.dtype != np.int8:
            if y.size and not np.isin(y, (0, 1)).all():
                raise ValueError(f'{self.source}: labels must be 0/1')
            y = y.astype(np.int8)
        object.__setattr__(self, 'x', x)
        object.__setattr__(self, 'y', y)
        object.__setattr__(self, 'feature_names', tuple(self.feature_names))
        object.__setattr__(self, 'label_names', tuple(self.label_names))
        if x.ndim != 2 or y.ndim != 2 or x.shape[0] != y.shape[0]:
            raise ValueError(f'{self.source}: x {x.shape} and y {y.shape} must be 2-D with the same rows')
        if x.shape[1] != len(self.feature_names) or y.shape[1] != len(self.label_names):
            raise ValueError(
                f'{self.source}: {x.shape[1]} feature columns / {len(self.feature_names)} names, '
                f'{y.shape[1]} label columns / {len(self.label_names)} names'
            )

    def check_finite(self, allow_missing: bool, why: str = '') -> None:
        """Raises a ValueError naming the file, line and attribute of the first infinite feature, or (unless
        ``allow_missing``) the first missing / NaN one; ``why`` is added to the message about a missing one."""
        bad = np.isinf(self.x) if allow_missing else ~np.isfinite(self.x)
        if not bad.any():
            return
        row, col = np.argwhere(bad)[0]
        where = (f'{self.source}:{self.row_lines[row]}' if self.row_lines is not None
                 else f'{self.source}: row {row + 1}')
        value = self.x[row, col]
        what = f'missing (? or NaN){why}' if np.isnan(value) else f'{value}'
        raise ValueError(f'{where}: feature {self.feature_names[col]!r} is {what}')

    @property
    def num_examples(self) -> int:
        return self.x.shape[0]

    @property
    def label_cardinality(self) -> float:
        """Mean number of positive labels per row."""
        return float(self.y.sum(axis=1).mean()) if self.num_examples else 0.0


# --------------------------------------------------------------------------------------------------------
# Low-level ARFF parsing
# --------------------------------------------------------------------------------------------------------


class _LineError(ValueError):
    """An error about one line; the caller adds ``path:line:`` in front."""


@dataclasses.dataclass(frozen=True)
class _Attribute:
    name: str
    kind: str  # 'numeric' | 'nominal' | 'string' | 'hierarchical'
    values: tuple[str, ...]  # declared nominal values or hierarchy nodes
    line: int


@dataclasses.dataclass(frozen=True)
class _Arff:
    """A parsed ARFF file, data kept as (row, column, value-string) entries until decoded."""

    path: str
    relation: str
    attributes: tuple[_Attribute, ...]
    row_lines: np.ndarray  # [n] 1-based line of each row
    entry_rows: np.ndarray  # [m]
    entry_cols: np.ndarray  # [m]
    entry_vals: np.ndarray  # [m] object array of value strings

    @property
    def num_rows(self) -> int:
        return len(self.row_lines)

    def fail(self, row: int, message: str) -> ValueError:
        return ValueError(f'{self.path}:{self.row_lines[row]}: {message}')


def _read_lines(path: Path) -> list[str]:
    data = path.read_bytes()
    if data.startswith(codecs.BOM_UTF8):  # editors on Windows write one; it is not part of the header
        data = data[len(codecs.BOM_UTF8):]
    try:
        text = data.decode('utf-8')
    except UnicodeDecodeError:  # older Weka files are Latin-1
        text = data.decode('latin-1')
    # split('\n'), not splitlines(): the latter also splits on \x1c, \u2028, ... and would shift line numbers.
    return text.split('\n')


def _unescape(body: str) -> str:
    return re.sub(r'\\(.)', lambda m: _ESCAPES.get(m.group(1), m.group(1)), body)


def _quoted_end(text: str, start: int) -> int:
    """Index of the quote closing the one at ``text[start]``."""
    quote, i = text[start], start + 1
    while i < len(text):
        if text[i] == '\\':
            i += 2
        elif text[i] == quote:
            return i
        else:
            i += 1
    raise _LineError(f'unterminated quote in {text!r}')


def _unquote(field: str) -> str:
    """A stripped field; a quoted one loses its quotes and escapes (ARFF values are one token each)."""
    field = field.strip()
    if not field or field[0] not in _QUOTES:
        return field
    end = _quoted_end(field, 0)
    if end != len(field) - 1:
        raise _LineError(f'unexpected text after quoted value {field!r}')
    return _unescape(field[1:end])


def _raw_fields(text: str) -> list[str]:
    """Split on commas outside quotes, keeping the quotes (slow path, used only when quotes occur)."""
    fields, start, i = [], 0, 0
    while i < len(text):
        if text[i] in _QUOTES:
            i = _quoted_end(text, i) + 1
        elif text[i] == ',':
            fields.append(text[start:i])
            start = i = i + 1
        else:
            i += 1
    fields.append(text[start:])
    return fields


def _split_quoted(text: str) -> list[str]:
    return [_unquote(f) for f in _raw_fields(text)]


def _take_name(text: str) -> tuple[str, str]:
    """Split a (possibly quoted) leading name from the rest of ``text``."""
    text = text.strip()
    if not text:
        raise _LineError('missing attribute name')
    if text[0] in _QUOTES:
        end = _quoted_end(text, 0)
        return _unescape(text[1:end]), text[end + 1 :].strip()
    m = re.match(r'([^\s{]+)\s*(.*)$', text, re.S)
    return m.group(1), m.group(2).strip()


def _parse_attribute(text: str, line: int) -> _Attribute:
    name, spec = _take_name(text)
    low = spec.lower()
    if spec.startswith('{'):
        if not spec.endswith('}'):
            raise _LineError(f'attribute {name!r}: unterminated nominal list {spec!r}')
        values = tuple(_split_quoted(spec[1:-1]))
        if not all(values):
            raise _LineError(f'attribute {name!r}: empty value in nominal list {spec!r}')
        return _Attribute(name, 'nominal', values, line)
    if low in ('numeric', 'real', 'integer'):
        return _Attribute(name, 'numeric', (), line)
    if low == 'string':
        return _Attribute(name, 'string', (), line)
    if low.startswith('hierarchical'):
        nodes = tuple(v.strip() for v in spec[len('hierarchical') :].split(',') if v.strip())
        return _Attribute(name, 'hierarchical', nodes, line)
    raise _LineError(f'attribute {name!r}: unsupported type {spec!r}')


def _parse_header(path: str, lines: list[str]) -> tuple[str, tuple[_Attribute, ...], int]:
    """Returns (relation, attributes, index in ``lines`` of the first line after ``@data``)."""
    relation, attributes, seen = '', [], set()
    for i, raw in enumerate(lines):
        line, lineno = raw.strip(), i + 1
        if not line or line.startswith('%'):
            continue
        keyword = line.split(None, 1)[0].lower()
        try:
            if keyword == '@relation':
                relation = _unquote(line[len('@relation') :])
            elif keyword == '@attribute':
                attr = _parse_attribute(line[len('@attribute') :], lineno)
                if attr.name in seen:
                    raise _LineError(f'duplicate attribute name {attr.name!r}')
                seen.add(attr.name)
                attributes.append(attr)
            elif keyword == '@data':
                if not attributes:
                    raise _LineError('@data before any @attribute')
                return relation, tuple(attributes), i + 1
            else:
                raise _LineError(f'unexpected header line {line[:60]!r}')
        except _LineError as e:
            raise ValueError(f'{path}:{lineno}: {e}') from None
    raise ValueError(f'{path}:{len(lines)}: no @data section')


def _sparse_entries(body: str) -> tuple[list[int], list[str]]:
    """Indices and value strings of a sparse row body ``i v,j w,...`` (without braces)."""
    if not body.strip():
        return [], []
    if '"' not in body and "'" not in body:
        if not _SPARSE_BODY.fullmatch(body):
            raise _LineError(f"malformed sparse row: expected '{{index value,...}}', got {{{body[:80]}}}")
        tokens = body.replace(',', ' ').split()
        return list(map(int, tokens[0::2])), tokens[1::2]
    indices, values = [], []
    for raw in _raw_fields(body):  # slow path, for quoted values
        parts = raw.strip().split(None, 1)
        if len(parts) != 2 or not parts[0].isdigit():
            raise _LineError(f'malformed sparse entry {raw.strip()!r}')
        indices.append(int(parts[0]))
        values.append(_unquote(parts[1]))
    return indices, values


def _dense_values(line: str, num_attributes: int) -> list[str]:
    if '"' in line or "'" in line:
        values = _split_quoted(line)
    else:
        values = line.split(',')
        if ' ' in line or '\t' in line:
            values = [v.strip() for v in values]
    if len(values) != num_attributes:
        raise _LineError(f'dense row has {len(values)} values, expected {num_attributes}')
    return values


def _read_arff(path: StrPath) -> _Arff:
    lines = _read_lines(Path(path))
    path = str(path)
    relation, attributes, start = _parse_header(path, lines)
    num_attributes = len(attributes)
    row_lines, counts, cols, vals, sparse_rows = [], [], [], [], []
    all_columns = range(num_attributes)
    for i in range(start, len(lines)):
        line = lines[i].strip()
        if not line or line.startswith('%'):
            continue
        try:
            if line.startswith('{'):
                if not line.endswith('}'):
                    raise _LineError('sparse row does not end with }')
                indices, values = _sparse_entries(line[1:-1])
                sparse_rows.append(len(row_lines))
            else:
                indices, values = all_columns, _dense_values(line, num_attributes)
        except _LineError as e:
            raise ValueError(f'{path}:{i + 1}: {e}') from None
        row_lines.append(i + 1)
        counts.append(len(values))
        cols.extend(indices)
        vals.extend(values)
    arff = _Arff(
        path=path,
        relation=relation,
        attributes=attributes,
        row_lines=np.asarray(row_lines, dtype=np.int64),
        entry_rows=np.repeat(np.arange(len(row_lines)), counts),
        entry_cols=np.asarray(cols, dtype=np.int64),
        entry_vals=np.asarray(vals, dtype=object),
    )
    _check_sparse_indices(arff, np.asarray(sparse_rows, dtype=np.int64))
    return arff


def _check_sparse_indices(arff: _Arff, sparse_rows: np.ndarray) -> None:
    """Vectorised: indices in range and strictly increasing within each sparse row."""
    num_attributes = len(arff.attributes)
    bad = np.flatnonzero(arff.entry_cols >= num_attributes)
    if bad.size:
        e = bad[0]
        raise arff.fail(
            arff.entry_rows[e],
            f'sparse index {arff.entry_cols[e]} out of range ({num_attributes} attributes)',
        )
    rows, cols = arff.entry_rows, arff.entry_cols
    in_sparse = np.isin(rows, sparse_rows)
    unordered = (rows[1:] == rows[:-1]) & (cols[1:] <= cols[:-1]) & in_sparse[1:]
    if unordered.any():
        e = np.flatnonzero(unordered)[0] + 1
        raise arff.fail(rows[e], f'sparse index {cols[e]} is not greater than the previous one')


# --------------------------------------------------------------------------------------------------------
# Decoding value strings into numbers
# --------------------------------------------------------------------------------------------------------

Coder = Callable[[str], float]  # value string -> number; raises _LineError when invalid


def _numeric_coder(attr: _Attribute) -> Coder:
    def code(value: str) -> float:
        if value == '?':
            return np.nan
        try:
            return float(value)
        except ValueError:
            raise _LineError(f'attribute {attr.name!r}: {value!r} is not a number') from None

    return code


def _nominal_codes(attr: _Attribute, *, truthy_is_one: bool) -> dict[str, float]:
    """Declared value -> code: its index, or yes/true -> 1 for two-valued yes/no, true/false lists."""
    codes = {v: float(i) for i, v in enumerate(attr.values)}
    lowered = {v.lower() for v in attr.values}
    if truthy_is_one and len(attr.values) == 2 and lowered in _BOOLEAN_PAIRS:
        codes = {v: float(v.lower() in ('yes', 'true')) for v in attr.values}
    return codes


def _nominal_coder(attr: _Attribute, *, truthy_is_one: bool) -> Coder:
    codes = _nominal_codes(attr, truthy_is_one=truthy_is_one)

    def code(value: str) -> float:
        if value == '?':
            return np.nan
        try:
            return codes[value]
        except KeyError:
            declared = ','.join(attr.values[:10]) + (',...' if len(attr.values) > 10 else '')
            raise _LineError(f'attribute {attr.name!r}: value {value!r} not in {{{declared}}}') from None

    return code


def _decode(arff: _Arff, columns: Sequence[int], coders: Sequence[Coder]) -> np.ndarray:
    """Dense float64 ``[n, len(columns)]`` matrix of the given attribute columns.

    Each distinct (column, value-string) pair is decoded once, so the Python work is proportional to the
    number of distinct values (two for a 0/1 column), not to the number of entries.
    """
    columns = np.asarray(columns, dtype=np.int64)
    position = np.full(len(arff.attributes), -1, dtype=np.int64)
    position[columns] = np.arange(len(columns))
    out = np.empty((arff.num_rows, len(columns)), dtype=np.float64)
    # Omitted sparse values: numeric 0, nominal the first declared value.
    unknown_default = {}  # column -> the error of a first declared value the coder refuses: only rows omitting it fail
    for j, (c, coder) in enumerate(zip(columns, coders)):
        attr = arff.attributes[c]
        try:
            out[:, j] = coder(attr.values[0]) if attr.kind == 'nominal' else 0.0
        except _LineError as e:
            out[:, j], unknown_default[j] = np.inf, e  # codes are finite: inf marks the rows still omitting it
    keep = np.flatnonzero(position[arff.entry_cols] >= 0)
    if keep.size:
        rows, cols = arff.entry_rows[keep], arff.entry_cols[keep]
        unique_vals, val_ids = np.unique(arff.entry_vals[keep].astype(str), return_inverse=True)
        keys = cols * len(unique_vals) + val_ids
        unique_keys, key_ids = np.unique(keys, return_inverse=True)
        decoded, bad = np.empty(len(unique_keys)), {}
        for k, key in enumerate(unique_keys):
            col, val = divmod(int(key), len(unique_vals))
            try:
                decoded[k] = coders[position[col]](str(unique_vals[val]))
            except _LineError as e:
                bad[key] = e
        if bad:  # report the earliest offending entry in file order
            e = np.flatnonzero(np.isin(keys, list(bad)))[0]
            raise arff.fail(rows[e], str(bad[keys[e]]))
        out[rows, position[cols]] = decoded[key_ids]
    for j, error in unknown_default.items():
        omitted = np.flatnonzero(np.isinf(out[:, j]))
        if omitted.size:
            raise arff.fail(omitted[0], str(error))
    return out


# --------------------------------------------------------------------------------------------------------
# MULAN / MEKA
# --------------------------------------------------------------------------------------------------------


def _read_xml_labels(xml_path: StrPath) -> list[str]:
    """Label names in document order; every ``label`` element counts, at any depth, in any namespace."""
    xml_path = str(xml_path)
    if not Path(xml_path).is_file():
        raise FileNotFoundError(errno.ENOENT, 'MULAN label XML file not found', xml_path)
    try:
        root = ET.parse(xml_path).getroot()
    except ET.ParseError as e:
        raise ValueError(f'{xml_path}:{e.position[0]}: malformed XML ({e})') from None
    names = []
    for elem in root.iter():
        if isinstance(elem.tag, str) and elem.tag.rsplit('}', 1)[-1] == 'label':
            name = elem.get('name')
            if not name:
                raise ValueError(f'{xml_path}: a <label> element has no name attribute')
            names.append(name)
    duplicates = sorted({n for n in names if names.count(n) > 1}) if len(set(names)) < len(names) else []
    if duplicates:
        raise ValueError(f'{xml_path}: duplicate label names {duplicates[:10]}')
    if not names:
        raise ValueError(f'{xml_path}: no <label name="..."> elements')
    return names


def _meka_label_columns(arff: _Arff) -> list[int] | None:
    m = _MEKA_C.search(arff.relation)
    if m is None:
        return None
    n, total = int(m.group(1)), len(arff.attributes)
    if n == 0 or abs(n) >= total:
        raise ValueError(f'{arff.path}: @relation option -C {n} is invalid for {total} attributes')
    return list(range(n)) if n > 0 else list(range(total + n, total))


def _shown(names: Sequence[str], limit: int = 10) -> str:
    return ', '.join(repr(n) for n in names[:limit]) + (', ...' if len(names) > limit else '')


def _forgotten_before(arff: _Arff, columns: Sequence[int]) -> tuple[list[str], str]:
    """The attributes just before the XML's first label that look like labels it forgot, and why they look so.

    An omitted *first* label sits where the last feature would, so position alone cannot tell. Two signs do: it
    is declared like every XML label and (a) its name starts with the prefix all the labels share (MULAN's
    ``TAG_``, ``Class-``) and no attribute before it does, or (b) the attributes before it are mostly declared
    otherwise (numeric audio features before {0,1} labels, genbase's {YES,NO} before its {0,1}).
    """
    labels = [arff.attributes[c] for c in columns]
    declared = {(a.kind, a.values) for a in labels}
    if len(declared) != 1:
        return [], ''
    (kind, values), first = declared.pop(), min(columns)
    prefix = os.path.commonprefix([a.name for a in labels])

    def like_label(a: _Attribute) -> bool:
        return (a.kind, a.values) == (kind, values)

    run = first
    while run > 0 and like_label(arff.attributes[run - 1]) and arff.attributes[run - 1].name.startswith(prefix):
        run -= 1
    before = arff.attributes[:run]
    if prefix and run < first and not any(a.name.startswith(prefix) for a in before):
        return [a.name for a in arff.attributes[run:first]], f'named like them ({prefix!r}...)'
    run = first
    while run > 0 and like_label(arff.attributes[run - 1]):
        run -= 1
    before = arff.attributes[:run]
    if run < first and before and sum(map(like_label, before)) < 0.1 * len(before):
        declared_as = 'numeric' if kind == 'numeric' else '{' + ','.join(values) + '}'
        return ([a.name for a in arff.attributes[run:first]],
                f'declared {declared_as} like them, unlike the features before them')
    return [], ''


def _warn_unlisted_labels(arff: _Arff, columns: Sequence[int], xml_path: StrPath) -> None:
    """Attributes placed among or after the XML's labels but not named by it are read as features; in MULAN
    files they are labels the XML forgot. So are attributes just before them that look like its labels
    (``_forgotten_before``). Warns, naming them."""
    listed = set(columns)
    suspects = [a.name for i, a in enumerate(arff.attributes)
                if i > min(columns) and i not in listed and a.kind in ('nominal', 'numeric')]
    if suspects:
        warnings.warn(f'{arff.path}: {len(suspects)} attribute(s) among or after the labels of {xml_path} are not '
                      f'in it and are read as features: {_shown(suspects)}. If they are labels, add them to the XML',
                      UserWarning, stacklevel=4)
    before, why = _forgotten_before(arff, columns)
    if before:
        warnings.warn(f'{arff.path}: {len(before)} attribute(s) just before the labels of {xml_path} look like labels '
                      f'({why}) but are not in it and are read as features: {_shown(before)}. If they are labels, '
                      'add them to the XML', UserWarning, stacklevel=4)


def _warn_meka_disagreement(arff: _Arff, columns: Sequence[int], xml_path: StrPath) -> None:
    """MULAN's files keep MEKA's ``-C n`` in ``@relation`` while their XML names other attributes (medical:
    ``-C 45``, the first 45, against the last 45 in medical.xml). MULAN reads the XML and ignores ``-C``; so does
    this reader, saying so."""
    m = _MEKA_C.search(arff.relation)
    if m is None:
        return
    n, total = int(m.group(1)), len(arff.attributes)
    meka = list(range(n)) if n > 0 else list(range(total + n, total)) if -total < n < 0 else None
    if meka is not None and sorted(meka) == sorted(columns):
        return
    says = (f'is out of range for {total} attributes' if meka is None else
            f'names the {"first" if n > 0 else "last"} {abs(n)} attributes '
            f'({_shown([arff.attributes[c].name for c in meka], 2)}) as labels')
    warnings.warn(f'{arff.path}: its @relation option -C {n} {says}, but {xml_path} names {len(columns)} '
                  f'({_shown([arff.attributes[c].name for c in columns], 2)}); following the XML, as MULAN does',
                  UserWarning, stacklevel=4)


def _label_columns(arff: _Arff, xml_path: StrPath | None, num_labels: int | None,
                   label_names: Sequence[str] | None = None) -> list[int]:
    total = len(arff.attributes)
    if label_names is not None:  # a trained run's labels: found by name, in the run's order
        index = {a.name: i for i, a in enumerate(arff.attributes)}
        missing = [n for n in label_names if n not in index]
        if len(missing) == len(label_names):
            return []  # a file of features only: the labels are what predict is for
        if missing:
            shown = ', '.join(repr(n) for n in missing[:5]) + (f' (+{len(missing) - 5} more)' if len(missing) > 5
                                                               else '')
            raise ValueError(f'{arff.path}: no attribute for {len(missing)} of the run\'s labels: {shown} (labels are '
                             'matched by name)')
        return [index[n] for n in label_names]
    hierarchical = next((a for a in arff.attributes if a.kind == 'hierarchical'), None)
    if hierarchical is not None:  # else: 'no label columns', or 'use read_clus_hmc', neither naming the setting
        raise ValueError(f'{arff.path}:{hierarchical.line}: a Clus hierarchical (HMC) file, its labels in the '
                         f'attribute {hierarchical.name!r}: read it with data.format=clus (it was read as MULAN)')
    if xml_path is not None:
        names = _read_xml_labels(xml_path)
        index = {a.name: i for i, a in enumerate(arff.attributes)}
        missing = [n for n in names if n not in index]
        if missing:
            raise ValueError(f'{xml_path}: {len(missing)} label(s) not attributes of {arff.path}: {_shown(missing)}')
        columns = sorted(index[n] for n in names)  # ARFF order (MULAN's own files use the same order)
        source = f'labels of {xml_path}'
        _warn_meka_disagreement(arff, columns, xml_path)
        _warn_unlisted_labels(arff, columns, xml_path)
    else:
        columns = _meka_label_columns(arff)
        source = f'-C option of {arff.path}'
        if columns is None:
            if num_labels is None:
                raise ValueError(
                    f'{arff.path}: no label columns were found: its @relation has no -C option and no label list '
                    'was given. Name the labels with a MULAN XML file (data.xml_file, or xml_path), the number of '
                    'label attributes at the end (data.num_labels, or num_labels), or "-C -L" in @relation (MEKA: '
                    'the last L attributes)'
                )
            if not 0 < num_labels < total:
                raise ValueError(f'{arff.path}: num_labels={num_labels} invalid for {total} attributes')
            return list(range(total - num_labels, total))
    if num_labels is not None and num_labels != len(columns):
        raise ValueError(f'{arff.path}: num_labels={num_labels} but the {source} name {len(columns)}')
    return columns


def _mulan_feature_columns(
    arff: _Arff, label_columns: Sequence[int], drop_features: Iterable[str] | None
) -> list[int]:
    labels = set(label_columns)
    if drop_features is None:
        dropped = {
            i
            for i, a in enumerate(arff.attributes)
            if a.kind == 'nominal' and len(a.values) > ID_LIKE_NOMINAL_VALUES
        }
    else:
        index = {a.name: i for i, a in enumerate(arff.attributes)}
        names = list(drop_features)
        unknown = [n for n in names if n not in index]
        if unknown:
            raise ValueError(f'{arff.path}: drop_features names unknown attributes {unknown}')
        dropped = {index[n] for n in names}
        if dropped & labels:
            raise ValueError(f'{arff.path}: drop_features names label attributes')
    columns = []
    for i, attr in enumerate(arff.attributes):
        if i in labels or i in dropped or attr.kind == 'string':
            continue
        if attr.kind == 'hierarchical':
            raise ValueError(f'{arff.path}:{attr.line}: hierarchical attribute: use read_clus_hmc')
        columns.append(i)
    return columns


def _mulan_labels(arff: _Arff, columns: Sequence[int]) -> np.ndarray:
    coders = []
    for c in columns:
        attr = arff.attributes[c]
        if attr.kind not in ('numeric', 'nominal'):
            raise ValueError(f'{arff.path}:{attr.line}: label {attr.name!r} has type {attr.kind}')
        coders.append(
            _nominal_coder(attr, truthy_is_one=True) if attr.kind == 'nominal' else _numeric_coder(attr)
        )
    y = _decode(arff, columns, coders)
    bad = np.argwhere(~np.isin(y, (0.0, 1.0)))  # NaN (missing) is caught here too
    if bad.size:
        row, col = bad[0]
        name = arff.attributes[columns[col]].name
        raise arff.fail(row, f'label {name!r} is {y[row, col]:g}, expected 0 or 1')
    return y.astype(np.int8)


def read_mulan(
    arff_path: StrPath,
    xml_path: StrPath | None = None,
    num_labels: int | None = None,
    *,
    drop_features: Iterable[str] | None = None,
    label_names: Sequence[str] | None = None,
    nominal: dict | None = None,
) -> MultiLabelData:
    """Reads a MULAN (ARFF + XML label list) or MEKA (``-C n`` in ``@relation``) multi-label file.

    Labels are the attributes named in ``xml_path``; without it, those given by ``-C n``; without that, the
    last ``num_labels`` attributes.  When ``num_labels`` is given with either of the others it must agree.
    ``drop_features``: names of feature attributes to drop; ``None`` drops nominal features with more than
    ``ID_LIKE_NOMINAL_VALUES`` values (identifiers such as genbase's ``protein``).  ``string`` attributes are
    always dropped.  See the module docstring for the value encodings.

    When the XML and a ``-C`` option disagree (MULAN's medical files), the XML decides, with a warning.

    For a file given to a trained run: ``label_names`` (the run's) are the label attributes, found by name
    (``xml_path``, ``-C`` and ``num_labels`` are then not used); their values are not read (``y`` is all 0: they
    may hold ``?`` or anything), and a file may hold none of them; ``nominal`` (the run's
    ``MultiLabelData.nominal``) decodes the features it names by value with the training file's codes, whatever
    order this file declares them in; a value the training file did not declare is an error naming the file, line
    and feature.
    """
    arff = _read_arff(arff_path)
    label_columns = _label_columns(arff, xml_path, num_labels, label_names)
    predicting = label_names is not None
    feature_columns = _mulan_feature_columns(arff, label_columns, drop_features)
    attributes = [arff.attributes[c] for c in feature_columns]
    coders = [
        _trained_coder(a, nominal[a.name]) if nominal and a.name in nominal
        else _nominal_coder(a, truthy_is_one=True) if a.kind == 'nominal' else _numeric_coder(a)
        for a in attributes
    ]
    codes = {a.name: _nominal_codes(a, truthy_is_one=True) for a in attributes if a.kind == 'nominal'}
    if nominal:
        codes.update({n: nominal[n] for n in codes if n in nominal})
    return MultiLabelData(
        x=_decode(arff, feature_columns, coders).astype(np.float32),
        # A file to predict holds anything in its label columns ('?', stale labels) or none: they are not read.
        y=np.zeros((arff.num_rows, len(label_names)), np.int8) if predicting else _mulan_labels(arff, label_columns),
        feature_names=tuple(arff.attributes[c].name for c in feature_columns),
        label_names=tuple(label_names) if predicting else tuple(arff.attributes[c].name for c in label_columns),
        source=arff.path,
        row_lines=arff.row_lines,
        nominal=codes,
    )


def _trained_coder(attr: _Attribute, codes: dict) -> Coder:
    """Values decoded with a training file's codes (value -> code) instead of this file's declared order."""

    def code(value: str) -> float:
        if value == '?':
            return np.nan
        try:
            return float(codes[value])
        except KeyError:
            declared = ','.join(list(codes)[:10]) + (',...' if len(codes) > 10 else '')
            raise _LineError(f'feature {attr.name!r}: value {value!r} is not one the model was trained on '
                             f'{{{declared}}}') from None

    return code


# --------------------------------------------------------------------------------------------------------
# Clus hierarchical multi-label (HMC)
# --------------------------------------------------------------------------------------------------------


def _ancestor_paths(node: str, sep: str = '/') -> list[str]:
    """``'01/01/03'`` -> ``['01', '01/01', '01/01/03']`` (root first, the node itself last)."""
    parts = node.split(sep)
    return [sep.join(parts[: k + 1]) for k in range(len(parts))]


def _hierarchy_nodes(arff: _Arff, attr: _Attribute) -> tuple[str, ...]:
    """Header nodes in order, with any ancestor the header leaves out inserted before its first child."""
    if not attr.values:
        raise ValueError(f'{arff.path}:{attr.line}: hierarchical attribute lists no nodes')
    if any(n.startswith('root/') for n in attr.values):
        # Clus writes DAG hierarchies (GO) as parent/child edges from 'root': a different format.
        raise ValueError(f'{arff.path}:{attr.line}: DAG hierarchies (root/... edges) are not supported')
    nodes: dict[str, None] = {}
    for node in attr.values:
        for path in _ancestor_paths(node):
            nodes.setdefault(path)
    return tuple(nodes)


def _clus_labels(arff: _Arff, class_col: int, nodes: tuple[str, ...]) -> np.ndarray:
    node_index = {n: i for i, n in enumerate(nodes)}
    closure = {n: [node_index[p] for p in _ancestor_paths(n)] for n in nodes}
    y = np.zeros((arff.num_rows, len(nodes)), dtype=np.int8)
    is_class = np.flatnonzero(arff.entry_cols == class_col)
    if len(is_class) != arff.num_rows:
        raise ValueError(f'{arff.path}: every row needs a value for the hierarchical class attribute')
    for row, value in zip(arff.entry_rows[is_class], arff.entry_vals[is_class]):
        for path in value.split('@'):
            columns = closure.get(path.strip())
            if columns is None:
                raise arff.fail(row, f'class path {path.strip()!r} is not a node of the header hierarchy')
            y[row, columns] = 1
    return y


def _clus_features(arff: _Arff, columns: Sequence[int]) -> tuple[np.ndarray, tuple[str, ...]]:
    """Numeric columns as they are, nominal ones one-hot (a missing value gives a NaN block)."""
    coders = [
        _nominal_coder(a, truthy_is_one=False) if a.kind == 'nominal' else _numeric_coder(a)
        for a in (arff.attributes[c] for c in columns)
    ]
    raw = _decode(arff, columns, coders)
    blocks, names = [], []
    for j, c in enumerate(columns):
        attr = arff.attributes[c]
        if attr.kind == 'numeric':
            blocks.append(raw[:, j : j + 1])
            names.append(attr.name)
            continue
        onehot = (raw[:, j : j + 1] == np.arange(len(attr.values))).astype(np.float64)
        onehot[np.isnan(raw[:, j])] = np.nan
        blocks.append(onehot)
        names.extend(f'{attr.name}={v}' for v in attr.values)
    x = np.concatenate(blocks, axis=1) if blocks else np.zeros((arff.num_rows, 0))
    return x, tuple(names)


def read_clus_hmc(arff_path: StrPath) -> MultiLabelData:
    """Reads a Clus hierarchical ARFF file (tree hierarchies, e.g. FunCat ``spo_FUN.train.arff``).

    ``label_names`` are all hierarchy nodes as full paths (``'01/01/03'``) in header order; ``y`` is
    closed under ancestors.  Missing features are NaN (see ``impute_and_standardise``); nominal features are
    one-hot columns named ``attr=value``; ``string`` attributes are dropped.
    """
    arff = _read_arff(arff_path)
    hierarchical = [i for i, a in enumerate(arff.attributes) if a.kind == 'hierarchical']
    if len(hierarchical) != 1:
        raise ValueError(f'{arff.path}: expected one hierarchical attribute, found {len(hierarchical)}')
    class_col = hierarchical[0]
    nodes = _hierarchy_nodes(arff, arff.attributes[class_col])
    feature_columns = [
        i for i, a in enumerate(arff.attributes) if i != class_col and a.kind in ('numeric', 'nominal')
    ]
    x, feature_names = _clus_features(arff, feature_columns)
    return MultiLabelData(
        x=x.astype(np.float32),
        y=_clus_labels(arff, class_col, nodes),
        feature_names=feature_names,
        label_names=nodes,
        source=arff.path,
        row_lines=arff.row_lines,
    )


def hierarchy_ancestors(label_names: Sequence[str], sep: str = '/') -> np.ndarray:
    """``A[i, j] = 1`` iff label ``j`` is label ``i`` or one of its ancestors (path labels as above).

    A prediction ``y`` is hierarchy-consistent iff ``y[i] <= y[j]`` wherever ``A[i, j]``.
    """
    index = {n: i for i, n in enumerate(label_names)}
    a = np.zeros((len(label_names), len(label_names)), dtype=np.int8)
    for i, name in enumerate(label_names):
        for path in _ancestor_paths(name, sep):
            if path in index:
                a[i, index[path]] = 1
    return a


# --------------------------------------------------------------------------------------------------------
# Preprocessing
# --------------------------------------------------------------------------------------------------------


def impute_and_standardise(train_x: np.ndarray, *others: np.ndarray) -> tuple[np.ndarray, ...]:
    """Mean-impute NaNs, then standardise, all with statistics of ``train_x`` only (no test leakage).

    Same result as scikit-learn's ``SimpleImputer(strategy='mean')`` then ``StandardScaler`` fitted on
    ``train_x`` (the C-HMCNN pipeline; it fits on train+valid, so pass their concatenation to match it):
    the std is that of the imputed column, so imputed entries become exactly 0.  A column with no observed
    training value gets mean 0, and a constant column std 1, so neither produces NaN or inf.
    Returns float32 arrays ``(train, *others)``.
    """
    mean, std = standardisation(train_x)
    return tuple(standardise(x, mean, std, f'array {k}') for k, x in enumerate((train_x, *others)))


def standardisation(train_x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The float64 ``(mean, std)`` per column that ``impute_and_standardise`` fits on ``train_x``."""
    train = np.asarray(train_x, dtype=np.float64)
    if train.ndim != 2:
        raise ValueError(f'train_x must be 2-D, got shape {train.shape}')
    observed = ~np.isnan(train)
    counts = observed.sum(axis=0)
    mean = np.where(counts > 0, np.where(observed, train, 0.0).sum(axis=0) / np.maximum(counts, 1), 0.0)
    std = np.where(observed, train, mean).std(axis=0)
    return mean, np.where(std > 0, std, 1.0)


def standardise(x: np.ndarray, mean: np.ndarray, std: np.ndarray, what: str = 'x') -> np.ndarray:
    """``x`` mean-imputed and standardised with given statistics (``standardisation``'s), as float32."""
    x = np.asarray(x, dtype=np.float64)
    mean, std = np.asarray(mean, dtype=np.float64), np.asarray(std, dtype=np.float64)
    if x.ndim != 2 or x.shape[1] != len(mean):
        raise ValueError(f'{what} has shape {x.shape}, expected [n, {len(mean)}]')
    return ((np.where(np.isnan(x), mean, x) - mean) / std).astype(np.float32)
