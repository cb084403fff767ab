"""The one target parser: a target means the same thing to every estimator."""

import numpy as np
import pytest
import scipy.sparse as sp

from xplant._labels import check_targets
from xplant.linear import FrequencyPrior, OneVsRestLinear
from xplant.relevance import MIGRelevance

TEXTS = ["fever cough", "leg pain", "fever leg", "cough pain"]


def test_nested_list_of_01_is_a_matrix_for_every_estimator():
    # [[1, 0], [0, 1]] is a 0/1 matrix for every estimator; read as two label lists
    # ({0, 1} and {0, 1}), an estimator would train on [[1, 1], [1, 1]] instead.
    Y = [[1, 0], [0, 1]]
    out, classes = check_targets(Y)
    np.testing.assert_array_equal(out.toarray(), [[1, 0], [0, 1]])
    np.testing.assert_array_equal(classes, [0, 1])
    rel = MIGRelevance().fit(TEXTS[:2], Y)
    np.testing.assert_array_equal(rel.label_frequency_, [1, 1])
    prior = FrequencyPrior().fit(np.zeros((2, 1)), Y)
    np.testing.assert_array_equal(prior.label_frequency_, [1, 1])
    pytest.importorskip("torch")
    from xplant.neural._inputs import check_targets as neural_targets
    out, classes = neural_targets(Y, 2)
    np.testing.assert_array_equal(out.toarray(), [[1, 0], [0, 1]])
    assert out.dtype == np.float32


@pytest.mark.parametrize("Y, dense, names", [
    ([{"I10"}, {"J18", "I10"}], [[1, 0], [1, 1]], ["I10", "J18"]),          # sets
    ([["I10"], ["J18", "I10"]], [[1, 0], [1, 1]], ["I10", "J18"]),          # rows of strings
    ([["b", "a"], ["a", "c"]], [[1, 1, 0], [1, 0, 1]], ["a", "b", "c"]),    # rectangular strings
    ([[3], [1, 3]], [[0, 1], [1, 1]], [1, 3]),                             # ragged ints: by value
    ([{0}, {1}, {0, 1}], [[1, 0], [0, 1], [1, 1]], [0, 1]),                # sets of 0/1
    ([1, 0, 1], [[1], [0], [1]], [0]),                                     # 1-D binary y: one column
    (np.array([True, False]), [[1], [0]], [0]),
])
def test_label_lists_and_columns(Y, dense, names):
    out, classes = check_targets(Y)
    np.testing.assert_array_equal(out.toarray(), dense)
    np.testing.assert_array_equal(classes, names)


def test_label_names_order_the_columns_of_label_lists():
    out, classes = check_targets([{"J18"}, {"I10", "J18"}], label_names=["J18", "I10", "Z00"])
    np.testing.assert_array_equal(out.toarray(), [[1, 0, 0], [1, 1, 0]])
    np.testing.assert_array_equal(classes, ["J18", "I10", "Z00"])
    with pytest.raises(ValueError, match=r"not in label_names: \['X99'\]"):
        check_targets([{"X99"}], label_names=["J18"])
    with pytest.raises(ValueError, match="label_names has 1 names but Y has 2 columns"):
        check_targets(np.eye(2), label_names=["a"])
    with pytest.raises(ValueError, match=r"'a' \(column 0\) and 'a' \(column 1\) are the same"):
        check_targets(np.eye(2), label_names=["a", "a"])
    with pytest.raises(ValueError, match="distinct names"):
        check_targets(np.eye(2), label_names=[7, 7])


@pytest.mark.parametrize("Y, message", [
    ([[3, 1], [2, 3]], "rectangular but holds values other than 0 and 1"),
    ([[0, 2], [1, 0]], "MultiLabelBinarizer"),
    (["I10", "J18"], "list of strings"),
    ([["a", 1], ["b"]], "mixes string and non-string"),
    ([[1, 0], {0}], "mixes rows of different kinds"),
    ([[0.5], [1, 2]], "not labels"),
])
def test_ambiguous_targets_are_refused_naming_multilabelbinarizer(Y, message):
    with pytest.raises(ValueError, match=message) as err:
        check_targets(Y)
    assert "MultiLabelBinarizer" in str(err.value) or "string" in str(err.value)


@pytest.mark.parametrize("Y", [np.zeros((3, 2)), [[0, 0], [0, 0], [0, 0]], [set(), set(), set()],
                               sp.csr_matrix((3, 2))])
def test_all_zero_target_is_the_same_error_everywhere(Y):
    msgs = set()
    for fit in (lambda: MIGRelevance().fit(TEXTS[:3], Y),
                lambda: FrequencyPrior().fit(np.zeros((3, 1)), Y),
                lambda: OneVsRestLinear().fit(sp.csr_matrix(np.eye(3)), Y)):
        with pytest.raises(ValueError) as err:
            fit()
        msgs.add(str(err.value))
    assert len(msgs) == 1
    assert ("no positive entry" in msgs.pop()) or isinstance(Y, list)


def test_metrics_take_matrices_only():
    from xplant.metrics import precision_at_k
    with pytest.raises(ValueError, match="MultiLabelBinarizer"):
        precision_at_k([{"a"}, {"b"}], np.eye(2), k=1)
    with pytest.raises(ValueError, match="MultiLabelBinarizer"):
        precision_at_k([[0], [1, 0]], np.eye(2), k=1)


def test_one_dimensional_y_binary_multiclass_and_none():
    out, _ = check_targets(np.array([1, 2, 2]))          # binary in scikit-learn's sense
    np.testing.assert_array_equal(out.toarray(), [[0], [1], [1]])
    with pytest.raises(ValueError, match="Only binary classification is supported"):
        check_targets(np.array([0, 1, 2]))
    with pytest.raises(ValueError, match="Unknown label type"):
        check_targets(np.array([0.5, 1.5, 2.5, 0.1]))
    with pytest.raises(ValueError, match="requires y to be passed"):
        check_targets(None)
    # MIGRelevance scores tokens for any labelling: a multi-class y is one column per class
    rel = MIGRelevance().fit(TEXTS[:3], np.array([3, 5, 7]))
    np.testing.assert_array_equal(rel.classes_, [3, 5, 7])
    np.testing.assert_array_equal(rel.label_frequency_, [1, 1, 1])


# ---------------------------------------------------------------- what predict returns


@pytest.mark.parametrize("Y, kind, dtype", [
    (np.array([[1, 0], [0, 1]]), "dense", "int64"),
    (np.array([[True, False], [False, True]]), "dense", "bool"),
    ([[1, 0], [0, 1]], "dense", "int64"),                       # a rectangular list of 0/1 rows
    ([np.array([1, 0]), np.array([0, 1])], "dense", "int64"),   # a list of rows
    (np.array([[1.0, 0.0], [0.0, 1.0]], dtype=np.float32), "dense", "float32"),
    (sp.csr_matrix([[1, 0], [0, 1]]), "sparse", None),
    ([{"a"}, {"b"}], "sparse", None),                           # label lists
    ([["a"], ["a", "b"]], "sparse", None),
])
def test_prediction_form_follows_the_fitted_target(Y, kind, dtype):
    from xplant._labels import as_prediction_form, prediction_form
    form = prediction_form(Y)
    assert form["kind"] == kind and form.get("dtype") == dtype
    out = as_prediction_form(sp.csr_matrix([[0, 1], [1, 1]]), form)
    if kind == "sparse":
        assert sp.isspmatrix_csr(out) and out.dtype == np.int64
        out = out.toarray()
    else:
        assert type(out) is np.ndarray and out.dtype == np.dtype(dtype)
    assert out.tolist() == [[0, 1], [1, 1]]


def test_one_label_column_answers_with_ys_own_values():
    from xplant._labels import as_prediction_form, as_score_form, prediction_form
    P = sp.csr_matrix([[1], [0], [1]])
    for y, want in ((np.array([0, 1, 1]), [1, 0, 1]), ([0, 1, 1], [1, 0, 1]),
                    (np.array([-1, 1, -1]), [1, -1, 1]), (np.array([2.0, 5.0]), [5.0, 2.0, 5.0]),
                    (np.array([True, False]), [True, False, True])):
        form = prediction_form(y)
        out = as_prediction_form(P, form)
        assert out.shape == (3,) and out.dtype == np.asarray(y).dtype and out.tolist() == want
    # scores: scikit-learn's binary shapes
    S = np.array([[0.2], [0.9], [0.5]])
    form = prediction_form(np.array([0, 1]))
    assert as_score_form(S, form).tolist() == [0.2, 0.9, 0.5]
    np.testing.assert_allclose(as_score_form(S, form, proba=True), [[0.8, 0.2], [0.1, 0.9],
                                                                    [0.5, 0.5]])
    # every other form keeps the (n, L) scores; None (a model saved before the rule) is CSR
    assert as_score_form(S, {"kind": "dense", "dtype": "int64"}) is S
    assert sp.isspmatrix_csr(as_prediction_form(P, None))


def test_a_label_space_too_large_for_a_dense_array_stays_sparse():
    # a million labels come as a sparse matrix or label lists: predict answers in CSR
    n_labels = 10**6
    Y = sp.csr_matrix((np.ones(3, dtype=np.int64), [7, 7, 999_999], [0, 1, 2, 3]),
                      shape=(3, n_labels))
    out = FrequencyPrior().fit(["a", "b", "c"], Y).predict(["q", "r"])
    assert sp.isspmatrix_csr(out) and out.shape == (2, n_labels)
    assert out.indices.tolist() == [7, 7]                    # k_ = 1: the most frequent label
    lists = FrequencyPrior().fit(["a", "b", "c"], [{"x"}, {"x"}, {"y"}]).predict(["q"])
    assert sp.isspmatrix_csr(lists) and lists.toarray().tolist() == [[1, 0]]
