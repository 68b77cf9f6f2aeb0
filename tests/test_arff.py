"""Tests for implicit_jax.tasks.mlc.arff: MULAN / MEKA / Clus HMC readers.

Fixtures in tests/fixtures/mlc are cut from the real files in /work/shared/data (see the ``%`` comment at
the top of each); the expected cells below were read off those fixture files by hand.
"""

import os
import re
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

from implicit_jax.tasks.mlc.arff import (
    MultiLabelData,
    hierarchy_ancestors,
    impute_and_standardise,
    read_clus_hmc,
    read_mulan,
)

FIXTURES = Path(__file__).resolve().parent / 'fixtures' / 'mlc'


def shared_data() -> Path:
    """The benchmark data folder, or skip the test when it is not there."""
    root = Path(
        os.environ.get('IMPLICIT_JAX_SHARED_DATA', Path(__file__).resolve().parents[1].parent / 'shared' / 'data')
    )
    if not (root / 'mulan').is_dir():
        pytest.skip(f'shared data not present: {root}')
    return root


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def col(data: MultiLabelData, name: str, labels: bool = False) -> np.ndarray:
    names = data.label_names if labels else data.feature_names
    return (data.y if labels else data.x)[:, names.index(name)]


# ---------------------------------------------------------------------------------------------------------
# Fixtures cut from the real files
# ---------------------------------------------------------------------------------------------------------


def test_bibtex_fixture_sparse_rows():
    d = read_mulan(FIXTURES / 'bibtex_cut.arff', FIXTURES / 'bibtex_cut.xml')
    assert d.x.shape == (5, 16) and d.y.shape == (5, 10)
    assert d.x.dtype == np.float32 and d.y.dtype == np.int8
    assert d.label_names[:3] == ('TAG_2005', 'TAG_agdetection', 'TAG_competition')
    assert d.feature_names[:3] == ('0', '000', '02')
    # Row 1: {0 1,3 1,4 1,5 1,11 1,13 1,15 1,17 1,18 1}
    assert np.flatnonzero(d.x[0]).tolist() == [0, 3, 4, 5, 11, 13, 15]
    assert [d.label_names[j] for j in np.flatnonzero(d.y[0])] == ['TAG_agdetection', 'TAG_competition']
    # Row 2: {7 1,11 1,12 1,15 1,20 1,21 1}: 'according' is feature 7, TAG_hci / TAG_learning labels 20, 21.
    assert col(d, 'according')[1] == 1 and col(d, 'a')[1] == 0
    assert col(d, 'TAG_hci', labels=True)[1] == 1 and col(d, 'TAG_learning', labels=True)[1] == 1
    assert col(d, 'TAG_tagging', labels=True).tolist() == [0, 0, 0, 1, 0]
    assert col(d, '000').sum() == 0 and col(d, 'TAG_2005', labels=True).sum() == 0
    assert d.y.sum() == 9 and d.label_cardinality == pytest.approx(1.8)
    assert d.source.endswith('bibtex_cut.arff')


def test_genbase_fixture_nominal_yes_no_and_protein_id_dropped():
    d = read_mulan(FIXTURES / 'genbase_cut.arff', FIXTURES / 'genbase_cut.xml')
    assert 'protein' not in d.feature_names  # nominal with 662 values: an identifier, dropped by default
    assert d.x.shape == (5, 10) and d.y.shape == (5, 6)
    # Row 1: NO x6, then PS50052=YES, PS50072=NO, PS50079=YES, PS50101=YES ({YES,NO} declared: YES -> 1).
    assert d.x[0].tolist() == [0, 0, 0, 0, 0, 0, 1, 0, 1, 1]
    assert col(d, 'PS50072')[1] == 1 and col(d, 'PS01031').tolist() == [0, 0, 0, 0, 1]
    assert col(d, 'PDOC00670', labels=True).tolist() == [1, 0, 0, 0, 0]
    assert col(d, 'PDOC00154', labels=True)[1] == 1
    assert col(d, 'PDOC00343', labels=True).sum() == 0
    assert (d.y.sum(axis=1) == 1).all()


def test_genbase_fixture_explicit_drop_list_keeps_index_coded_id():
    d = read_mulan(FIXTURES / 'genbase_cut.arff', FIXTURES / 'genbase_cut.xml', drop_features=())
    assert d.feature_names[0] == 'protein' and d.x.shape == (5, 11)
    # Q9PQS9 and P22011 are values 635 and 223 (0-based) of the declared list.
    assert d.x[:2, 0].tolist() == [635, 223]
    d2 = read_mulan(FIXTURES / 'genbase_cut.arff', FIXTURES / 'genbase_cut.xml', drop_features=['PS00010'])
    assert d2.x.shape == (5, 10) and 'PS00010' not in d2.feature_names and 'protein' in d2.feature_names


def test_cal500_fixture_meka_negative_c():
    # The real cal500.arff has no -C option: the fixture's header was edited by hand (see its comment).
    d = read_mulan(FIXTURES / 'cal500_cut.arff')
    assert d.x.shape == (5, 4) and d.y.shape == (5, 5)
    assert d.label_names[0] == 'Angry-Agressive' and d.label_names[-1] == 'Genre-Best-Rock'
    np.testing.assert_allclose(d.x[0], [0.08254, 0.048394, 0.322451, 0.099049], rtol=1e-6)
    assert d.x[4, 0] == pytest.approx(0.126068)
    assert d.y[0].tolist() == [0, 1, 1, 1, 0]
    assert col(d, 'Angry-Agressive', labels=True).tolist() == [0, 1, 0, 0, 0]
    # num_labels must agree with -C; a disagreement is an error, not a silent choice.
    assert read_mulan(FIXTURES / 'cal500_cut.arff', num_labels=5).y.shape == (5, 5)
    with pytest.raises(ValueError, match='num_labels=4'):
        read_mulan(FIXTURES / 'cal500_cut.arff', num_labels=4)


def test_spo_fixture_clus_hierarchy():
    d = read_clus_hmc(FIXTURES / 'spo_cut.arff')
    assert d.y.shape == (5, 44) and d.x.shape == (5, 3 + 5 + 2 + 2)
    assert d.label_names[:3] == ('01', '01/01', '01/01/03')
    # Row 1: 01/01/03/02/01@01/01/03/02/02@01/02@02/10@42/01, closed under ancestors.
    positives = {d.label_names[j] for j in np.flatnonzero(d.y[0])}
    assert positives == {
        '01', '01/01', '01/01/03', '01/01/03/02', '01/01/03/02/01', '01/01/03/02/02',
        '01/02', '02', '02/10', '42', '42/01',
    }  # fmt: skip
    assert col(d, '42', labels=True).tolist() == [1, 0, 0, 1, 1]  # 42/01 in rows 1, 4; 42/10 in row 5
    assert col(d, '01/01/05', labels=True).sum() == 0 and col(d, '02/01', labels=True).sum() == 0
    # Ancestor closure holds everywhere: a child is never positive without its parent.
    anc = hierarchy_ancestors(d.label_names)
    for i in range(len(d.label_names)):
        assert (d.y[:, anc[i] == 1] >= d.y[:, [i]]).all()


def test_spo_fixture_features_one_hot_and_missing():
    d = read_clus_hmc(FIXTURES / 'spo_cut.arff')
    assert d.feature_names[:3] == ('t0_green', 't0_green_bkg', 'ndt80_delete_mid_g/r_ratio')
    assert d.feature_names[3:8] == tuple(f'failed_pcr={v}' for v in '12345')
    assert d.feature_names[8:] == (
        'blast_homology_within_genome=no', 'blast_homology_within_genome=yes',
        'overlaps_another_orf=no', 'overlaps_another_orf=yes',
    )  # fmt: skip
    # Row 2: 1530,1118,?,1,?,no
    assert d.x[1, 0] == 1530 and np.isnan(d.x[1, 2])
    assert d.x[1, 3:8].tolist() == [1, 0, 0, 0, 0]
    assert np.isnan(d.x[1, 8:10]).all() and d.x[1, 10:].tolist() == [1, 0]
    # Row 3: 9570,1305,0.88,?,yes,yes
    assert d.x[2, 2] == pytest.approx(0.88) and np.isnan(d.x[2, 3:8]).all()
    assert d.x[2, 8:].tolist() == [0, 1, 0, 1]


def test_hierarchy_ancestors_matrix():
    a = hierarchy_ancestors(('01', '01/01', '01/01/03', '02'))
    assert a.tolist() == [[1, 0, 0, 0], [1, 1, 0, 0], [1, 1, 1, 0], [0, 0, 0, 1]]


# ---------------------------------------------------------------------------------------------------------
# Format details (hand-made files)
# ---------------------------------------------------------------------------------------------------------

MEKA_FIRST = """\
% labels first, quoted names with escapes and blanks, a missing value, spaces around values
@relation 'toy: -C 2 -split 0.5'
@attribute 'lab a' {0,1}
@attribute "lab \\"b\\"" {0,1}
@attribute 'it\\'s' numeric
@attribute colour {red, 'dark green', blue}
@attribute note string
@data
1, 0, 2.5, red, 'x, y'
0,1,?,'dark green',z
"""


def test_meka_positive_c_quoted_names_and_string_dropped(tmp_path):
    d = read_mulan(write(tmp_path, 'toy.arff', MEKA_FIRST))
    assert d.label_names == ('lab a', 'lab "b"')
    assert d.feature_names == ("it's", 'colour')  # the string attribute is dropped
    assert d.y.tolist() == [[1, 0], [0, 1]]
    assert d.x[0].tolist() == [2.5, 0]  # red is value 0
    assert np.isnan(d.x[1, 0]) and d.x[1, 1] == 1  # 'dark green' is value 1


def test_sparse_nominal_default_is_first_declared_value(tmp_path):
    text = "@relation r\n@attribute f {YES,NO}\n@attribute g numeric\n@attribute h {a,'b, c',c}\n"
    text += "@attribute y {0,1}\n@data\n{0 NO,3 1}\n{1 4.5,2 c}\n{}\n{2 'b, c', 3 1}\n"
    d = read_mulan(write(tmp_path, 's.arff', text), num_labels=1)
    # omitted f -> YES (first declared) -> 1; omitted g -> 0; omitted h -> a -> 0
    assert d.x.tolist() == [[0, 0, 0], [1, 4.5, 2], [1, 0, 0], [1, 0, 1]]
    assert d.y[:, 0].tolist() == [1, 0, 0, 1]


def test_xml_nested_labels_any_namespace(tmp_path):
    arff = write(
        tmp_path, 'h.arff', '@relation r\n@attribute x numeric\n@attribute A {0,1}\n@attribute B {0,1}\n'
        '@attribute C {0,1}\n@data\n1.5,1,0,1\n'
    )  # fmt: skip
    xml = write(
        tmp_path, 'h.xml', '<?xml version="1.0"?>\n<labels xmlns="urn:other">\n<label name="A">'
        '<label name="C"></label></label>\n<label name="B"/>\n</labels>\n'
    )  # fmt: skip
    d = read_mulan(arff, xml)
    assert d.label_names == ('A', 'B', 'C') and d.y.tolist() == [[1, 0, 1]]
    assert d.feature_names == ('x',) and d.x[0, 0] == 1.5


def test_multilabeldata_checks_shapes():
    with pytest.raises(ValueError, match='names'):
        MultiLabelData(np.zeros((2, 3)), np.zeros((2, 1)), ('a', 'b'), ('y',), 'test')
    with pytest.raises(ValueError, match='same rows'):
        MultiLabelData(np.zeros((2, 1)), np.zeros((3, 1)), ('a',), ('y',), 'test')
    d = MultiLabelData(np.zeros((1, 1), np.float64), np.array([[True]]), ['a'], ['y'], 'test')
    assert d.x.dtype == np.float32 and d.y.dtype == np.int8 and d.y[0, 0] == 1


def test_impute_and_standardise_uses_train_statistics():
    train = np.array([[1.0, np.nan, 5.0], [3.0, 4.0, 5.0], [np.nan, 8.0, 5.0]])
    test = np.array([[np.nan, 2.0, 7.0]])
    tr, te = impute_and_standardise(train, test)
    # column 0: observed 1, 3 -> mean 2; imputed column [1, 3, 2] has std sqrt(2/3)
    s0 = np.sqrt(2 / 3)
    np.testing.assert_allclose(tr[:, 0], [-1 / s0, 1 / s0, 0], rtol=1e-6)
    # column 1: mean 6, imputed [6, 4, 8] has std sqrt(8/3); test 2 -> (2-6)/std
    np.testing.assert_allclose(te[0, 1], -4 / np.sqrt(8 / 3), rtol=1e-6)
    assert te[0, 0] == 0  # missing test value -> train mean -> 0
    # constant column: std 1, no NaN/inf
    assert tr[:, 2].tolist() == [0, 0, 0] and te[0, 2] == 2
    assert tr.dtype == np.float32 and not np.isnan(tr).any()
    with pytest.raises(ValueError, match='shape'):
        impute_and_standardise(train, np.zeros((1, 2)))


# ---------------------------------------------------------------------------------------------------------
# Malformed input: the message names the file and the 1-based line
# ---------------------------------------------------------------------------------------------------------

SPARSE_HEADER = '@relation r\n@attribute a {0,1}\n@attribute b {0,1}\n@attribute L {0,1}\n@data\n'  # 5 lines


def test_bad_sparse_index_names_file_and_line(tmp_path):
    path = write(tmp_path, 'bad-sparse.arff', SPARSE_HEADER + '{0 1,2 1}\n\n{1 1,99 1}\n')
    with pytest.raises(ValueError) as err:
        read_mulan(path, num_labels=1)
    assert f'{path}:8: sparse index 99 out of range (3 attributes)' in str(err.value)


def test_unordered_and_malformed_sparse_rows(tmp_path):
    path = write(tmp_path, 'order.arff', SPARSE_HEADER + '{1 1,0 1}\n')
    with pytest.raises(ValueError, match=r'order\.arff:6: sparse index 0'):
        read_mulan(path, num_labels=1)
    path = write(tmp_path, 'pairs.arff', SPARSE_HEADER + '{0 1}\n{0 1 2 1}\n')
    with pytest.raises(ValueError, match=r'pairs\.arff:7: malformed sparse row'):
        read_mulan(path, num_labels=1)


def test_wrong_dense_value_count_names_file_and_line(tmp_path):
    text = '@relation r\n@attribute a numeric\n@attribute L {0,1}\n@data\n1,0\n2,1\n3\n'
    path = write(tmp_path, 'short.arff', text)
    with pytest.raises(ValueError) as err:
        read_mulan(path, num_labels=1)
    assert f'{path}:7: dense row has 1 values, expected 2' in str(err.value)


def test_bad_values_name_file_and_line(tmp_path):
    text = '@relation r\n@attribute a numeric\n@attribute f {YES,NO}\n@attribute L {0,1}\n@data\n1,YES,0\n'
    cases = {
        'num.arff': ('x,YES,0\n', "num.arff:7: attribute 'a': 'x' is not a number"),
        'nom.arff': ('1,MAYBE,0\n', "nom.arff:7: attribute 'f': value 'MAYBE' not in {YES,NO}"),
        'lab.arff': ('1,NO,?\n', "lab.arff:7: label 'L' is nan, expected 0 or 1"),
    }
    for name, (row, message) in cases.items():
        with pytest.raises(ValueError) as err:
            read_mulan(write(tmp_path, name, text + row), num_labels=1)
        assert message in str(err.value)


def test_header_errors_name_file_and_line(tmp_path):
    path = write(tmp_path, 'type.arff', '@relation r\n\n@attribute a date\n@data\n')
    with pytest.raises(ValueError, match=r"type\.arff:3: attribute 'a': unsupported type"):
        read_mulan(path, num_labels=1)
    path = write(tmp_path, 'dup.arff', '@relation r\n@attribute a numeric\n@attribute a numeric\n@data\n')
    with pytest.raises(ValueError, match=r'dup\.arff:3: duplicate attribute'):
        read_mulan(path, num_labels=1)
    path = write(tmp_path, 'nolabels.arff', '@relation r\n@attribute a numeric\n@data\n1\n')
    with pytest.raises(ValueError, match='no label columns were found'):
        read_mulan(path)


def test_unknown_xml_label_is_named(tmp_path):
    xml = write(
        tmp_path, 'labels.xml', '<labels xmlns="http://mulan.sourceforge.net/labels">'
        '<label name="L"/><label name="TAG_ghost"/><label name="TAG_nobody"/></labels>'
    )  # fmt: skip
    path = write(tmp_path, 'ok.arff', SPARSE_HEADER + '{0 1}\n')
    with pytest.raises(ValueError) as err:
        read_mulan(path, xml)
    message = str(err.value)
    assert 'labels.xml' in message and "'TAG_ghost'" in message and "'TAG_nobody'" in message
    assert "'L'" not in message


def test_missing_or_broken_xml_names_path(tmp_path):
    path = write(tmp_path, 'ok.arff', SPARSE_HEADER + '{0 1}\n')
    with pytest.raises(FileNotFoundError) as err:
        read_mulan(path, tmp_path / 'absent.xml')
    assert 'absent.xml' in str(err.value)
    broken = write(tmp_path, 'broken.xml', '<labels>\n<label name="L">\n</labels>\n')
    with pytest.raises(ValueError, match=r'broken\.xml:3: malformed XML'):
        read_mulan(path, broken)


def test_clus_unknown_class_path_names_file_and_line(tmp_path):
    text = '@RELATION r\n@ATTRIBUTE a numeric\n@ATTRIBUTE class hierarchical 01,01/01,02\n@DATA\n'
    path = write(tmp_path, 'hmc.arff', text + '1,01/01\n2,01/02@02\n')
    with pytest.raises(ValueError) as err:
        read_clus_hmc(path)
    assert f"{path}:6: class path '01/02' is not a node" in str(err.value)
    # An ancestor the header leaves out is still a label, and is positive with its child.
    d = read_clus_hmc(write(tmp_path, 'leaves.arff', '@RELATION r\n@ATTRIBUTE a numeric\n'
                            '@ATTRIBUTE class hierarchical 01/01,01/02\n@DATA\n1,01/02\n'))  # fmt: skip
    assert d.label_names == ('01', '01/01', '01/02') and d.y.tolist() == [[1, 0, 1]]


# ---------------------------------------------------------------------------------------------------------
# The real benchmark files: published statistics
# ---------------------------------------------------------------------------------------------------------


def timed(fn, *args):
    start = time.perf_counter()
    out = fn(*args)
    return out, time.perf_counter() - start


def test_real_bibtex():
    root = shared_data() / 'mulan' / 'bibtex'
    train, seconds = timed(read_mulan, root / 'bibtex-train.arff', root / 'bibtex.xml')
    test = read_mulan(root / 'bibtex-test.arff', root / 'bibtex.xml')
    assert seconds < 10, f'bibtex train took {seconds:.1f} s'
    assert train.x.shape == (4880, 1836) and train.y.shape == (4880, 159)
    assert test.x.shape == (2515, 1836) and test.y.shape == (2515, 159)
    assert train.feature_names == test.feature_names and train.label_names == test.label_names
    assert set(np.unique(train.x)) == {0.0, 1.0}
    cardinality = np.concatenate([train.y, test.y]).sum(axis=1).mean()
    assert cardinality == pytest.approx(2.40, abs=0.005)
    # First training row: {0 1,5 1,6 1,...}; its labels include TAG_agdetection (see the fixture).
    assert train.x[0, :7].tolist() == [1, 0, 0, 0, 0, 1, 1]
    assert col(train, 'TAG_agdetection', labels=True)[0] == 1


def test_real_delicious():  # ~1 s here, so not marked slow
    root = shared_data() / 'mulan' / 'delicious'
    train, seconds = timed(read_mulan, root / 'delicious-train.arff', root / 'delicious.xml')
    test = read_mulan(root / 'delicious-test.arff', root / 'delicious.xml')
    assert seconds < 10, f'delicious train took {seconds:.1f} s'
    assert train.x.shape == (12920, 500) and train.y.shape == (12920, 983)
    assert test.x.shape == (3185, 500) and test.y.shape == (3185, 983)
    # Names with quotes and backslashes are kept verbatim, as in the XML file.
    assert "TAG_m\\'usica" in train.label_names and 'TAG_c++' in train.label_names
    assert np.concatenate([train.y, test.y]).sum(axis=1).mean() == pytest.approx(19.0, abs=0.05)
    assert (train.y.sum(axis=1) == 0).sum() == 10 and (test.y.sum(axis=1) == 0).sum() == 4


def test_real_genbase():
    root = shared_data() / 'mulan' / 'genbase'
    train = read_mulan(root / 'genbase-train.arff', root / 'genbase.xml')
    test = read_mulan(root / 'genbase-test.arff', root / 'genbase.xml')
    assert train.x.shape == (463, 1185) and test.x.shape == (199, 1185)
    assert train.y.shape == (463, 27) and test.y.shape == (199, 27)
    assert 'protein' not in train.feature_names
    assert set(np.unique(train.x)) == {0.0, 1.0}
    assert np.concatenate([train.y, test.y]).sum(axis=1).mean() == pytest.approx(1.252, abs=0.005)


def test_real_cal500():
    root = shared_data() / 'mulan' / 'cal500'
    d = read_mulan(root / 'cal500.arff', root / 'cal500.xml')
    assert d.x.shape == (502, 68) and d.y.shape == (502, 174)
    assert d.label_cardinality == pytest.approx(26.04, abs=0.01)
    assert d.x[0, 0] == pytest.approx(0.08254) and not np.isnan(d.x).any()
    # The same file read by position agrees with the XML-driven read.
    np.testing.assert_array_equal(read_mulan(root / 'cal500.arff', num_labels=174).y, d.y)


def test_real_spo_fun():
    root = shared_data() / 'funcat'
    splits = {s: read_clus_hmc(root / f'spo_FUN.{s}.arff') for s in ('train', 'valid', 'test')}
    assert {s: d.x.shape[0] for s, d in splits.items()} == {'train': 1600, 'valid': 837, 'test': 1266}
    train = splits['train']
    assert train.y.shape[1] == 499 and train.x.shape[1] == 77 + 5 + 2 + 2
    assert all(d.label_names == train.label_names for d in splits.values())
    # The third training row lists 01/01/03/02/01@01/01/03/02/02@01/02@02/10@42/01: 11 nodes with ancestors.
    assert train.y[2].sum() == 11 and col(train, '01/01/03', labels=True)[2] == 1
    # Missing values are all in the nominal blocks (e.g. failed_pcr is mostly ?).
    assert np.isnan(train.x[:, :77]).sum() == 0 and np.isnan(train.x[:, 77:]).any()
    x_train, x_test = impute_and_standardise(train.x, splits['test'].x)
    assert not np.isnan(x_train).any() and not np.isnan(x_test).any()
    np.testing.assert_allclose(x_train.mean(axis=0), 0, atol=1e-4)


def _naive_mulan(arff_path: Path, num_labels: int) -> tuple[np.ndarray, np.ndarray]:
    """An independent, slow reference reader for the MULAN files here (sparse 0/1, dense numeric, YES/NO)."""
    lines = arff_path.read_text().split('\n')
    start = next(i for i, line in enumerate(lines) if line.strip().lower() == '@data')
    header = [line.split() for line in lines[:start] if line.lower().startswith('@attribute')]
    kinds = [h[2] for h in header]
    rows = []
    for line in lines[start + 1 :]:
        line = line.strip()
        if not line:
            continue
        row = [0.0] * len(header)
        if line.startswith('{'):
            for item in line[1:-1].split(','):
                index, value = item.split()
                row[int(index)] = float(value)
        else:
            for j, value in enumerate(line.split(',')):
                row[j] = 1.0 if value == 'YES' else 0.0 if value == 'NO' else float(value) if kinds[j] in (
                    'numeric', '{0,1}') else np.nan  # fmt: skip
        rows.append(row)
    table = np.array(rows)
    keep = [j for j, h in enumerate(header[:-num_labels]) if len(h[2]) < 100]  # drop genbase's protein
    return table[:, keep], table[:, -num_labels:]


@pytest.mark.slow
def test_real_mulan_files_match_a_naive_reference_reader():
    root = shared_data() / 'mulan'
    files = {
        'bibtex': ['bibtex-train', 'bibtex-test'],
        'delicious': ['delicious-train', 'delicious-test'],
        'genbase': ['genbase-train', 'genbase-test'],
        'cal500': ['cal500'],
    }
    for folder, names in files.items():
        for name in names:
            d = read_mulan(root / folder / f'{name}.arff', root / folder / f'{folder}.xml')
            x, y = _naive_mulan(root / folder / f'{name}.arff', len(d.label_names))
            np.testing.assert_array_equal(d.y, y, err_msg=name)
            np.testing.assert_allclose(d.x, x, rtol=1e-6, err_msg=name)


# ---------------------------------------------------------------------------------------------------------
# Faults a user meets (docs/faults.md)
# ---------------------------------------------------------------------------------------------------------


def test_a_utf8_bom_is_accepted(tmp_path):
    text = (FIXTURES / 'bibtex_cut.arff').read_bytes()
    path = tmp_path / 'bom.arff'
    path.write_bytes(b'\xef\xbb\xbf' + text)
    a, b = read_mulan(path, FIXTURES / 'bibtex_cut.xml'), read_mulan(FIXTURES / 'bibtex_cut.arff',
                                                                       FIXTURES / 'bibtex_cut.xml')
    assert a.feature_names == b.feature_names and a.label_names == b.label_names
    np.testing.assert_array_equal(a.x, b.x)
    np.testing.assert_array_equal(a.y, b.y)


def test_an_xml_that_omits_labels_is_warned_about(tmp_path):
    names = read_mulan(FIXTURES / 'bibtex_cut.arff', FIXTURES / 'bibtex_cut.xml').label_names
    xml = write(tmp_path, 'short.xml', '<labels>' + ''.join(f'<label name="{n}"/>' for n in names[:7]) + '</labels>')
    with pytest.warns(UserWarning, match=r"3 attribute\(s\) among or after the labels of .*short\.xml are not in it "
                                         rf"and are read as features: '{names[7]}'"):
        data = read_mulan(FIXTURES / 'bibtex_cut.arff', xml)
    assert len(data.label_names) == 7
    import warnings  # the full XML warns of nothing
    with warnings.catch_warnings():
        warnings.simplefilter('error')
        read_mulan(FIXTURES / 'bibtex_cut.arff', FIXTURES / 'bibtex_cut.xml')


MEDICAL_LIKE = ("@relation 'MEDC: -C 3-weka.filters.unsupervised.instance.RemovePercentage-P70.0-V'\n" +
                ''.join(f'@attribute {w} {{0,1}}\n' for w in ('cough', 'fever', 'kidney', 'reflux')) +
                ''.join(f'@attribute Class-{k}-{c} {{0,1}}\n' for k, c in enumerate(('593_70', '079_99', '786_09'))) +
                '@data\n0,1,0,0,1,0,0\n1,0,1,1,0,1,1\n')
MEDICAL_XML = ('<labels xmlns="http://mulan.sourceforge.net/labels">' +
               ''.join(f'<label name="Class-{k}-{c}"/>' for k, c in enumerate(('593_70', '079_99', '786_09'))) +
               '</labels>')


def test_an_xml_disagreeing_with_the_meka_header_decides_with_a_warning(tmp_path):
    """MULAN's medical files: '-C 3' in @relation (MEKA: the first 3 attributes) while the XML names the last 3.
    MULAN follows the XML; so does the reader, warning of the disagreement (it was an error before)."""
    path, xml = write(tmp_path, 'medical.arff', MEDICAL_LIKE), write(tmp_path, 'medical.xml', MEDICAL_XML)
    with pytest.warns(UserWarning, match=r"medical\.arff: its @relation option -C 3 names the first 3 attributes "
                                         r"\('cough', 'fever', \.\.\.\) as labels, but .*medical\.xml names 3 "
                                         r"\('Class-0-593_70', 'Class-1-079_99', \.\.\.\); following the XML, "
                                         r"as MULAN does"):
        data = read_mulan(path, xml)
    assert data.label_names == ('Class-0-593_70', 'Class-1-079_99', 'Class-2-786_09')
    assert data.feature_names == ('cough', 'fever', 'kidney', 'reflux')
    assert data.y.tolist() == [[1, 0, 0], [0, 1, 1]] and data.x.tolist() == [[0, 1, 0, 0], [1, 0, 1, 1]]
    meka = write(tmp_path, 'meka.arff', SPARSE_HEADER.replace('@relation r', "@relation 'r: -C -2'") + '{0 1}\n')
    with pytest.warns(UserWarning, match=r'-C -2 names the last 2 attributes'):
        assert read_mulan(meka, write(tmp_path, 'one.xml', '<labels><label name="L"/></labels>')).label_names == ('L',)


@pytest.mark.parametrize('fixture, xml, why', [
    ('bibtex_cut.arff', 'bibtex_cut.xml', r"named like them \('TAG_'\.\.\.\)"),
    ('cal500_cut.arff', None, r'declared \{0,1\} like them, unlike the features before them'),
])
def test_an_xml_omitting_the_first_label_is_warned_about(tmp_path, fixture, xml, why):
    """The first label sits where the last feature would, so the check for labels 'among or after' the XML's missed
    it and the label became a feature without a word. Declared like the labels and named with their prefix, or
    declared unlike the features before it, it is now named."""
    names = read_mulan(FIXTURES / fixture, FIXTURES / xml if xml else None).label_names
    for omitted in (1, 2):
        short = write(tmp_path, 'short.xml', '<labels>' + ''.join(f'<label name="{n}"/>' for n in names[omitted:]) +
                      '</labels>')
        shown = ', '.join(f"'{n}'" for n in names[:omitted])
        with pytest.warns(UserWarning) as caught:
            data = read_mulan(FIXTURES / fixture, short)
        messages = [str(w.message) for w in caught]
        assert any(re.search(rf'{omitted} attribute\(s\) just before the labels of .*short\.xml look like labels '
                             rf'\({why}\) but are not in it and are read as features: {shown}\. If they are labels, '
                             'add them to the XML', m) for m in messages), messages
        assert data.label_names == names[omitted:]
    full = write(tmp_path, 'full.xml', '<labels>' + ''.join(f'<label name="{n}"/>' for n in names) + '</labels>')
    with warnings.catch_warnings(record=True) as caught:  # the full list: no such warning
        warnings.simplefilter('always')
        read_mulan(FIXTURES / fixture, full)
    assert not [w for w in caught if 'just before' in str(w.message)]


def test_a_file_without_label_columns_says_how_to_name_them(tmp_path):
    path = write(tmp_path, 'features.arff', '@relation r\n@attribute a {0,1}\n@attribute b {0,1}\n@data\n0,1\n')
    with pytest.raises(ValueError) as e:
        read_mulan(path)
    assert str(e.value) == (
        f'{path}: no label columns were found: its @relation has no -C option and no label list was given. Name the '
        'labels with a MULAN XML file (data.xml_file, or xml_path), the number of label attributes at the end '
        '(data.num_labels, or num_labels), or "-C -L" in @relation (MEKA: the last L attributes)')


def test_a_file_to_predict_may_hold_anything_or_nothing_in_its_label_columns(tmp_path):
    """label_names (a trained run's): '?' and values outside the declared list are not read; a file without any of
    the label attributes is features only; one with some of them is still an error naming the missing ones."""
    header = '@relation r\n@attribute a numeric\n@attribute L1 {0,1}\n@attribute L2 {0,1}\n@data\n'
    odd = write(tmp_path, 'odd.arff', header + '1.5,?,?\n2.5,?,1\n')
    data = read_mulan(odd, label_names=['L2', 'L1'])
    assert data.label_names == ('L2', 'L1') and data.x.tolist() == [[1.5], [2.5]] and data.y.shape == (2, 2)
    bare = write(tmp_path, 'bare.arff', '@relation r\n@attribute a numeric\n@data\n1.5\n')
    data = read_mulan(bare, label_names=['L1', 'L2'])
    assert data.feature_names == ('a',) and data.y.shape == (1, 2)
    half = write(tmp_path, 'half.arff', '@relation r\n@attribute a numeric\n@attribute L1 {0,1}\n@data\n1.5,0\n')
    with pytest.raises(ValueError, match=r"no attribute for 1 of the run's labels: 'L2'"):
        read_mulan(half, label_names=['L1', 'L2'])


def test_real_medical_follows_its_xml():
    """MULAN's medical files (mulan/medical under the shared data, when a copy is there): 45 labels, the last 45
    attributes as medical.xml says, whatever the '-C 45' of @relation says."""
    folder = shared_data() / 'mulan' / 'medical'
    if not (folder / 'medical.xml').is_file():
        pytest.skip(f'MULAN medical not present: {folder}')
    for name in ('medical-train.arff', 'medical-test.arff'):
        with pytest.warns(UserWarning, match='following the XML'):
            data = read_mulan(folder / name, folder / 'medical.xml')
        assert data.x.shape[1] == 1449 and data.y.shape[1] == 45
        assert all(n.startswith('Class-') for n in data.label_names)


def test_infinite_or_missing_features_name_file_line_and_attribute(tmp_path):
    header = '@relation r\n@attribute a numeric\n@attribute b numeric\n@attribute L {0,1}\n@data\n'
    path = write(tmp_path, 'inf.arff', header + '1,2,0\n3,inf,1\n')
    with pytest.raises(ValueError, match=rf"{path}:7: feature 'b' is inf"):
        read_mulan(path, num_labels=1).check_finite(allow_missing=True)
    path = write(tmp_path, 'missing.arff', header + '1,2,0\n\n?,4,1\n')
    data = read_mulan(path, num_labels=1)
    data.check_finite(allow_missing=True)  # missing values are legal ARFF; imputing datasets accept them
    with pytest.raises(ValueError, match=rf"{path}:8: feature 'a' is missing"):
        data.check_finite(allow_missing=False)


def test_a_clus_file_read_as_mulan_names_the_setting_that_reads_it():
  """A Clus HMC file given to configs/custom.py without data.format=clus ended in 'no label columns were found' (or
  'use read_clus_hmc'), naming neither the format nor the setting; now one message naming both."""
  with pytest.raises(ValueError, match=r'spo_cut\.arff:\d+: a Clus hierarchical \(HMC\) file, its labels in the '
                                       r"attribute 'class': read it with data\.format=clus"):
    read_mulan(FIXTURES / 'spo_cut.arff')
  assert read_clus_hmc(FIXTURES / 'spo_cut.arff').num_examples > 0  # the same file, read as what it is
