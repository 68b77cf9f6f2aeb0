"""A generated tagging problem with a known tag-transition structure and a known best answer.

Sentences of ``min_length``..``max_length`` tokens come from a hidden Markov model over ``num_tags`` tags:

* transitions: from tag c the next tag is c + 1 (mod C) with probability 0.7, c + 2 with 0.2, and uniform over
  all tags with 0.1 (the first tag is uniform). A tagger must learn this order to resolve ambiguous words;
* emissions: the vocabulary's words 1..V (0 is padding) are split into C own-word groups and C shared-word
  groups. Tag c emits one of its own words with probability ``1 - ambiguity``, else a shared word of group c,
  which tag c + 1 also emits (with the same probability). A shared word alone leaves two tags possible.

The best possible tagger is known: posterior (forward-backward) decoding under the true HMM maximises expected
token accuracy. ``info`` records its test accuracy (``bayes_accuracy``), that of the best context-free tagger
(each word's most likely tag, ``word_only_accuracy``) and of always predicting the most frequent training tag
(``majority_accuracy``): a learned tagger sits between the last and the first, above the middle one only if it
uses the transitions.
"""

import numpy as np

STAY, NEXT, SKIP = 0.0, 0.7, 0.2  # transition probabilities to c, c + 1, c + 2; the rest is spread uniformly


def hmm(num_tags: int, vocab_size: int, ambiguity: float):
  """``(start [C], transition [C, C], emission [C, V + 1])`` of the generator (emission column 0: padding)."""
  c = num_tags
  if vocab_size < 2 * c:
    raise ValueError(f'data.vocab_size must be at least 2 * data.num_tags = {2 * c}, got {vocab_size}')
  if not 0.0 <= ambiguity < 1.0:
    raise ValueError(f'data.ambiguity must be in [0, 1), got {ambiguity}')
  rest = 1.0 - STAY - NEXT - SKIP
  transition = np.full((c, c), rest / c)
  for tag in range(c):
    transition[tag, (tag + 1) % c] += NEXT
    transition[tag, (tag + 2) % c] += SKIP
  words = np.arange(1, vocab_size + 1)
  own, shared = np.array_split(words[:vocab_size // 2], c), np.array_split(words[vocab_size // 2:], c)
  emission = np.zeros((c, vocab_size + 1))
  for tag in range(c):
    emission[tag, own[tag]] += (1.0 - ambiguity) / len(own[tag])
    emission[tag, shared[tag]] += ambiguity / len(shared[tag])              # group c: tags c and c - 1
    emission[tag, shared[(tag - 1) % c]] += ambiguity / len(shared[(tag - 1) % c])
  emission /= emission.sum(axis=1, keepdims=True)
  return np.full(c, 1.0 / c), transition, emission


def _draw(cdf: np.ndarray, u: np.ndarray) -> np.ndarray:
  """Inverse-CDF sampling: row i of ``cdf`` [n, K] (or one shared row [K]) at the uniform ``u[i]``."""
  index = (u[:, None] > cdf).sum(axis=-1) if cdf.ndim == 2 else np.searchsorted(cdf, u, side='right')
  return np.minimum(index, cdf.shape[-1] - 1)


def sample(rng: np.random.Generator, n: int, params, min_length: int, max_length: int):
  """``(words [n, max_length] int32, tags [n, max_length] int32 with -1 on padding, lengths [n])``, all sentences
  drawn together one position at a time."""
  start, transition, emission = params
  cdf_transition, cdf_emission = np.cumsum(transition, axis=1), np.cumsum(emission, axis=1)
  lengths = rng.integers(min_length, max_length + 1, size=n)
  u = rng.random((2, max_length, n))
  tags = np.zeros((n, max_length), np.int64)
  tags[:, 0] = _draw(np.cumsum(start), u[0, 0])
  for t in range(1, max_length):
    tags[:, t] = _draw(cdf_transition[tags[:, t - 1]], u[0, t])
  words = np.stack([_draw(cdf_emission[tags[:, t]], u[1, t]) for t in range(max_length)], axis=1)
  real = np.arange(max_length) < lengths[:, None]
  return (np.where(real, words, 0).astype(np.int32), np.where(real, tags, -1).astype(np.int32), lengths)


def posterior_decode(words: np.ndarray, lengths: np.ndarray, params) -> np.ndarray:
  """Each token's most probable tag given the whole sentence under the true HMM (forward-backward, all sentences
  at once); -1 on padding."""
  start, transition, emission = params
  n, width = words.shape
  real = np.arange(width) < lengths[:, None]                                # [N, T]
  e = np.where(real[..., None], emission[:, words].transpose(1, 2, 0), 1.0)  # [N, T, C]; 1 on padding
  alpha, beta = np.zeros_like(e), np.ones_like(e)
  alpha[:, 0] = start * e[:, 0]
  alpha[:, 0] /= alpha[:, 0].sum(-1, keepdims=True)
  for t in range(1, width):
    alpha[:, t] = (alpha[:, t - 1] @ transition) * e[:, t]
    alpha[:, t] /= alpha[:, t].sum(-1, keepdims=True)
  for t in range(width - 2, -1, -1):
    back = (e[:, t + 1] * beta[:, t + 1]) @ transition.T
    beta[:, t] = np.where(real[:, t + 1, None], back / back.sum(-1, keepdims=True), 1.0)  # the sentence ended at t
  return np.where(real, np.argmax(alpha * beta, axis=-1), -1)


def make_splits(d) -> tuple[dict, dict]:
  """``({split: {'x', 'y', 'mask'}}, info)`` from ``config.data``."""
  rng = np.random.default_rng(d.seed)
  params = hmm(d.num_tags, d.vocab_size, d.ambiguity)
  if not 1 <= d.min_length <= d.max_length:
    raise ValueError(f'data.min_length and data.max_length must satisfy 1 <= min <= max, got {d.min_length}, '
                     f'{d.max_length}')
  splits, raw = {}, {}
  for split, n in (('train', d.num_train), ('dev', d.num_dev), ('test', d.num_test)):
    words, tags, lengths = sample(rng, n, params, d.min_length, d.max_length)
    splits[split] = {'x': words, 'y': tags, 'mask': (tags >= 0).astype(np.float32)}
    raw[split] = (words, tags, lengths)
  words, tags, lengths = raw['test']
  real = tags >= 0
  train_tags = raw['train'][1]
  majority = np.bincount(train_tags[train_tags >= 0], minlength=d.num_tags).argmax()
  word_tag = np.argmax(params[0][:, None] * params[2], axis=0)  # each word's most likely tag, alone
  info = {
      'dataset': 'synthetic', 'seed': int(d.seed), 'num_tags': int(d.num_tags), 'vocab_size': int(d.vocab_size),
      'sizes': {s: len(a['y']) for s, a in splits.items()},
      'bayes_accuracy': float(np.mean(posterior_decode(words, lengths, params)[real] == tags[real])),
      'word_only_accuracy': float(np.mean(word_tag[words][real] == tags[real])),
      'majority_accuracy': float(np.mean(tags[real] == majority)),
  }
  return splits, info
