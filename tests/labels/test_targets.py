"""The one target parser: a target means the same thing to every estimator (issue fault 1)."""

import numpy as np
import pytest
import scipy.sparse as sp

from xplant._labels import check_targets
from xplant.linear import FrequencyPrior, OneVsRestLinear
from xplant.relevance import MIGRelevance

TEXTS = ["fever cough", "leg pain", "fever leg", "cough pain"]


def test_nested_list_of_01_is_a_matrix_for_every_estimator():
    # Fault 1: [[1, 0], [0, 1]] was a matrix for MIGRelevance but two label
    # lists ({0, 1} and {0, 1}) for the neural estimators, which trained on [[1, 1], [1, 1]].
    Y = [[1, 0], [0, 1]]
    out, classes = check_targets(Y)
    np.testing.assert_array_equal(out.toarray(), [[1, 0], [0, 1]])
    np.testing.assert_array_equal(classes, [0, 1])
    rel = MIGRelevance().fit(TEXTS[:2], Y)
    np.testing.assert_array_equal(rel.label_frequency_, [1, 1])
    prior = FrequencyPrior().fit(np.zeros((2, 1)), Y)
    np.testing.assert_array_equal(prior.label_frequency_, [1, 1])
    pytest.importorskip("torch")
    from xplant.neural._common import check_targets as neural_targets
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
