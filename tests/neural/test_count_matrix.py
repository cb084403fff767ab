"""The neural estimators' numeric input: a document-token count matrix read as bags of ids."""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.feature_extraction.text import CountVectorizer

from xplant.neural import AttentionPlanter, PlantClassifier
from xplant.relevance import MIGRelevance


@pytest.fixture(scope="module")
def counts(make_corpus):
    texts, Y = make_corpus(n_docs=40)
    X = CountVectorizer(token_pattern=r"\w+").fit_transform(texts)     # CSR int64 counts
    return X, Y


def _clf(tiny, **kw):
    return PlantClassifier(**{**tiny, "plant": False, "max_epochs": 2,
                              "validation_fraction": None, **kw})


def test_a_count_matrix_is_read_as_migrelevance_reads_it(tiny, counts):
    X, Y = counts
    on_matrix = _clf(tiny).fit(X, Y)
    # the same documents through the token corpus MIGRelevance makes of the matrix
    on_corpus = _clf(tiny).fit(MIGRelevance().fit_transform(X, Y), Y)
    np.testing.assert_array_equal(on_matrix.predict_proba(X), on_corpus.predict_proba(X))
    assert on_matrix.n_features_in_ == X.shape[1] and not hasattr(on_corpus, "n_features_in_")
    # a bag of ids: counts and their order do not matter, only the non-zero columns
    doubled = X.copy()
    doubled.data *= 2
    np.testing.assert_array_equal(on_matrix.predict_proba(doubled), on_matrix.predict_proba(X))
    # dense and sparse are one input
    dense = _clf(tiny).fit(X.toarray(), Y)
    np.testing.assert_array_equal(dense.predict_proba(X.toarray()), on_matrix.predict_proba(X))


def test_predict_answers_in_the_form_of_the_fitted_target(tiny, counts):
    X, Y = counts
    sparse = _clf(tiny, decision="threshold").fit(X, Y)
    dense = _clf(tiny, decision="threshold").fit(X, Y.toarray())
    a, b = sparse.predict(X[:5]), dense.predict(X[:5])
    assert sp.isspmatrix_csr(a) and type(b) is np.ndarray and b.dtype == Y.dtype
    np.testing.assert_array_equal(a.toarray(), b)
    # one label column (a 1-D y): y's own values, scikit-learn's binary score shapes
    y = np.where(Y[:, 0].toarray().ravel() > 0, 1, -1)
    one = _clf(tiny, decision="threshold").fit(X, y)
    pred = one.predict(X[:5])
    assert pred.shape == (5,) and set(pred.tolist()) <= {-1, 1}
    proba = one.predict_proba(X[:5])
    assert proba.shape == (5, 2)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-6)
    assert one.decision_function(X[:5]).shape == (5,)


def test_count_matrix_errors(tiny, counts, tmp_path):
    X, Y = counts
    clf = _clf(tiny, max_epochs=1).fit(X, Y)
    with pytest.raises(ValueError, match="fitted on a matrix has no tokenizer"):
        clf.save(tmp_path / "m")
    assert not (tmp_path / "m").exists()
    with pytest.raises(ValueError, match="X has 3 features, but MIGRelevance is expecting"):
        clf.predict_proba(X[:, :3])
    with pytest.raises(ValueError, match="fitted on a matrix"):
        clf.predict_proba(["sig1 w2"])
    with pytest.raises(ValueError, match="Negative values"):
        _clf(tiny).fit(-X.toarray(), Y)
    with pytest.raises(ValueError, match="word backbone"):
        _clf(tiny, backbone="hf").fit(X, Y)


def test_planter_plants_one_query_per_class_of_a_multiclass_y(planter_params, counts):
    X, _ = counts
    y = np.arange(X.shape[0]) % 3
    planter = AttentionPlanter(**planter_params, max_epochs=1, validation_fraction=None).fit(X, y)
    assert planter.classes_.tolist() == [0, 1, 2] and planter.n_labels_ == 3
    # Stage 1 predicts no labels; neither estimator offers skorch's tensor partial_fit
    assert not hasattr(planter, "predict") and not hasattr(planter, "predict_proba")
    assert not hasattr(PlantClassifier(), "partial_fit")
    with pytest.raises(ValueError, match="Only binary classification"):
        PlantClassifier(plant=False).fit(X, y)
