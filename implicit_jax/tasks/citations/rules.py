"""The reward of the indirectly supervised citation task: domain rules that score any tagging of a citation,
without its gold tags (Rooshenas et al. 2019's setting; the rules are of the kind Chang, Ratinov & Roth 2007 list
for Cora citations).

**Token rules** (``TOKEN_RULES``): a rule fires on a token from its text and position alone and names the field
the token should take. Each firing is one point, earned by the probability the tagging gives that field.

**Structure rules**:

* ``boundary``: a field ends only after punctuation. For neighbours (t-1, t) where token t-1 ends without one of
  ``, . ; : ) ]`` (and t-1 is not a closing quote), the point is the probability both take the same field,
  ``sum_c y_{t-1,c} y_{t,c}``; weight ``BOUNDARY_WEIGHT`` each.
* ``contiguous``: each field is one contiguous segment. ``V = sum_c max(0, segments_c - 1)`` with
  ``segments_c = y_{0,c} + sum_{t>0} y_{t,c} (1 - y_{t-1,c})``; the point is ``1 / (1 + V)``, weight
  ``CONTIGUOUS_WEIGHT``.

The reward is the share of points earned, in [0, 1]::

    R(x, y) = (sum_rules points(y)) / (sum_rules weight)

It is multilinear in the per-token distributions y (on one-hot taggings, the share of rules satisfied), so it
scores relaxed outputs too, as DVN's regression and its adversarial steps need. The rules read the tokens only:
``features(tokens)`` turns a citation's tokens into the arrays ``reward`` uses, which never see the gold tags.
The rules are noisy on purpose (``Proc.`` inside a title, a year inside a report number): they are the indirect
supervision of the setting, not the answer. ``decode`` is the rules alone as a tagger: the best reward under the
constraint that each field is one segment (beam search).
"""

from __future__ import annotations

import re
from typing import Callable, NamedTuple

import jax.numpy as jnp
import numpy as np

from implicit_jax.tasks.citations.reader import FIELDS

BOUNDARY_WEIGHT = 0.5
CONTIGUOUS_WEIGHT = 2.0
_FIELD_ID = {f: k for k, f in enumerate(FIELDS)}
_STRIP = '.,;:()[]"\'`'
_MONTHS = ('january', 'february', 'march', 'april', 'may', 'june', 'july', 'august', 'september', 'october',
           'november', 'december', 'jan', 'feb', 'mar', 'apr', 'jun', 'jul', 'aug', 'sep', 'sept', 'oct', 'nov',
           'dec')
_PLACES = ('usa', 'u.s.a', 'ca', 'ny', 'ma', 'nj', 'pa', 'germany', 'france', 'uk', 'england', 'italy', 'japan',
           'canada', 'netherlands', 'switzerland', 'australia', 'berlin', 'london', 'paris', 'boston', 'amsterdam',
           'cambridge', 'york', 'tokyo', 'pittsburgh', 'seattle', 'california', 'massachusetts', 'austin', 'stanford')
_ENDS_FIELD = (',', '.', ';', ':', ')', ']')


def _word(token: str) -> str:
  return token.strip(_STRIP).lower()


class Rule(NamedTuple):
  name: str
  field: str
  fires: Callable[[tuple, int], bool]   # (tokens, t) -> does the rule fire on token t
  doc: str


TOKEN_RULES = (
    Rule('first_token_author', 'author', lambda tok, t: t == 0,
         'the first token of a citation is an author'),
    Rule('year', 'date', lambda tok, t: re.fullmatch(r'(19|20)\d\d[a-z]?', _word(tok[t])) is not None,
         'a four-digit year (1900-2099) is the date'),
    Rule('month', 'date', lambda tok, t: _word(tok[t]) in _MONTHS,
         'a month name or its abbreviation is the date'),
    Rule('pages_word', 'pages', lambda tok, t: _word(tok[t]) in ('pp', 'pages', 'page'),
         '"pp." and "pages" start the pages'),
    Rule('page_range', 'pages', lambda tok, t: re.fullmatch(r'\d+\s*-{1,2}\s*\d+', _word(tok[t])) is not None,
         'a number range such as 463-484 is the pages'),
    Rule('proceedings', 'booktitle',
         lambda tok, t: _word(tok[t]) in ('proc', 'proceedings', 'conference', 'conf', 'symposium', 'workshop'),
         '"Proc.", "Proceedings", "Conference", "Symposium" and "Workshop" are in a booktitle'),
    Rule('in_then_title', 'booktitle', lambda tok, t: t > 0 and _word(tok[t - 1]) == 'in' and tok[t - 1][0] == 'I'
         and tok[t][:1].isupper(), 'the capitalised word after "In" starts a booktitle'),
    Rule('journal', 'journal', lambda tok, t: _word(tok[t]) in ('journal', 'transactions', 'trans'),
         '"Journal", "Transactions" and "Trans." are in a journal ("J." is more often an initial)'),
    Rule('tech', 'tech', lambda tok, t: _word(tok[t]) in ('technical', 'report', 'tr', 'tech'),
         '"Technical Report", "TR" and "Tech." are the tech field'),
    Rule('institution', 'institution',
         lambda tok, t: _word(tok[t]) in ('university', 'univ', 'department', 'dept', 'institute', 'laboratory',
                                          'lab', 'school'),
         '"University", "Department", "Institute", "Laboratory" and "School" are an institution'),
    Rule('publisher', 'publisher',
         lambda tok, t: _word(tok[t]) in ('press', 'publishers', 'publishing', 'verlag', 'springer-verlag',
                                          'kaufmann', 'wiley', 'addison-wesley', 'elsevier', 'academic'),
         '"Press", "Publishers", "Verlag", "Kaufmann", "Wiley" and the like are the publisher'),
    Rule('editor', 'editor', lambda tok, t: _word(tok[t]) in ('editor', 'editors', 'eds', 'ed'),
         '"editors", "eds." and "ed." are in the editor field'),
    Rule('volume', 'volume',
         lambda tok, t: (_word(tok[t]) in ('vol', 'volume', 'no')
                         or re.fullmatch(r'\d+\(\d+(-\d+)?\)', tok[t].rstrip(',.:;')) is not None),
         '"vol.", "volume", "no." and the form 1(1) are the volume'),
    Rule('location', 'location', lambda tok, t: _word(tok[t]) in _PLACES,
         'a city, state or country from a short list is the location'),
    Rule('thesis_note', 'note', lambda tok, t: _word(tok[t]) in ('submitted', 'appear', 'preparation', 'thesis'),
         '"to appear", "submitted", "in preparation" and "thesis" are a note'),
)


def ends_field(token: str) -> bool:
  """Whether a field may end after ``token``: it ends with punctuation that closes a field."""
  return token.rstrip('"\'`').endswith(_ENDS_FIELD)


class Features(NamedTuple):
  evidence: np.ndarray   # float32 [T, 13]: the token rules firing on token t for field c
  joined: np.ndarray     # float32 [T]: 1 where the boundary rule asks tokens t-1 and t to share a field


def features(tokens) -> Features:
  """The arrays the reward reads, from the tokens alone."""
  tokens = tuple(tokens)
  evidence = np.zeros((len(tokens), len(FIELDS)), np.float32)
  for t in range(len(tokens)):
    for rule in TOKEN_RULES:
      if rule.fires(tokens, t):
        evidence[t, _FIELD_ID[rule.field]] += 1.0
  joined = np.zeros(len(tokens), np.float32)
  joined[1:] = [0.0 if ends_field(tok) else 1.0 for tok in tokens[:-1]]
  return Features(evidence, joined)


def reward(batch: dict, y) -> jnp.ndarray:
  """``R(x, y)`` [..., B] for relaxed or one-hot taggings ``y`` [..., B, T, 13]; reads ``evidence``, ``joined``
  and ``mask`` of the batch (never ``y``)."""
  mask = batch['mask'].astype(y.dtype)                                            # [B, T]
  evidence = batch['evidence'].astype(y.dtype) * mask[..., None]
  joined = batch['joined'].astype(y.dtype) * mask
  token_points = jnp.sum(evidence * y, axis=(-1, -2))
  same = jnp.sum(y[..., 1:, :] * y[..., :-1, :], axis=-1)                           # [..., B, T-1]
  boundary_points = jnp.sum(joined[:, 1:] * same, axis=-1)
  ym = y * mask[..., None]
  starts = ym[..., 0, :] + jnp.sum(ym[..., 1:, :] * (1.0 - ym[..., :-1, :]), axis=-2)  # [..., B, C]
  extra = jnp.sum(jnp.maximum(starts - 1.0, 0.0), axis=-1)
  points = token_points + BOUNDARY_WEIGHT * boundary_points + CONTIGUOUS_WEIGHT / (1.0 + extra)
  total = jnp.sum(evidence, axis=(-1, -2)) + BOUNDARY_WEIGHT * jnp.sum(joined[:, 1:], axis=-1) + CONTIGUOUS_WEIGHT
  return points / total


def decode(evidence: np.ndarray, joined: np.ndarray, beam: int = 32) -> np.ndarray:
  """The rules alone as a tagger: the tag ids [T] of highest reward among taggings whose fields are contiguous
  (a field, once left, is not entered again), by beam search of width ``beam``. Ties go to the lower tag id."""
  num_tags = evidence.shape[1]
  # A hypothesis: (points, tags, fields left behind).
  hyps = [(float(evidence[0, c]), (c,), frozenset()) for c in range(num_tags)]
  hyps = sorted(hyps, key=lambda h: -h[0])[:beam]
  for t in range(1, len(evidence)):
    grown = {}
    for points, tags, closed in hyps:
      prev = tags[-1]
      for c in range(num_tags):
        if c in closed:
          continue
        gain = float(evidence[t, c]) + (BOUNDARY_WEIGHT * joined[t] if c == prev else 0.0)
        new_closed = closed if c == prev else closed | {prev}
        key = (c, new_closed)
        cand = (points + gain, tags + (c,), new_closed)
        if key not in grown or cand[0] > grown[key][0]:
          grown[key] = cand
    hyps = sorted(grown.values(), key=lambda h: (-h[0], h[1]))[:beam]
  return np.asarray(hyps[0][1], np.int32)
