"""The reproduction script's bookkeeping: which system a run file is, and the command list of its table."""

import json
import sys
from pathlib import Path

import ml_collections
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from experiments import mlc, records  # pylint: disable=wrong-import-position
from implicit_jax import runner  # pylint: disable=wrong-import-position
from experiments import ablation_mlc  # pylint: disable=wrong-import-position


def _run(method, hidden, solver='normal_cg', loss='cd', inner_steps=5, proximal=0.0):
  return {'config': {'method': method, 'model': {'inference_hidden': hidden},
                     'implicit': {'primary_loss': loss, 'solver': {'name': solver}, 'inner_steps': inner_steps,
                                  'proximal': proximal}}}


def test_system_of_names_width_and_solver():
  assert mlc.system_of(_run('feedforward', [150, 150])) == 'mbce'
  assert mlc.system_of(_run('feedforward', [400, 400])) == 'mbce-h400'
  assert mlc.system_of(_run('implicit', [400, 400])) == 'implicit-cd-h400'
  assert mlc.system_of(_run('implicit', [150, 150], solver='minres')) == 'implicit-cd-minres'
  assert mlc.system_of(_run('implicit', [150, 150], loss='ssvm')) == 'implicit-ssvm'
  # every name system_of can return for these is a key of SYSTEMS, so --systems can rerun it
  for name in ('mbce-h400', 'implicit-cd-h400', 'implicit-cd-minres'):
    assert name in mlc.SYSTEMS


def test_command_list_joins_seeds_only():
  merged = records.command_list([
      'python s.py --datasets=bibtex --seeds=2', 'python s.py --datasets=bibtex --seeds=0',
      'python s.py --datasets=bibtex --seeds=1,10', 'python s.py --datasets=delicious --seeds=0',
      'python s.py --table_only'])
  assert merged == ['python s.py --datasets=bibtex --seeds=0,1,2,10', 'python s.py --datasets=delicious --seeds=0',
                    'python s.py --table_only']


def test_paired_uses_only_shared_seeds():
  a = [{'seed': 0, 'f': 0.5}, {'seed': 1, 'f': 0.25}, {'seed': 2, 'f': 0.75}]
  b = [{'seed': 2, 'f': 0.5}, {'seed': 0, 'f': 0.25}]
  assert mlc.paired(a, b, 'f') == ([0, 2], [25.0, 25.0])  # x 100
  assert mlc.paired(a, [], 'f') == ([], [])


def test_run_name_keeps_official_names_and_separates_protocols():
  assert mlc.run_name('bibtex', 'implicit-cd', 'official') == 'bibtex-implicit-cd'
  assert mlc.run_name('bibtex', 'implicit-cd', 'resplit') == 'bibtex-resplit-implicit-cd'
  # compare_methods' baseline names (with spaces) go through the same rule
  assert mlc.run_name('bibtex', 'seal-static nce', 'resplit') == 'bibtex-resplit-seal-static_nce'


def test_ablation_rows_are_reproduce_systems_and_named_back():
  """Every ablation row at both widths is a system reproduce_mlc can run, and a run of it is named back to it and to
  its row of the table."""
  for width in (150, 400):
    for row in ablation_mlc.ROWS:
      name = ablation_mlc.system(row, width)
      assert name in mlc.SYSTEMS, name
      overrides = mlc.SYSTEMS[name]
      run = _run(overrides['method'], list(overrides.get('model.inference_hidden', (150, 150))),
                 solver=overrides.get('implicit.solver.name', 'normal_cg'),
                 inner_steps=overrides.get('implicit.inner_steps', 5),
                 proximal=overrides.get('implicit.proximal', 0.0))
      assert mlc.system_of(run) == name
      # its record is the row's in the ablation table (a record of another system under that name is none)
      assert ablation_mlc.row_of(Path(f'delicious-{name}-seed2.json'), run) == ('delicious', width, row)
      assert ablation_mlc.row_of(Path(f'delicious-{name}-h400-seed2.json'), run) is None
  assert 'implicit-cd-none' in mlc.ABLATION_ONLY and 'implicit-cd' not in mlc.ABLATION_ONLY


def test_train_summary_keeps_medians_of_the_diagnostics():
  log = {'10': {'stationarity': 0.9, 'cosine': 0.1, 'loss_prim': 3.0}, '5': {'stationarity': 0.5, 'cosine': 0.3},
         '20': {'stationarity': 0.7, 'cosine': -0.2, 'other': 1.0}}
  summary = records.train_summary(log)
  assert summary['stationarity'] == {'median': 0.7, 'first': 0.5, 'last': 0.7}
  assert summary['cosine']['median'] == 0.1 and 'other' not in summary and summary['loss_prim']['first'] == 3.0
  assert records.train_summary({}) == {}


def test_ablation_verdict_needs_every_seed():
  import numpy as np  # pylint: disable=import-outside-toplevel
  assert ablation_mlc.verdict(np.array([0.1, 0.2, 0.3])) == 'higher on every seed'
  assert ablation_mlc.verdict(np.array([-0.1, -0.2])) == 'lower on every seed'
  assert ablation_mlc.verdict(np.array([0.1, -0.2, 0.3])) == 'mixed signs across seeds'
  assert ablation_mlc.verdict(np.array([0.5])) == 'one seed'


def test_mean_std_is_the_sample_standard_deviation():
  # x 100: 40, 42, 47, mean 43, squared deviations 9 + 1 + 16 = 26, / (3 - 1) = 13, sqrt 3.61 (ddof 0: 2.94)
  assert records.mean_std([0.40, 0.42, 0.47]) == '43.00 ± 3.61'
  assert records.mean_std([0.5]) == '50.00' and records.mean_std([]) == '–'
  assert records.mean_std([1.0, 2.0], scale=1.0, digits=3) == '1.500 ± 0.707'  # np.std would say 0.500
  assert 'sample standard deviation (ddof 1) over N seeds' in records.spread()
  assert 'over N labeled draws' in records.spread('labeled draws')


def test_tagging_systems_and_sweeps_are_valid_overrides():
  from experiments import reproduce_tagging  # pylint: disable=import-outside-toplevel
  from implicit_jax import methods  # pylint: disable=import-outside-toplevel
  for dataset in reproduce_tagging.DATASETS:
    assert set(reproduce_tagging.PUBLISHED[dataset]) <= set(reproduce_tagging.SYSTEMS)
    for _, overrides in reproduce_tagging.SYSTEMS.values():
      config = reproduce_tagging.base_config(dataset, 0, '/nowhere', overrides)  # a misspelt field raises
      assert config.method in methods.REGISTRY
  for dataset, variants in reproduce_tagging.SWEEPS.values():
    for overrides in variants.values():
      reproduce_tagging.base_config(dataset, 0, '/nowhere', overrides)


def test_tagging_table_flags_and_pairs():
  from experiments import reproduce_tagging  # pylint: disable=import-outside-toplevel
  run = lambda seed, acc: {'seed': seed, 'test_accuracy': acc, 'dev_accuracy': acc, 'train_seconds': 1.0}
  runs = {'pos-bilstm': [run(0, 0.88), run(1, 0.87)], 'pos-implicit-cd': [run(0, 0.89), run(1, 0.86)]}
  lines, flagged = reproduce_tagging.dataset_section('pos', runs)
  text = '\n'.join(lines)
  assert '| BiLSTM (cross-entropy) | 2 | 87.50 ± 0.71 |' in text and '| yes |' in text   # 87.5 vs 88.7 / 88.8
  assert flagged == ['implicit CD (T_inner 1, gcr)'] and '**no** (2.6 below)' in text    # 87.5 vs 90.1
  assert 'seed 0 +1.00, seed 1 -1.00; mean +0.00, 1/2 seeds positive' in text
  assert 'Earlier design' not in text  # no earlier-design records: no table for them
  # an earlier design's row sits in its own table, beside no published number, and the design now is paired with it
  runs['pos-implicit-cd-before'] = [run(0, 0.85), run(1, 0.87)]
  lines, flagged = reproduce_tagging.dataset_section('pos', runs)
  text = '\n'.join(lines)
  main, earlier = text.split('Earlier design')
  assert 'implicit CD, before' not in main
  assert '| implicit CD, before (T_inner 5, normal_cg) | 2 | 86.00 ± 1.41 | 86.00 ± 1.41 | — | — |' in earlier
  assert flagged == ['implicit CD (T_inner 1, gcr)']  # 86.0 vs 90.1, but no paper ran the earlier design
  assert ('implicit CD (T_inner 1, gcr) minus implicit CD, before (T_inner 5, normal_cg), paired by seed (test '
          'accuracy): seed 0 +4.00, seed 1 -1.00; mean +1.50') in earlier


def test_tagging_page_blocks_and_sweep_pages_from_their_tables():
  """docs/tagging.md through its Table: the runs' dates and devices, a section per dataset with records, the flags
  and why; docs/results.md's tagging block copies its tables (headings in bold), the margins block sets the papers'
  margin beside ours; a sweep's page lists its variants' records in the sweep's order, none of another variant."""
  from experiments import reproduce_tagging  # pylint: disable=import-outside-toplevel
  run = lambda seed, acc, date: {'seed': seed, 'test_accuracy': acc, 'dev_accuracy': acc, 'train_seconds': 1.0,
                                 'date': date, 'device': 'cpu: cpu', 'command': 'python x.py --seeds=0'}
  groups = {'pos-bilstm': [run(0, 0.88, '2026-11-25T10:00:00'), run(1, 0.87, '2026-11-24T10:00:00')],
            'pos-implicit-cd': [run(0, 0.89, '2026-11-26T10:00:00'), run(1, 0.86, '2026-11-26T11:00:00')]}
  table = reproduce_tagging.TABLES[0]
  text, fields = table.text(groups, write=False)
  assert 'Made by the command in [tagging.commands.txt](tagging.commands.txt) (runs dated 2026-11-24 to ' \
         '2026-11-26; devices: cpu: cpu).' in text
  assert '## Twitter POS (token accuracy)' in text and '## CoNLL-2003 NER' not in text  # no NER records
  assert ('Flagged on pos (more than 1.5 points from every published number): implicit CD (T_inner 1, gcr). The gap '
          'is shared by every row') in text
  assert text.endswith('under the BiLSTM.\n') and 'Global energies (InfNet+ Table 4)' in text
  blocks = table.blocks(groups, fields)
  tagging_block = blocks[('docs/results.md', 'tagging')]
  assert '\n**Twitter POS (token accuracy)**\n' in tagging_block and '## ' not in tagging_block
  assert '| BiLSTM (cross-entropy) | 2 | 87.50 ± 0.71 |' in tagging_block and 'Global energies' not in tagging_block
  assert '| Twitter POS (accuracy) | +1.4 (impl T9) | +0.00 (1/2 seeds) |' in blocks[('docs/results.md', 'margins')]
  sweep = reproduce_tagging.SWEEP_TABLES['pos-fast']
  record = lambda seed: {'seed': seed, 'best_epoch': 3, 'dev_accuracy': 0.8, 'test_accuracy': 0.81,
                         'train_seconds': 12.0}
  assert sweep.key(Path('T2-gcr1-seed0.json'), {}) == 'T2-gcr1' and sweep.key(Path('gone-seed0.json'), {}) is None
  text, _ = sweep.text({'T2-gcr1': [record(0)], 'T1-gcr1': [record(0), record(1)]}, write=False)
  assert text.startswith('# Sweep `pos-fast` (configs/pos.py + overrides)\n\nRebuilt by `python -m '
                         'experiments.reproduce_tagging --sweep=pos-fast --table_only` on ')
  rows = [line.split(' | ')[0] for line in text.splitlines() if line.startswith('| T')]
  assert rows == ['| T1-gcr1', '| T1-gcr1', '| T2-gcr1']  # the sweep's order, not the records'
  assert '| T2-gcr1 | method=implicit, implicit.primary_loss=cd, implicit.inner_steps=2, ' in text


def test_tagging_ner_table_shows_conlleval_beside_strict_and_one_selection_rule(tmp_path, monkeypatch):
  from experiments import reproduce_tagging  # pylint: disable=import-outside-toplevel
  monkeypatch.setattr(reproduce_tagging, 'SUPERSEDED', tmp_path)  # none: the committed ones pair with real records
  ner = {'data': {'name': 'conll2003'}}
  run = lambda seed, f1, **extra: {'seed': seed, 'test_f1': f1, 'dev_f1': f1, 'train_seconds': 1.0, 'config': ner,
                                   **extra}
  runs = {'ner-bilstm': [run(0, 0.86), run(1, 0.87, test_f1_conlleval=0.85)],  # an old record beside a new one
          'ner-crf': [run(0, 0.86)], 'ner-spen': [run(0, 0.86, test_f1_conlleval=0.84),
                                                  run(1, 0.88, test_f1_conlleval=0.86)]}
  text = '\n'.join(reproduce_tagging.dataset_section('ner', runs)[0])
  assert '| test F1 conlleval | test F1 strict | dev F1 strict (selects) |' in text
  assert '| BiLSTM (cross-entropy) | 2 | 85.00 (1 of 2 seeds) | 86.50 ± 0.71 |' in text
  assert '| BiLSTM-CRF (forward algorithm, Viterbi) | 1 | not recorded | 86.00 |' in text
  assert '| SPEN (GBI, mirror descent) | 2 | 85.00 ± 1.41 | 87.00 ± 1.41 |' in text
  # the chunks conlleval counts and strict does not, over the records that hold both counts
  assert reproduce_tagging.stray_cell([{'test_num_pred_conlleval': 110, 'test_num_pred': 100}, {'test_num_pred': 9},
                                       {'test_num_pred_conlleval': 121, 'test_num_pred': 100}]) == '16'
  assert reproduce_tagging.stray_cell(runs['ner-crf']) == '–'
  # every row against the BiLSTM, seed by seed, over the seeds both hold: conlleval's F1 on seed 1 alone
  assert '| SPEN (GBI, mirror descent) | seed 1 +1.00 | +1.00 (1/1) | +0.00, +1.00 | +0.50 (1/2) |' in text
  assert '| BiLSTM-CRF (forward algorithm, Viterbi) | – | – | +0.00 | +0.00 (0/1) |' in text
  # a record selected on conlleval's dev F1 cannot sit in a row selected on strict F1
  runs['ner-crf'].append(run(1, 0.86, config={'data': {'name': 'conll2003', 'chunk_select': 'f1_conlleval'}}))
  with pytest.raises(SystemExit, match="ner-crf: records selected on dev \\['f1_conlleval'\\]"):
    reproduce_tagging.dataset_section('ner', runs)


def test_committed_ner_records_leave_only_the_device_runs_pending_and_pending_says_so(monkeypatch, capsys):
  """Every NER / NER+ row beside a published number holds a rescorable record on seeds 0-2 (the committed records)
  but those of implicit CD's runs made on a device before records kept predictions, until each is rerun; --pending
  prints a command for each left on stdout (what xargs reads), and its count on stderr."""
  from experiments import reproduce_tagging  # pylint: disable=import-outside-toplevel
  record = lambda d, seed: records.load(reproduce_tagging.RUNS / f'{d}-implicit-cd-seed{seed}.json')
  device_runs = [(d, 'implicit-cd', seed) for d in ('ner', 'ner_plus') for seed in (0, 1, 2)
                 if record(d, seed)['device'].startswith('gpu') and not records.rescorable(record(d, seed))]
  assert reproduce_tagging.pending(('ner', 'ner_plus'), [0, 1, 2]) == device_runs
  monkeypatch.setattr(sys, 'argv', ['reproduce_tagging.py', '--pending'])
  reproduce_tagging.main()
  out, err = capsys.readouterr()
  assert len(out.splitlines()) == len(device_runs) and all(
      '--systems=implicit-cd ' in line and '--supersede' in line for line in out.splitlines())
  assert f'{len(device_runs)} NER / NER+ run(s) left on seeds 0,1,2' in err
  monkeypatch.setattr(sys, 'argv', ['reproduce_tagging.py', '--pending', '--seeds=3'])
  reproduce_tagging.main()
  out, err = capsys.readouterr()
  assert len(out.splitlines()) == len(reproduce_tagging.pending(('ner', 'ner_plus'), [3])) > 0
  assert f'{len(out.splitlines())} NER / NER+ run(s) left on seeds 3' in err


def test_tagging_pending_lists_absent_and_unrescorable_records_and_supersede_reruns_them(tmp_path, monkeypatch):
  from experiments import reproduce_tagging  # pylint: disable=import-outside-toplevel
  runs, old = tmp_path / 'runs', tmp_path / 'superseded'
  ner = {'method': 'feedforward', 'data': {'name': 'conll2003'}}
  scored = {'seed': 0, 'test_f1': 0.86, 'test_f1_conlleval': 0.85, 'config': ner, 'predictions': {'test': 'x'}}
  records.write(runs / 'ner-bilstm-seed0.json', scored)
  records.write(runs / 'ner-crf-seed0.json', {'seed': 0, 'test_f1': 0.86, 'config': ner})  # before conlleval's F1
  # conlleval's F1 but no predictions (as the device runs of implicit CD): not rescorable either
  records.write(runs / 'ner-implicit-cd-seed0.json', {k: v for k, v in scored.items() if k != 'predictions'})
  left = reproduce_tagging.pending(('ner',), [0], runs)
  assert {('ner', 'crf', 0), ('ner', 'implicit-cd', 0), ('ner', 'spen', 0)} <= set(left)  # unscorable, absent
  assert ('ner', 'bilstm', 0) not in left
  assert ('ner', 'implicit-cd-r1', 0) in left  # NER reuses the term ('r3h'): the every-step row is a row
  assert not {system for _, system, _ in left} & set(reproduce_tagging.EARLIER)  # set apart, beside no paper's row
  assert len(left) == len(reproduce_tagging.systems('ner')) - 1  # but bilstm (rescorable)
  # --supersede hands the runs to the runner with the superseded folder (a record that keeps no predictions is
  # rerun from itself, an absent one trains from its row: tests/test_runner.py), its recipe reading the word vectors
  # from the package where a record's file is not here
  monkeypatch.setattr(reproduce_tagging, 'RUNS', runs)
  monkeypatch.setattr(reproduce_tagging, 'SUPERSEDED', old)
  monkeypatch.setattr(reproduce_tagging, 'base_config', lambda *a: ml_collections.ConfigDict({'seed': a[1]}))
  calls = []
  monkeypatch.setattr(runner, 'run_all', lambda runs, **k: calls.append((runs, k)))
  args = type('Args', (), {'supersede': True, 'data_dir': '', 'epochs': 0, 'workdir': str(tmp_path)})
  reproduce_tagging.run([reproduce_tagging.run_of('ner', system, 0, args) for system in ('bilstm', 'crf')], args)
  args.supersede = False
  reproduce_tagging.run([reproduce_tagging.run_of('ner', 'crf', 0, args)], args)
  (runs_a, kwargs_a), (_, kwargs_b) = calls
  assert [(r.name, r.record, r.workdir) for r in runs_a] == [
      ('ner bilstm seed 0', runs / 'ner-bilstm-seed0.json', f'{tmp_path}/ner-bilstm-0'),
      ('ner crf seed 0', runs / 'ner-crf-seed0.json', f'{tmp_path}/ner-crf-0')]
  assert kwargs_a['supersede'] == old and kwargs_b['supersede'] is None  # without --supersede: never rerun
  assert kwargs_a['writer'] is records.save and runs_a[0].build().seed == 0
  # a rerun reads a device's word-vector file that is not here from the package; a file that is here stays
  here = tmp_path / 'vectors.txt'
  here.write_text('the 0.1 0.2\n')
  for path, expected in ((str(tmp_path / 'gone' / 'glove_ner.txt'), ''), (str(here), str(here))):
    config = ml_collections.ConfigDict({'model': {'embeddings': 'glove', 'embeddings_path': path}})
    records.package_vectors(config)
    assert config.model.embeddings_path == expected


def test_tagging_rows_with_one_config_are_one_row():
  from experiments import reproduce_tagging  # pylint: disable=import-outside-toplevel
  # configs/ner_plus.py computes the implicit term on every step: its r1 row is its implicit-cd row; POS and NER
  # reuse it ('r3h')
  assert reproduce_tagging.duplicates('ner_plus') == {'implicit-cd-r1': 'implicit-cd'}
  assert reproduce_tagging.duplicates('ner').get('implicit-cd-r1') is None
  assert reproduce_tagging.duplicates('pos').get('implicit-cd-r1') is None
  assert reproduce_tagging.duplicates('ner').get('implicit-cd') is None
  text = '\n'.join(reproduce_tagging.dataset_section('ner_plus', {})[0])
  assert '| implicit CD (T_inner 1, gcr, the term every step) |' not in text
  assert '`configs/ner_plus.py:implicit-cd-r1` is `configs/ner_plus.py:implicit-cd` on this dataset' in text
  assert '| implicit CD (T_inner 1, gcr, the term every step) |' in '\n'.join(
      reproduce_tagging.dataset_section('ner', {})[0])


def test_tagging_table_says_how_far_a_rerun_moved_a_replaced_record(tmp_path, monkeypatch):
  from experiments import reproduce_tagging  # pylint: disable=import-outside-toplevel
  history = lambda *dev: [{'epoch': e + 1, 'dev_f1': d} for e, d in enumerate(dev)]
  old = {'seed': 0, 'test_f1': 0.86, 'device': 'cpu: cpu', 'history': history(0.80, 0.85, 0.88)}
  new = {'seed': 0, 'test_f1': 0.865, 'device': 'cpu: cpu', 'history': history(0.80, 0.85, 0.87)}
  (tmp_path / 'ner-spen-seed0.json').write_text(json.dumps(old))
  monkeypatch.setattr(reproduce_tagging, 'SUPERSEDED', tmp_path)
  [line] = reproduce_tagging.superseded_lines('ner', {'ner-spen': [new]})
  assert 'test F1 strict moved by 0.50 (median of |change|; largest +0.50, ner-spen seed 0)' in line
  assert "Epoch 1's dev F1 equals the old record's to every digit in 1 of 1, every epoch's in 0, and the others part " \
         'at epoch 3 (median)' in line
  assert reproduce_tagging.superseded_lines('ner_plus', {'ner-spen': [new]}) == []


def test_tagging_margins_set_the_papers_beside_ours_on_the_papers_metric():
  from experiments import reproduce_tagging  # pylint: disable=import-outside-toplevel
  run = lambda seed, f1, dev: {'seed': seed, 'test_f1': 0.9, 'test_f1_conlleval': f1, 'dev_f1': dev}
  runs = {'ner-bilstm': [run(k, 0.85, 0.91) for k in range(3)],
          'ner-implicit-cd': [run(0, 0.86, 0.92), run(1, 0.84, 0.92), run(2, 0.87, 0.92)],
          'ner-spen': [run(k, 0.88, 0.93) for k in range(3)], 'ner-crf': [run(0, 0.99, 0.99)]}  # one seed: not eligible
  lines = reproduce_tagging.margins_lines(runs)
  assert ('| CoNLL-2003 NER (conlleval F1) | +0.8 (impl T3) | +0.67 (2/3 seeds) | SPEN (GBI, mirror descent) | '
          '+3.00 (3/3 seeds) | SPEN 88.00 |') in lines  # the CRF's one seed beats CD's mean but is not counted
  assert '| Twitter POS (accuracy) | +1.4 (impl T9) | not recorded | – | – | – |' in lines


def test_tagging_diagnostics_line_averages_run_medians():
  from experiments import reproduce_tagging  # pylint: disable=import-outside-toplevel
  summary = lambda st, cos, imp: {'stationarity': {'median': st, 'first': 0.9, 'last': st - 0.1},
                                  'cosine': {'median': cos}, 'implicit_norm': {'median': imp},
                                  'explicit_norm': {'median': 1.0}}
  rs = [{'train_summary': summary(0.5, -0.2, 0.1)}, {'train_summary': summary(0.7, 0.4, 0.3)}]
  line = reproduce_tagging.diagnostics_line('implicit CD', rs)
  assert 'mean over 2 seeds' in line and 'stationarity 0.60 (first 0.90, last 0.50)' in line
  assert 'cosine(implicit, explicit) +0.10' in line and '|implicit| / |explicit| 0.20' in line
  assert reproduce_tagging.diagnostics_line('implicit CD', [{'train_summary': {}}]) == ''  # a baseline's record


def test_tagging_throughput_rows_are_reproduce_systems():
  """benchmarks/tagging_throughput.py times each method with its reproduce_tagging systems' overrides; a method
  name missing from the registry is skipped with a note, an unknown name refused."""
  import pytest  # pylint: disable=import-outside-toplevel
  from benchmarks import tagging_throughput as tt  # pylint: disable=import-outside-toplevel
  from implicit_jax import methods  # pylint: disable=import-outside-toplevel
  for method, systems in tt.ROWS.items():
    assert all(tt.SYSTEMS[s][1]['method'] == method for s in systems), method
  systems, notes = tt.choose_systems(['implicit', 'infnet_plus', 'seal-nce', 'feedforward'])
  assert systems == ['bilstm', 'implicit-cd', 'implicit-ssvm', 'infnet-plus-separated', 'infnet-plus-shared',
                     'infnet-plus-stacked', 'infnet-plus-stacked-ge-a', 'infnet-plus-stacked-ge-b',
                     'infnet-plus-stacked-ge-c', 'seal-nce'] and notes == []
  registry = dict(methods.REGISTRY)
  del registry['crf']
  with pytest.MonkeyPatch.context() as mp:
    mp.setattr(methods, 'REGISTRY', registry)
    assert tt.choose_systems(['crf', 'spen']) == (['bilstm', 'spen'], [
        '`crf` skipped: not in implicit_jax.methods.REGISTRY in this checkout.'])
  with pytest.raises(ValueError, match='unknown'):
    tt.choose_systems(['bilstm-crf'])


def test_implicit_cost_times_the_horses_rows_at_seal_data_as_their_configs_build_them():
  """python -m benchmarks.implicit_cost --task horses-seal-data: every rival row and the committed implicit row are the
  config configs/horses.py:<system>,seal-data resolves to (the variant, the system, SEAL's chosen settings)."""
  from benchmarks import implicit_cost  # pylint: disable=import-outside-toplevel
  from implicit_jax.engine import config as config_lib  # pylint: disable=import-outside-toplevel
  import experiments  # pylint: disable=import-outside-toplevel
  horses = experiments.config_rows('horses')
  base = config_lib.from_file(Path(__file__).resolve().parents[1] / 'configs' / 'horses.py')
  rows = {**implicit_cost.TASKS['horses-seal-data'][3], **implicit_cost.implicit_rows('horses-seal-data')}
  for system, label in [(s, horses.SYSTEMS[s][0]) for s in ('fcn', 'dvn', 'seal-regression', 'seal-nce')] + [
      ('implicit-cd', 'implicit CD, committed')]:
    timed = base.copy_and_resolve_references()
    timed.update_from_flattened_dict(rows[label])
    built = horses.row(base.copy_and_resolve_references(), f'{system},seal-data')
    assert timed.to_dict() == built.to_dict(), system
  assert rows['SEAL-dynamic (regression)']['seal.num_samples'] == 47  # SEAL's setting, not the CPU config's


def test_cora_systems_and_sweeps_are_valid_overrides():
  from implicit_jax import methods  # pylint: disable=import-outside-toplevel
  from experiments import reproduce_cora  # pylint: disable=import-outside-toplevel
  for _, overrides in reproduce_cora.SYSTEMS.values():
    if overrides is not None:
      config = reproduce_cora.base_config(5, 0, '/nowhere', overrides)  # a misspelt field raises
      assert config.method in methods.REGISTRY and config.seed == config.data.draw == 0
  for size, draw, variants in reproduce_cora.SWEEPS.values():
    for overrides in variants.values():
      assert reproduce_cora.base_config(size, draw, '/nowhere', overrides).data.labeled == size


def test_cora_paired_differences_use_common_draws():
  from experiments import reproduce_cora  # pylint: disable=import-outside-toplevel
  rec = lambda draw, acc: {'config': {'data': {'draw': draw}}, 'test_accuracy': acc}
  got = reproduce_cora.paired([rec(0, 0.7), rec(1, 0.6), rec(2, 0.5)], [rec(0, 0.65), rec(2, 0.53)])
  assert got == '+1.00 (per draw +5.00, -3.00; 1/2 positive)'


def test_compare_sklearn_draws_the_scaled_fixtures_and_names_a_bad_spec(tmp_path):
  import pytest  # pylint: disable=import-outside-toplevel
  from experiments import compare_sklearn  # pylint: disable=import-outside-toplevel
  fixtures = Path(__file__).resolve().parent / 'fixtures' / 'mlc'
  # the committed files are the generator's draws, so make_scaled:R:S extends the same series
  for rows, seed, name in ((150, 0, 'scaled.arff'), (1500, 1, 'scaled_1500.arff')):
    path = Path(compare_sklearn.custom_file(f'make_scaled:{rows}:{seed}', str(tmp_path)))
    assert path.name == f'scaled_{rows}.arff'
    assert path.read_bytes() == (fixtures / name).read_bytes()
  assert compare_sklearn.custom_file('data/mine.arff', str(tmp_path)) == 'data/mine.arff'
  with pytest.raises(SystemExit, match="'make_scaled:15000'"):
    compare_sklearn.custom_file('make_scaled:15000', str(tmp_path))


def test_machine_names_the_cores_a_pinned_run_had(monkeypatch):
  import os  # pylint: disable=import-outside-toplevel
  monkeypatch.setattr(os, 'cpu_count', lambda: 2)
  monkeypatch.setattr(os, 'sched_getaffinity', lambda pid: {0, 1}, raising=False)
  assert records.machine().endswith(', 2 cores')
  monkeypatch.setattr(os, 'sched_getaffinity', lambda pid: {1}, raising=False)
  assert records.machine().endswith(', 1 of 2 cores')


def test_cpu_names_the_vector_sets_and_the_xla_cap_a_record_ran_with(monkeypatch):
  """Two processors that /proc/cpuinfo names alike ('AMD EPYC') round differently when one has AVX-512: a record
  names the vector sets (not the other flags), and the cap XLA_FLAGS put on them, which changes what XLA emits."""
  flags = ['fpu', 'sse', 'sse2', 'ssse3', 'sse4_1', 'sse4_2', 'misalignsse', 'avx', 'avx2', 'fma', 'avx512f',
           'avx512_bf16', 'aes']
  monkeypatch.setattr(records, '_cpuinfo', lambda: ('AMD EPYC', flags))
  monkeypatch.delenv('XLA_FLAGS', raising=False)
  info = records.cpu()
  assert info == {'model': 'AMD EPYC', 'vector': ['avx', 'avx2', 'avx512_bf16', 'avx512f', 'fma', 'sse', 'sse2',
                                                  'sse4_1', 'sse4_2', 'ssse3']}
  assert records.cpu_kind({'cpu': info}) == 'AVX-512'
  monkeypatch.setenv('XLA_FLAGS', '--xla_dump_to=x --xla_cpu_max_isa=AVX2')
  assert records.cpu_kind({'cpu': records.cpu()}) == 'AVX-512, XLA capped at AVX2'
  monkeypatch.setattr(records, '_cpuinfo', lambda: ('AMD EPYC', [f for f in flags if not f.startswith('avx512')]))
  monkeypatch.delenv('XLA_FLAGS')
  assert records.cpu_kind({'cpu': records.cpu()}) == 'AVX2'
  assert records.cpu_kind({'machine': 'AMD EPYC, 2 cores'}) is None  # made before records named it
  stamped = records.stamp({'task': 'mlc', 'test_f1': 0.5, 'predictions': {'test': [1]}})
  assert stamped['cpu']['vector'][:2] == ['avx', 'avx2'] and stamped['machine'].startswith('AMD EPYC, ')


def test_main_job_line_gives_each_kind_of_cpu_its_own_figures_and_refuses_a_record_in_another_kinds_folder(
    tmp_path):
  """The README's main-job line: the committed runs' spread and the kind they name (none, before records named it),
  then each kind's runs of docs/main_job/runs apart, never pooled with them; a record moved into another kind's
  folder would show its figure as that kind's, so it is refused."""
  from experiments import main_job  # pylint: disable=import-outside-toplevel
  avx512 = {'model': 'AMD EPYC', 'vector': ['avx', 'avx2', 'avx512f']}
  run = lambda seed, f1, **kw: {'seed': seed, 'test_f1': f1, 'test_f1_tuned': f1 + 0.04, 'machine': 'AMD EPYC, 2 cores',
                                **kw}
  committed = [run(0, 0.40), run(1, 0.39), run(2, 0.41)]
  stem = mlc.run_name('bibtex', mlc.MAIN_ROW, 'official')
  assert main_job.main_job_line(committed, tmp_path) == (
      f'Its committed runs (3 seeds; `configs/bibtex.py` is the row `configs/bibtex.py:{mlc.MAIN_ROW}`): test '
      'example F1 40.00 ± 1.00 at threshold 0.5, 44.00 ± 1.00 at the dev-tuned one '
      '([docs/mlc_results.md](docs/mlc_results.md)), made on an AMD EPYC whose records name no vector set.')
  (tmp_path / 'avx-512').mkdir()
  for seed, f1 in enumerate((0.39, 0.38, 0.37)):
    records.write(tmp_path / 'avx-512' / f'{stem}-seed{seed}.json', {**run(seed, f1, cpu=avx512), 'config': {}})
  line = main_job.main_job_line(committed, tmp_path)
  assert line.endswith('on an AMD EPYC with AVX-512, 38.00 ± 1.00 over 3 seeds, seed 0 39.00 (committed: 40.00) '
                       '([docs/main_job/runs/avx-512](docs/main_job/runs/avx-512)).')
  (tmp_path / 'avx2').mkdir()
  (tmp_path / 'avx-512' / f'{stem}-seed2.json').rename(tmp_path / 'avx2' / f'{stem}-seed2.json')
  with pytest.raises(ValueError, match='made on AVX-512, not in that kind'):
    main_job.main_job_line(committed, tmp_path)


def _block(text: str, key: str) -> str:
  start, end = f'<!-- results:{key} -->', f'<!-- /results:{key} -->'
  return text[text.index(start):text.index(end) + len(end)]


@pytest.mark.e2e
def test_table_only_writes_docs_and_readme_blocks_only_and_the_readme_is_up_to_date(tmp_path):
  """The four reproduce scripts' --table_only, run on a copy of the checkout: they rewrite docs/ and README's
  generated blocks, no source file (configs, scripts), and the README's main-job line and summary table are
  exactly what they build from the committed records (a number typed by hand, or a stale one, fails here)."""
  import hashlib  # pylint: disable=import-outside-toplevel
  import os  # pylint: disable=import-outside-toplevel
  import shutil  # pylint: disable=import-outside-toplevel
  import subprocess  # pylint: disable=import-outside-toplevel
  root = Path(__file__).resolve().parents[1]
  copy = tmp_path / 'repo'
  for folder in ('configs', 'experiments', 'docs'):
    shutil.copytree(root / folder, copy / folder, ignore=shutil.ignore_patterns('__pycache__'))
  shutil.copy(root / 'README.md', copy / 'README.md')
  digest = lambda: {p.relative_to(copy): hashlib.sha256(p.read_bytes()).hexdigest()
                    for folder in ('configs', 'experiments') for p in sorted((copy / folder).rglob('*.py'))}
  before = digest()
  env = dict(os.environ, JAX_PLATFORMS='cpu', PYTHONPATH=str(root))
  for script in ('reproduce_mlc', 'reproduce_tagging', 'reproduce_cora', 'reproduce_horses'):
    proc = subprocess.run([sys.executable, '-m', f'experiments.{script}', '--table_only',
                           f'--data_dir={tmp_path / "no_data"}'], cwd=copy, capture_output=True, text=True,
                          timeout=600, env=env)
    assert proc.returncode == 0, f'{script}: {proc.stderr[-2000:]}'
  assert digest() == before
  committed, rebuilt = (root / 'README.md').read_text(), (copy / 'README.md').read_text()
  for key in ('main', 'summary'):
    assert _block(rebuilt, key) == _block(committed, key), key
  assert rebuilt == committed  # nothing outside the blocks moved either
  assert f'configs/bibtex.py:{mlc.MAIN_ROW}`' in _block(committed, 'main')


def test_summary_keeps_other_families_and_chooses_on_dev(tmp_path):
  from experiments import summary  # pylint: disable=import-outside-toplevel
  run = lambda dev, test: {'dev_f1': dev, 'test_f1': test}
  groups = {'a': [run(0.5, 0.9)] * 3, 'b': [run(0.6, 0.1)] * 3, 'c': [run(0.9, 0.9)] * 2}
  assert summary.best(groups, 'dev_f1') == 'b'  # the best dev among rows with 3 seeds, not the best test
  readme = tmp_path / 'README.md'
  readme.write_text(f'# x\n\n{summary.START}\n{summary.END}\n\ntail\n')
  row = lambda family, task: summary.row(family, task, ('configs/x.py:a', groups['a']), ('configs/x.py:b', []),
                                         'test_f1', '1.0')
  summary.update(readme, 'horses', [row('horses', 'h')])
  summary.update(readme, 'mlc', [row('mlc', 'm1'), row('mlc', 'm2')])
  summary.update(readme, 'horses', [row('horses', 'h2')])
  text = readme.read_text()
  rows = [line for line in _block(text, 'summary').splitlines() if line.startswith('| ') and '---' not in line][1:]
  assert [r.split(' | ')[1] for r in rows] == ['m1', 'm2', 'h2']  # FAMILIES order, the horses row replaced
  assert '| `configs/x.py:a` | 90.00 ± 0.00 (3) | – | – | 1.0 |' in rows[0] and text.endswith('\n\ntail\n')


def test_summary_leads_ner_cells_with_conlleval_only_where_every_record_holds_it():
  from experiments import summary  # pylint: disable=import-outside-toplevel
  both = [{'test_f1': 0.86, 'test_f1_conlleval': 0.84}, {'test_f1': 0.88, 'test_f1_conlleval': 0.86}]
  strict_only = [{'test_f1': 0.86}, {'test_f1': 0.88}]
  key, extra = 'test_f1', 'test_f1_conlleval'
  assert summary.score(both, key, extra) == '85.00 ± 1.41 (2) (strict 87.00 ± 1.41)'
  assert summary.score(strict_only, key, extra) == 'strict 87.00 ± 1.41 (2) (conlleval not recorded)'
  mixed = [both[0], strict_only[1]]
  assert summary.score(mixed, key, extra) == 'strict 87.00 ± 1.41 (2) (conlleval 84.00, 1 of 2 seeds)'
  assert summary.score(strict_only, key) == '87.00 ± 1.41 (2)'  # POS, the other families: no second metric


def test_a_page_of_parts_appends_each_part_that_has_records_and_gives_blocks_their_fields(tmp_path, monkeypatch):
  """tables.Table.parts (docs/horses.md's sections): each part's text after the page's own, from its own records."""
  from experiments import tables  # pylint: disable=import-outside-toplevel
  monkeypatch.setattr(tables, 'PAGES', tmp_path)
  for name, text in (('a', '# A\n\n{n} rows of A\n'), ('b', '## B\n\n{n} rows of B\n'), ('c', '## C\n')):
    (tmp_path / f'{name}.md').write_text(text)
  count = lambda groups: {'n': len(groups)}
  part = lambda name: tables.Table(name, 'docs/x.md', (), count, template=f'{name}.md', section=name)
  page = tables.Table('a', 'docs/x.md', (), count, template='a.md', parts=(part('b'), part('c')))
  monkeypatch.setattr(tables.Table, 'load', lambda self: {'b': {'r1': [{}], 'r2': [{}]}}.get(self.name, {}))
  text, fields = page.text({'r': [{}]}, write=False)
  assert text == '# A\n\n1 rows of A\n\n## B\n\n2 rows of B\n'  # c, without records, left out
  assert fields['page'] == '# A\n\n1 rows of A\n' and list(fields['parts']) == ['b']
  assert fields['parts']['b']['page'] == '## B\n\n2 rows of B\n'


def test_horses_crop_systems_are_their_systems_with_crops_and_optional_in_the_table(monkeypatch):
  from implicit_jax.tasks import segmentation  # pylint: disable=import-outside-toplevel
  import experiments  # pylint: disable=import-outside-toplevel
  from experiments import reproduce_horses as rh, tables  # pylint: disable=import-outside-toplevel
  assert rh.CROPS_SYSTEMS and set(rh.CROPS_SYSTEMS) <= set(rh.SYSTEMS) and set(rh.ORDER) == set(rh.PUBLISHED)
  for system in rh.SYSTEMS:
    scale = 'full' if system in rh.FULL_ONLY else 'seal' if system in rh.SEAL_ONLY else 'half'
    config = experiments.row_config(rh.config_name(system, scale))  # a misspelt field raises
    if system in rh.CROPS_SYSTEMS:
      base = experiments.row_config(rh.config_name(system[:-len('-crops')]))
      assert config.data.crop == 24 and base.data.crop == 0
      base.data.crop = 24
      assert config.config_file == f'configs/horses.py:{system}'
      base.config_file = config.config_file  # the row's name
      assert config.to_dict() == base.to_dict()  # nothing else changed
      assert segmentation.check_crop(config.data) == (0, 2, 3, 4, 6, 8)  # SEAL's 36 windows
    else:
      assert config.data.crop == (24 if scale == 'seal' else 0)
  with pytest.raises(ValueError, match="row 'fcn-200' is of the published-width section only: fcn-200,full"):
    experiments.row_config(rh.config_name('fcn-200'))
  run = lambda seed, iou: {'seed': seed, 'test_mean_iou': iou, 'test_global_iou': iou, 'dev_mean_iou': iou,
                           'train_seconds': 1.0, 'device': 'cpu', 'command': 'python s.py', 'date': '2026-11-26',
                           'config': {'num_epochs': 1, 'batch_size': 8, 'model': {'channels': [32, 64, 64]}},
                           'task_info': {'split': 'a split', 'size': 32}}
  # a section's text from fixture records: each Table's own load gives what ``loaded`` holds under its name
  loaded = {}
  monkeypatch.setattr(tables.Table, 'load', lambda self: loaded.get(self.name, {}))
  text = lambda scale, groups: (rh.TABLES[0] if scale == 'half' else rh.SECTIONS[scale]).text(groups, False)[1]['page']
  table = text('half', {'fcn': [run(0, 0.6), run(1, 0.62)], 'fcn-crops': [run(0, 0.65), run(1, 0.61)]})
  assert '| FCN (cross-entropy), 24x24 crops | 2 | 63.00 ± 2.83 |' in table
  assert ('FCN (cross-entropy), 24x24 crops minus the same without crops, paired by seed (test mean IoU): '
          'seed 0 +5.00, seed 1 -1.00; mean +2.00, 1/2 seeds positive.') in table
  assert '| DVN (GBI, soft-IoU regression) | 0 | not run |' in table  # a default row that has not run
  assert 'SEAL-dynamic (regression), 24x24 crops' not in table       # an optional one is left out
  # --scale=seal: the implicit row paired against every rival, a run without a record named with its reason
  seal_run = lambda seed, iou: {**run(seed, iou), 'steps': 3000, 'best_epoch': 2,
                                'task_info': {'split': 'a split', 'size': 32, 'ids': {'dev': list(range(39))}},
                                'history': [{'epoch': 1, 'dev_mean_iou': iou}, {'epoch': 2, 'dev_mean_iou': iou}]}
  table = text('seal', {'fcn': [seal_run(0, 0.74), seal_run(1, 0.75)],
                        'implicit-cd': [seal_run(0, 0.76), seal_run(1, 0.74)]})
  assert "## At SEAL's protocol (`--scale=seal`)" in table and 'Made by `bash experiments/horses_parallel.sh' in table
  assert ('implicit CD (1 - soft IoU; T_inner 2, gcr) minus FCN (cross-entropy), paired by seed (test mean IoU): '
          'seed 0 +2.00, seed 1 -1.00; mean +0.50, 1/2 seeds positive.') in table
  unfinished = rh.SEAL_UNFINISHED['dvn'].format(seal_data='no record there yet')  # none on SEAL's data here either
  assert f'| DVN (GBI, soft-IoU regression) | 0 | no record: {unfinished} |' in table
  # --scale=seal-data: SEAL's data; the rows --scale=seal has that it has not run are named, and the README's summary
  # row (and the claims ledger) moves to it only once it has 3 seeds of each of SEAL Table 4's rows and implicit CD
  seal = {'fcn': [seal_run(0, 0.74)], 'implicit-cd': [seal_run(0, 0.76)], 'seal-regression': [seal_run(0, 0.75)]}
  seal_data = {'fcn': [seal_run(0, 0.77)], 'implicit-cd': [seal_run(0, 0.78)]}
  loaded.update({'horses-seal': seal, 'horses-seal-data': seal_data})
  table = text('seal-data', seal_data)
  assert "## At SEAL's protocol, on SEAL's data (`--scale=seal-data`)" in table and '160 training and 39 dev' in table
  assert '| SEAL-dynamic (regression) | 0 | not run yet' in table and '| DVN (GBI, soft-IoU regression) | 0 |' in table
  assert "Not run on SEAL's data yet" in table and '| SEAL-dynamic (NCE) |' not in table  # run at neither scale
  assert rh.summary_scale() == 'seal'
  seal_data.update({s: [seal_run(seed, 0.77) for seed in range(3)] for s in rh.SUMMARY_ROWS})
  assert rh.summary_scale() == 'seal-data'
  seal_data['seal-nce'].pop()  # one Table 4 row at 2 seeds: not yet
  assert rh.summary_scale() == 'seal'
  assert 'section "At SEAL\'s protocol, SEAL\'s data"' in rh.summary_rows(seal_data, 'seal-data')[0]


def test_compare_sklearn_table_only_rebuilds_the_table_from_its_records(tmp_path, monkeypatch):
  import json  # pylint: disable=import-outside-toplevel
  from experiments import compare_sklearn, tables  # pylint: disable=import-outside-toplevel
  monkeypatch.setattr(tables, 'ROOT', tmp_path)  # its Table reads tmp_path/docs/sklearn_baseline/runs
  runs = tmp_path / 'docs' / 'sklearn_baseline' / 'runs'
  runs.mkdir(parents=True)
  info = lambda train: {'sizes': {'train': train, 'dev': 3, 'test': 3}, 'preprocessing': 'none', 'standardised': True}
  for label, train, seed, f1, br in (('scaled.arff', 90, 0, 0.90, 0.92), ('scaled.arff', 90, 1, 0.88, 0.92),
                                     ('cal500', 301, 0, 0.38, 0.36)):
    record = {'dataset': label, 'seed': seed, 'info': info(train), 'command': 'python -m experiments.compare_sklearn',
              'date': '2026-11-26T00:00:00', 'device': 'cpu: cpu', 'machine': 'x',
              'mbce': {'test_f1': f1, 'test_f1_tuned': f1, 'dev_f1': f1, 'train_seconds': 1.0},
              'never': {'test_f1': 0.5} if label == 'cal500' else None,
              'br': {'test_f1': br, 'test_f1_tuned': br, 'dev_f1': br, 'seconds': 0.1}}
    (runs / f'{label}-seed{seed}.json').write_text(json.dumps(record))
  monkeypatch.setattr(sys, 'argv', ['compare_sklearn.py', '--table_only', f'--out={tmp_path / "table.md"}'])
  compare_sklearn.main()
  text = (tmp_path / 'table.md').read_text()
  assert 'by the command in [table.commands.txt](table.commands.txt) (runs dated 2026-11-26' in text
  assert (tmp_path / 'table.commands.txt').read_text() == 'python -m experiments.compare_sklearn\n'
  assert 'mean ± sample standard deviation (ddof 1) over N seeds' in text
  rows = [line for line in text.splitlines() if line.startswith('| ') and 'dataset' not in line]
  assert rows[0].startswith('| cal500 | 301/3/3 | none | 38.00 | 38.00 | 50.00 | 36.00 |')  # datasets first
  assert rows[1].startswith('| scaled.arff | 90/3/3 | none | 89.00 ± 1.41 | 89.00 ± 1.41 | – | 92.00 ± 0.00 | '
                            '92.00 ± 0.00 | -3.00 (-2.00, -4.00) |')


def test_compare_methods_trains_an_implicit_row_as_reproduce_mlc_does():
  """An implicit row named to compare_methods (e.g. implicit-ssvm-h400) is reproduce_mlc's run (its record, workdir
  and config), trained (not verified: compare_methods has no --verify); a baseline's record is under baselines/."""
  import argparse  # pylint: disable=import-outside-toplevel
  from experiments import compare_methods  # pylint: disable=import-outside-toplevel
  from experiments import reproduce_mlc  # pylint: disable=import-outside-toplevel
  args = argparse.Namespace(data_dir='data', protocol='official', epochs=0)
  run, mlc_run = (m.run_of('bibtex', 'implicit-ssvm-h400', 1, args) for m in (compare_methods, reproduce_mlc))
  assert (run.name, run.record, run.workdir) == (mlc_run.name, mlc_run.record, mlc_run.workdir)
  assert run.record == reproduce_mlc.RUNS / 'bibtex-implicit-ssvm-h400-seed1.json'
  assert run.workdir == '/tmp/reproduce_mlc/bibtex-implicit-ssvm-h400-1'
  assert run.build().to_dict() == mlc_run.build().to_dict()
  baseline = compare_methods.run_of('bibtex', 'spen', 0, args)
  assert baseline.record == reproduce_mlc.ROOT / 'docs' / 'baselines' / 'runs' / 'bibtex-spen-seed0.json'
  assert baseline.build().method != run.build().method
  # a record's row of docs/baselines.md: its folder and file name say the system, official split only
  official, resplit = {'task_info': {'protocol': 'official'}}, {'task_info': {'protocol': 'resplit'}}
  assert compare_methods.row_of(baseline.record, official) == ('bibtex', 'spen')
  assert compare_methods.row_of(run.record, official) == ('bibtex', 'implicit-ssvm-h400')
  assert compare_methods.row_of(run.record, resplit) is None
  assert compare_methods.row_of(run.record.with_name('bibtex-spen-seed0.json'), official) is None  # not its folder


def test_last_tenth_gain_is_the_one_flattening_test_of_every_table():
  """A new best in the last tenth of the epochs is a positive gain, a curve that peaked before a negative one; both
  history forms (a list of dicts, or columns and rows) read alike; a history under two tenths long is NaN."""
  rising = {'history': [{'epoch': e, 'dev_f1': e / 100} for e in range(1, 21)]}
  peaked = {'history': {'columns': ['epoch', 'dev_f1'], 'rows': [[e, 0.5 - abs(e - 10) / 100] for e in range(1, 21)]}}
  assert records.last_tenth_gain(rising, 'dev_f1') == pytest.approx(2.0)      # 0.20 - 0.18, x 100
  assert records.last_tenth_gain(peaked, 'dev_f1') == pytest.approx(-9.0)     # 0.41 - 0.50
  assert records.last_tenth_gain({'history': [{'dev_f1': 0.3}]}, 'dev_f1') != records.last_tenth_gain(
      {'history': [{'dev_f1': 0.3}]}, 'dev_f1')  # NaN


def test_supersede_reruns_a_record_without_predictions_from_itself_and_keeps_the_old(tmp_path, monkeypatch):
  """``reproduce_mlc --supersede``: a record that keeps no predictions is rerun from its own config (not its row's
  today), the new record (with predictions) takes its place, the old one moves aside, and the page says how far the
  rerun moved; a record that keeps predictions is left alone."""
  import argparse  # pylint: disable=import-outside-toplevel
  import shutil  # pylint: disable=import-outside-toplevel
  from experiments import reproduce_mlc  # pylint: disable=import-outside-toplevel
  from implicit_jax.engine import config as config_lib, train  # pylint: disable=import-outside-toplevel
  committed = reproduce_mlc.ROOT / 'docs' / 'mlc' / 'runs'
  runs = tmp_path / 'runs'
  monkeypatch.setattr(reproduce_mlc, 'RUNS', runs)
  monkeypatch.setattr(reproduce_mlc, 'SUPERSEDED', tmp_path / 'superseded')
  runs.mkdir()
  shutil.copy(committed / 'delicious-mbce-seed0.json', runs / 'delicious-mbce-seed0.json')
  # A record as those made before records kept their predictions.
  unscored = json.loads((committed / 'delicious-implicit-cd-seed0.json').read_text())
  unscored.pop('predictions', None)
  (runs / 'delicious-implicit-cd-seed0.json').write_text(json.dumps(unscored))
  old = records.load(runs / 'delicious-implicit-cd-seed0.json')
  assert records.load(runs / 'delicious-mbce-seed0.json').get('predictions')
  trained = []

  def rerun(config, workdir):
    trained.append(config)
    return dict(old, test_f1=old['test_f1'] + 0.005, predictions={'test': 'stand-in'}, device='cpu: cpu')

  args = argparse.Namespace(data_dir='DATA', protocol='official', epochs=0, verify=False, supersede=True)

  def fails(config, workdir):
    raise ValueError('DATA/mulan/delicious/delicious-train.arff: no such file')

  monkeypatch.setattr(train, 'train_and_evaluate', fails)  # a bad --data_dir: the old record stays where it was
  one = lambda system: reproduce_mlc.run([reproduce_mlc.run_of('delicious', system, 0, args)], args)
  with pytest.raises(ValueError, match='no such file'):
    one('implicit-cd')
  assert (runs / 'delicious-implicit-cd-seed0.json').exists() and not (tmp_path / 'superseded').exists()
  monkeypatch.setattr(train, 'train_and_evaluate', rerun)
  for system in ('implicit-cd', 'mbce', 'implicit-ssvm'):  # no implicit-ssvm record: not trained by --supersede
    one(system)
  assert len(trained) == 1  # the MBCE record keeps its predictions: not rerun
  expected = config_lib.from_record(committed / 'delicious-implicit-cd-seed0.json')
  expected.data.data_dir = 'DATA'
  without_file = lambda c: {k: v for k, v in c.to_dict().items() if k != 'config_file'}
  assert without_file(trained[0]) == without_file(expected)
  assert trained[0].config_file == str(tmp_path / 'superseded' / 'delicious-implicit-cd-seed0.json')  # its recipe
  assert records.load(tmp_path / 'superseded' / 'delicious-implicit-cd-seed0.json')['test_f1'] == old['test_f1']
  assert records.load(runs / 'delicious-implicit-cd-seed0.json')['predictions'] == {'test': 'stand-in'}
  line, = reproduce_mlc.superseded_lines()
  assert '1 record that kept no predictions was rerun' in line and 'test F1 @0.5 moved by 0.50' in line
  # A rerun cut short between moving the old record aside and writing the new one is taken up by the command.
  (runs / 'delicious-implicit-cd-seed0.json').unlink()
  one('implicit-cd')
  assert len(trained) == 2 and (runs / 'delicious-implicit-cd-seed0.json').exists()
  with pytest.raises(SystemExit, match='already holds a replaced record'):  # a second rerun would lose the first
    (runs / 'delicious-implicit-cd-seed0.json').write_text(json.dumps(unscored))
    one('implicit-cd')


def test_cost_to_dev_reads_steps_to_the_score_both_reach_from_the_committed_records():
  """benchmarks/cost_to_dev.py: per seed, the target is the lower of the two best dev scores and each run's steps
  are those of the first evaluation at or above it; every pair it times names committed records that share seeds
  and hold the dev score it reads."""
  from benchmarks import cost_to_dev  # pylint: disable=import-outside-toplevel
  implicit = {0: (None, [(10, 0.30), (20, 0.50), (30, 0.45)]), 1: (None, [(10, 0.2), (20, 0.6)]),
              2: (None, [(10, 0.9)])}
  rival = {0: (None, [(5, 0.40), (10, 0.48), (15, 0.55)]), 1: (None, [(5, 0.1), (10, 0.3), (15, 0.35)])}
  assert cost_to_dev.reach(implicit, rival) == [
      {'seed': 0, 'target': 0.50, 'implicit_steps': 20, 'rival_steps': 15},  # the implicit best, reached by both
      {'seed': 1, 'target': 0.35, 'implicit_steps': 20, 'rival_steps': 15}]  # the rival's best; seed 2 unpaired
  for name, (_, imp, _, riv, metric) in cost_to_dev.PAIRS.items():
    a, b = cost_to_dev.load_runs(imp, metric), cost_to_dev.load_runs(riv, metric)
    assert len(set(a) & set(b)) >= 3, name
  with pytest.raises(SystemExit, match='no record matches'):
    cost_to_dev.load_runs('mlc/runs/no-such-row-seed*.json', 'dev_f1')
  with pytest.raises(SystemExit, match="no dev history of 'dev_nothing'"):
    cost_to_dev.load_runs('mlc/runs/bibtex-mbce-seed0.json', 'dev_nothing')


def test_cost_to_dev_sections_are_their_figures_files_and_a_gpu_row_names_its_device():
  """docs/benchmarks.md's cost-to-dev sections, the CPU's and the GPU's, are what --table_only builds from
  cost_to_dev.json and cost_to_dev_gpu.json (no figure typed by hand); a GPU row names the device its pair ran on
  (one section holds pairs of an H100 and an H200); the cost with one compile adds each run's compile to its side."""
  import re  # pylint: disable=import-outside-toplevel
  from benchmarks import cost_to_dev  # pylint: disable=import-outside-toplevel
  doc = (cost_to_dev.DOCS / 'benchmarks.md').read_text(encoding='utf-8')
  for tag in ('', '_gpu'):
    kept = json.loads(cost_to_dev.out_json(tag).read_text(encoding='utf-8'))
    body = cost_to_dev.section([kept[n] for n in cost_to_dev.PAIRS if n in kept], tag)
    written = re.search(rf'<!-- bench:cost_to_dev{tag} -->\n(.*?)\n<!-- /bench:cost_to_dev{tag} -->', doc, re.S)
    assert written and written.group(1) == body.strip(), tag
  gpu = {'date': '2026-11-28 06:10 UTC', 'machine': 'Xeon, 16 cores, JAX 0.11.2 (gpu backend, NVIDIA H200); load'}
  assert cost_to_dev.measured_on(gpu, '_gpu') == '2026-11-28 06:10 UTC, NVIDIA H200'
  assert cost_to_dev.measured_on(gpu, '') == '2026-11-28 06:10 UTC'
  result = {'implicit_compile_s': 20.0, 'rival_compile_s': 5.0}
  assert cost_to_dev.with_compile(result, {'implicit_seconds': 10.0, 'rival_seconds': 25.0}) == 1.0


def test_implicit_cost_names_an_unknown_rival_in_one_line():
  """python -m benchmarks.implicit_cost --rivals: a label the task lacks ends with one line naming it and the task's
  rivals (before any data is read or step compiled)."""
  import subprocess  # pylint: disable=import-outside-toplevel
  root = Path(__file__).resolve().parents[1]
  done = subprocess.run([sys.executable, '-m', 'benchmarks.implicit_cost', '--task', 'pos',
                         '--rivals=InfNet+ stacked,no-such-rival', '--out', '-'], capture_output=True, text=True,
                        timeout=120, check=False, cwd=root)
  assert done.returncode == 2
  last = done.stderr.strip().splitlines()[-1]
  assert 'unknown no-such-rival' in last and 'InfNet+ stacked' in last, done.stderr


def test_cost_to_dev_refuses_another_backends_figures_file_for_a_measuring_run():
  """python -m benchmarks.cost_to_dev --of names whose figures --table_only rebuilds; a measuring run given it would
  write this machine's timings into the other backend's file, so it ends in one line before anything is timed."""
  import subprocess  # pylint: disable=import-outside-toplevel
  root = Path(__file__).resolve().parents[1]
  done = subprocess.run([sys.executable, '-m', 'benchmarks.cost_to_dev', '--of=gpu', '--pairs=cora',
                         '--out', '-'], capture_output=True, text=True, timeout=120, check=False, cwd=root)
  assert done.returncode == 2
  assert '--of' in done.stderr.strip().splitlines()[-1] and '--table_only' in done.stderr, done.stderr


def test_rerun_moves_names_the_direction_of_each_rerun_on_another_device():
  """A rerun on the other kind of device is counted by direction: CPU records rerun on a GPU, a GPU one on a CPU."""
  rec = lambda device, f1: {'device': device, 'seed': 0, 'test_f1': f1, 'history': [{'epoch': 1, 'dev_f1': f1}]}
  pairs = [('a', rec('cpu: cpu', 0.5), rec('gpu: H100', 0.6)), ('b', rec('cpu: cpu', 0.5), rec('gpu: H100', 0.6)),
           ('c', rec('gpu: H200', 0.5), rec('cpu: cpu', 0.4)), ('d', rec('cpu: cpu', 0.5), rec('cpu: cpu', 0.5))]
  text = records.rerun_moves(pairs)
  assert 'On the same kind of device (1 of them)' in text
  assert text.endswith(' 2 were rerun on a GPU instead of the CPU: another trajectory from the start. 1 was rerun '
                       'on a CPU instead of the GPU: another trajectory from the start.')


def test_every_scripts_runs_name_their_committed_records_and_build_their_rows(monkeypatch):
  """Each script's run (run_of) of a committed record names that record, so the runner skips it and trains nothing,
  and its config is the row's (built only on demand)."""
  import argparse  # pylint: disable=import-outside-toplevel
  from experiments import reproduce_cora, reproduce_horses, reproduce_mlc, reproduce_tagging, sweep  # pylint: disable=import-outside-toplevel
  from implicit_jax.engine import train  # pylint: disable=import-outside-toplevel

  def never(config, workdir):
    raise AssertionError(f'{workdir}: a committed run was trained again')
  monkeypatch.setattr(train, 'train_and_evaluate', never)
  args = argparse.Namespace(data_dir='DATA', protocol='official', epochs=0, workdir='/tmp/w', scale='half',
                            supersede=False)
  runs = [reproduce_mlc.run_of('bibtex', 'mbce', 0, args), reproduce_tagging.run_of('ner', 'bilstm', 0, args),
          reproduce_cora.run_of('bilstm', 10, 0, args), reproduce_horses.run_of('dvn', 0, args),
          sweep.run_of('bibtex-mbce', 'base', 0, args)]
  assert all(r.record.exists() for r in runs), [str(r.record) for r in runs if not r.record.exists()]
  assert [o.status for o in runner.run_all(runs)] == ['done'] * len(runs)
  assert [r.workdir for r in runs] == ['/tmp/reproduce_mlc/bibtex-mbce-0', '/tmp/w/ner-bilstm-0',
                                       '/tmp/w/bilstm-l10-d0', '/tmp/w/half-dvn-0', '/tmp/sweep/bibtex-mbce-base-0']
  configs = [r.build() for r in runs]
  assert [c.seed for c in configs] == [0] * len(runs)
  assert configs[3].data.data_dir == 'DATA' and configs[4].to_dict() != configs[0].to_dict()


@pytest.mark.parametrize('flags,message', [
    (['--seeds=x'], "argument --seeds: a comma-separated list of integers, got 'x'"),
    (['--datasets=genbas', '--supersede'], "argument --datasets: unknown 'genbas'; choose from bibtex, delicious,"),
    (['--systems=mbcee', '--table_only'], "argument --systems: unknown 'mbcee'; choose from mbce,")])
def test_reproduce_mlc_checks_every_list_flag_before_any_work(flags, message):
  """A typo in --datasets ran nothing, rebuilt the table and exited 0; --seeds=x ended in 'invalid literal for int()',
  no flag named. Each is one line naming the flag and the choices, status 2, before anything is read or written."""
  import subprocess  # pylint: disable=import-outside-toplevel
  root = Path(__file__).resolve().parents[1]
  done = subprocess.run([sys.executable, '-m', 'experiments.reproduce_mlc', *flags, '--data_dir=no/such/dir'],
                        cwd=root, capture_output=True, text=True, timeout=120, check=False)
  assert done.returncode == 2, done.stderr
  assert message in done.stderr.strip().splitlines()[-1], done.stderr


def test_the_horses_figure_reads_the_runs_where_reproduce_horses_trains_them(tmp_path, monkeypatch):
  """horses_figure.py draws from the workdirs reproduce_horses.py trains in, at each --scale (it once read
  <system>-<seed>, where the runs train in <scale>-<system>-<seed>)."""
  import argparse  # pylint: disable=import-outside-toplevel
  from experiments import horses_figure, reproduce_horses  # pylint: disable=import-outside-toplevel
  from implicit_jax.engine import checkpoints  # pylint: disable=import-outside-toplevel
  args = argparse.Namespace(scale='seal', workdir=str(tmp_path), data_dir='', epochs=0)
  trained = [reproduce_horses.run_of(system, 1, args).workdir for system, _ in horses_figure.METHODS]
  read = []

  def load_trained(workdir):
    read.append(workdir)
    raise KeyboardInterrupt  # stops the figure at its first run
  monkeypatch.setattr(checkpoints, 'load_trained', load_trained)
  monkeypatch.setattr(sys, 'argv', ['horses_figure', f'--workdir={tmp_path}', '--scale=seal', '--seed=1'])
  with pytest.raises(KeyboardInterrupt):
    horses_figure.main()
  assert read == trained[:1] and trained[0] == f'{tmp_path}/seal-fcn-1'
