"""``predict`` for a tagging run: new text, as CoNLL columns or raw text, through the run's recorded vocabulary, out as
``token<TAB>tag`` lines; a .npy of word ids; and an empty split named by its file. Two tiny runs on the fixture data
(tests/test_tagging_task.py's layout): Twitter POS words only, and CoNLL-2003 with the NER+ columns."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from implicit_jax import predict, tasks
from implicit_jax.engine import checkpoints, train
from implicit_jax.tasks.tagging import readers
from implicit_jax.tasks.tagging.readers import UNK_ID, Vocabulary
from tests.conftest import ROOT
from tests.test_tagging_data import CONLL, TWEETS
from tests.test_tagging_task import make_data_dir, tiny_config

# Made-up text: 'Blorptastic' and 'zqxv' are in no training tweet, 'I', 'the', 'RT' and '!' are.
SENTENCES = (('I', 'love', 'the', 'Blorptastic', '!'), ('RT', 'zqxv', 'the'))


@pytest.fixture(scope='module')
def runs(tmp_path_factory):
  data_dir = make_data_dir(tmp_path_factory.mktemp('tagging_data'))
  out = {}
  for name, features in (('twitter_pos', ()), ('conll2003', ('caps', 'pos', 'chunk'))):
    config = tiny_config(name, data_dir)
    config.data.features, config.num_epochs = features, 2
    workdir = tmp_path_factory.mktemp(name)
    train.train_and_evaluate(config, str(workdir))
    out[name] = workdir
  return data_dir, out


def expected_lines(workdir, sentences, features=None):
  """``token<TAB>tag`` lines worked out here: the words looked up in the vocabulary data.json recorded, the run's
  own predict on those ids, the best tag of each token."""
  record = json.loads((workdir / 'data.json').read_text())['preprocess']
  vocab = Vocabulary(tuple(record['vocab']), record['lowercase'])
  run = checkpoints.load_trained(str(workdir))
  width = max(map(len, sentences))
  x = np.zeros((len(sentences), width), np.int32)
  for i, s in enumerate(sentences):
    x[i, :len(s)] = vocab.encode(s)
  inputs = {'x': x, 'mask': (x > 0).astype(np.float32), **(features or {})}
  best = np.argmax(run.predict(inputs), axis=-1)
  tags = run.task.names['y']
  blocks = ['\n'.join(f'{t}\t{tags[k]}' for t, k in zip(s, row)) for s, row in zip(sentences, best)]
  return '\n\n'.join(blocks).split('\n'), vocab


@pytest.mark.e2e
def test_predict_tags_conll_and_raw_text_through_the_runs_vocabulary(runs, tmp_path):
  """The same sentences as raw text and as CoNLL columns (a stale tag column, ignored): the same CoNLL-style output,
  the tags of the run's own predictions on the ids of its recorded vocabulary, unknown words as UNK."""
  _, workdirs = runs
  workdir = workdirs['twitter_pos']
  text, conll = tmp_path / 'new.txt', tmp_path / 'new.conll'
  text.write_text('\n'.join(' '.join(s) for s in SENTENCES) + '\n')
  conll.write_text('\n\n'.join('\n'.join(f'{t}\tN' for t in s) for s in SENTENCES) + '\n')
  want, vocab = expected_lines(workdir, SENTENCES)
  assert vocab.id('Blorptastic') == vocab.id('zqxv') == UNK_ID and vocab.id('the') > UNK_ID
  for path, fmt in ((text, 'raw text'), (conll, 'CoNLL columns')):
    out = tmp_path / f'{path.name}.out'
    proc = subprocess.run([sys.executable, '-m', 'implicit_jax.predict', f'--workdir={workdir}', f'--input={path}',
                           f'--output={out}'], cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, JAX_PLATFORMS='cpu'))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert out.read_text().split('\n')[:-1] == want
    assert f'{path}: read as {fmt}' in proc.stderr and f'wrote 2 predictions to {out}' in proc.stderr
  # The other reading when asked for: the CoNLL file as text is 8 one-token-and-tag sentences.
  _, lines = predict.predict_file(str(workdir), str(conll), input_format='text')
  assert len([line for line in lines if line]) == 8 * 2


@pytest.mark.e2e
def test_predict_reads_a_npy_of_word_ids_with_its_padding(runs, tmp_path):
  """Word ids [N, T], 0 after each sentence's end: the mask is where ids are not 0; one line of tags per sentence."""
  _, workdirs = runs
  workdir = workdirs['twitter_pos']
  want, vocab = expected_lines(workdir, SENTENCES)
  ids = np.zeros((2, 7), np.int64)
  for i, s in enumerate(SENTENCES):
    ids[i, :len(s)] = vocab.encode(s)
  np.save(tmp_path / 'ids.npy', ids)
  _, lines = predict.predict_file(str(workdir), str(tmp_path / 'ids.npy'))
  tags = [[line.split('\t')[1] for line in block.split('\n')] for block in '\n'.join(want).split('\n\n')]
  assert lines == [' '.join(t) for t in tags]
  np.save(tmp_path / 'floats.npy', ids.astype(np.float32))
  with pytest.raises(ValueError, match=r'floats\.npy: a tagging run reads word ids, an integer array \[N, T\]'):
    predict.predict_file(str(workdir), str(tmp_path / 'floats.npy'))
  ids[0, 0] = len(vocab)  # one past the table: an embedding lookup would clamp it silently
  np.save(tmp_path / 'big.npy', ids)
  with pytest.raises(ValueError, match=rf'big\.npy: word ids must be in 0\.\.{len(vocab) - 1} '):
    predict.predict_file(str(workdir), str(tmp_path / 'big.npy'))


@pytest.mark.e2e
def test_predict_reads_the_ner_plus_columns_of_a_conll_file(runs, tmp_path):
  """A run with NER+ features takes POS and chunk from the CoNLL-2003 columns (caps from the token); raw text, or a
  CoNLL file without those columns, is one error naming the file (and line) and the columns it needs."""
  _, workdirs = runs
  workdir = workdirs['conll2003']
  rows = [('Marta', 'NNP', 'I-NP'), ('visited', 'VBD', 'I-VP'), ('Zorbington', 'NNP', 'I-NP'), ('.', '.', 'O')]
  conll = tmp_path / 'ner.conll'
  conll.write_text('-DOCSTART- -X- -X- O\n\n' + ''.join(f'{t} {p} {c}\n' for t, p, c in rows))
  record = json.loads((workdir / 'data.json').read_text())['preprocess']['features']
  features = {'caps': np.array([[2, 1, 2, 1]], np.int32),
              'pos': np.array([[record['pos'].get(p, 1) for _, p, _ in rows]], np.int32),
              'chunk': np.array([[record['chunk'].get(c, 1) for _, _, c in rows]], np.int32)}
  want, _ = expected_lines(workdir, [tuple(r[0] for r in rows)], features)
  _, lines = predict.predict_file(str(workdir), str(conll))
  assert lines == want
  text = tmp_path / 'ner.txt'
  text.write_text('Marta visited Zorbington .\n')
  with pytest.raises(ValueError, match=r"ner\.txt: the run reads the pos, chunk column\(s\) beside the words"):
    predict.predict_file(str(workdir), str(text))
  tokens_only = tmp_path / 'tokens.conll'
  tokens_only.write_text('Marta\nvisited\n\nHi\n')
  with pytest.raises(ValueError, match=r"tokens\.conll:1: the run reads the pos column .* expected the CoNLL-2003 "
                                       r"columns token POS chunk"):
    predict.predict_file(str(workdir), str(tokens_only), input_format='conll')


def test_sniffing_tells_columns_from_text():
  assert readers.sniff_format(readers._read_lines(CONLL)) == 'conll'  # pylint: disable=protected-access
  assert readers.sniff_format(readers._read_lines(TWEETS)) == 'conll'  # pylint: disable=protected-access
  assert readers.sniff_format(['the cat sat', 'a dog ran off', '']) == 'text'
  assert readers.sniff_format(['the', 'cat', '', 'a', 'dog', '']) == 'conll'
  assert readers.sniff_format(['one', 'sentence', 'per', 'line']) == 'text'


def test_an_empty_split_is_named_by_its_file(tmp_path):
  data_dir = make_data_dir(tmp_path / 'data')
  dev = data_dir / 'twitter_pos' / 'oct27.test'
  dev.write_text('\n\n')
  with pytest.raises(ValueError) as e:
    tasks.get_task(tiny_config('twitter_pos', data_dir))
  assert str(e.value) == (f"{dev}: no sentences (one token per line, a blank line after each sentence): dataset "
                          "'twitter_pos' reads its dev split from this file")


@pytest.mark.e2e
def test_raw_text_read_as_conll_is_refused_naming_the_line(runs, tmp_path):
  """``--format=conll`` on raw text kept the first word of each line (2 of 10 words tagged), exit 0. Lines of
  unequal columns are named; lines of equal columns with no blank line after a sentence are refused too."""
  _, workdirs = runs
  workdir = str(workdirs['twitter_pos'])
  text = tmp_path / 'raw.txt'
  text.write_text('I love the Blorptastic !\nRT zqxv the cat\n')
  with pytest.raises(ValueError, match=rf'^{text}:2: 4 columns where line 1 has 5: .* give --format=text$'):
    predict.predict_file(workdir, str(text), input_format='conll')
  text.write_text('I love the Blorptastic !\nRT zqxv the cat sat\n')
  with pytest.raises(ValueError, match=rf'^{text}: 2 lines of 5 columns and no blank line: .* give --format=text$'):
    predict.predict_file(workdir, str(text), input_format='conll')
  _, lines = predict.predict_file(workdir, str(text), input_format='text')  # read as what it is: 10 words tagged
  assert len([line for line in lines if line]) == 10


@pytest.mark.e2e
def test_a_folder_as_input_is_named_a_folder(runs, tmp_path):
  """Was 'no such file' (tagging) or an IsADirectoryError traceback (.npy)."""
  _, workdirs = runs
  folder = tmp_path / 'inputs.npy'
  folder.mkdir()
  proc = subprocess.run([sys.executable, '-m', 'implicit_jax.predict', f'--workdir={workdirs["twitter_pos"]}',
                         f'--input={folder}'], cwd=ROOT, capture_output=True, text=True, timeout=300,
                        env=dict(os.environ, JAX_PLATFORMS='cpu'))
  assert proc.returncode == 1
  assert proc.stderr.strip() == (f'error: --input={folder} is a folder: give a file of examples (a .npy of inputs, '
                                 'or a file in the run\'s dataset format)')
