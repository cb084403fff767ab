"""One label-matrix check for all of xplant: same result and same messages everywhere."""

import numpy as np
import pytest
import scipy.sparse as sp

from xplant._labels import check_indicator
from xplant.linear import check_label_matrix
from xplant.metrics._validation import check_binary
from xplant.model_selection._split import _label_matrix
from xplant.relevance._mig import binarize_labels

Y = np.array([[1, 0, 1, 0], [0, 0, 0, 1], [1, 1, 0, 0]])


@pytest.mark.parametrize("form", [Y, Y.astype(bool), Y.astype(np.float32), sp.csr_matrix(Y),
                                  sp.csc_matrix(Y), sp.coo_matrix(Y.astype(np.int8)),
                                  sp.lil_matrix(Y)])
def test_every_format_gives_the_same_canonical_csr(form):
    out = check_indicator(form)
    assert sp.isspmatrix_csr(out) and out.has_canonical_format
    assert out.indices.dtype == np.int64 and out.indptr.dtype == np.int64
    np.testing.assert_array_equal(out.toarray(), Y)
    np.testing.assert_array_equal(out.data, 1)


def test_stored_zeros_dropped_and_input_untouched():
    A = sp.csr_matrix((np.array([1, 0, 1]), np.array([2, 0, 1]), np.array([0, 2, 3])), shape=(2, 3))
    before = (A.data.copy(), A.indices.copy(), A.indptr.copy())
    out = check_indicator(A)
    assert out.nnz == 2 and out.has_canonical_format
    np.testing.assert_array_equal(out.toarray(), [[0, 0, 1], [0, 1, 0]])
    for a, b in zip(before, (A.data, A.indices, A.indptr)):
        np.testing.assert_array_equal(a, b)


CALLERS = {
    "metrics": lambda y, n: check_binary(y, "Y"),
    "linear": check_label_matrix,
    "relevance": binarize_labels,
    "splitters": lambda y, n: _label_matrix(y),
}
BAD = [
    (np.array([[2, 0], [0, 1]]), "Y must hold only 0 and 1"),
    (np.array([[np.nan, 1.0]]), "Y contains NaN or inf"),
    (np.array([1, 0, 1]), "Y must be a 2-D label indicator matrix"),
    (np.array([["a", "b"]]), "Y must hold numeric or boolean 0/1 indicators"),
]


@pytest.mark.parametrize("caller", sorted(CALLERS))
@pytest.mark.parametrize("bad, message", BAD)
def test_every_part_refuses_bad_labels_with_the_same_message(caller, bad, message):
    with pytest.raises(ValueError) as err:
        check_indicator(bad)
    assert str(err.value).startswith(message)
    with pytest.raises(ValueError) as err2:
        CALLERS[caller](bad, None)
    # the splitters call their argument y
    assert str(err2.value) == str(err.value).replace("Y ", "y ", 1) if caller == "splitters" \
        else str(err2.value) == str(err.value)


def test_neural_targets_use_the_same_check():
    pytest.importorskip("torch")
    from xplant.neural._inputs import check_targets
    out, classes = check_targets([["b"], ["a", "b"]], 2)
    assert out.dtype == np.float32 and list(classes) == ["a", "b"]
    np.testing.assert_array_equal(out.toarray(), [[0, 1], [1, 1]])
    for bad, _ in BAD:
        if bad.ndim == 1:      # estimators read a 1-D binary y as one label column
            continue
        with pytest.raises(ValueError) as err:
            check_indicator(bad)
        with pytest.raises(ValueError) as err2:
            check_targets(bad, None)
        assert str(err2.value) == str(err.value)
    with pytest.raises(ValueError, match="X and Y must have the same number of documents"):
        check_targets(Y, 5)
