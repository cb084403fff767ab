"""scikit-learn's common checks over every light estimator (API.md, "scikit-learn conformance").

The multi-label classifiers declare multi-label tags (``multi_label=True``,
``multi_class=False``) and read a 1-D binary y as one label column
(``docs/reliability.md``, "One reading of Y"). What scikit-learn's checks
assume and XMTC cannot give is listed below, each with its reason. The
neural estimators take texts, so the checks can feed them almost nothing:
their own conformance tests are in ``tests/neural/test_estimator_contract.py``.
``DescriptionRanker`` and ``DescriptionFusion`` need label descriptions as
fit parameters: the checks that need no fit run in
``tests/linear/test_descriptions.py``.
"""

import importlib

import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks

from xplant.linear import FrequencyPrior, NapkinXCPLT, OmikujiTrees, OneVsRestLinear
from xplant.relevance import MIGRelevance

# predict returns a sparse CSR (n_samples, n_labels) 0/1 matrix: a dense one
# does not fit an XMTC label space, and the checks compare dense 1-D arrays.
SPARSE_PREDICT = ("predict returns a sparse CSR (n_samples, n_labels) matrix; the check expects "
                  "a dense NumPy y")
CLASSIFIER = {
    "check_fit_score_takes_y": SPARSE_PREDICT + " (ClassifierMixin.score)",
    "check_pipeline_consistency": SPARSE_PREDICT + " (score)",
    "check_estimator_sparse_array": SPARSE_PREDICT,
    "check_estimator_sparse_matrix": SPARSE_PREDICT,
    "check_classifier_data_not_an_array": SPARSE_PREDICT,
    "check_classifiers_one_label": SPARSE_PREDICT,
    "check_classifier_multioutput": SPARSE_PREDICT,
    "check_classifiers_train": SPARSE_PREDICT,
    "check_classifiers_multilabel_representation_invariance": SPARSE_PREDICT,
    "check_classifiers_multilabel_output_format_predict": SPARSE_PREDICT,
    "check_supervised_y_2d": SPARSE_PREDICT,
    "check_classifiers_classes": "a 1-D y of strings is refused: it is nearly always joined label "
                                 "strings ('I10|J18'); give label lists instead",
}
NATIVE_TREES = {
    "check_estimators_pickle": "the native model (napkinXC C++, Omikuji Rust) cannot be pickled; "
                               "save_linear stores it in the library's own format",
    "check_fit_idempotent": "two fits of the native library build different trees",
}
# transform returns a TokenCorpus: ragged token-id sequences, not an array.
CORPUS = "transform returns a TokenCorpus (ragged token-id sequences), not an array"
RELEVANCE = {
    "check_pipeline_consistency": CORPUS,
    "check_estimators_pickle": CORPUS,
    "check_transformer_general": CORPUS,
    "check_methods_sample_order_invariance": CORPUS,
    "check_methods_subset_invariance": CORPUS,
    "check_fit_score_takes_y": "partial_fit after fit is refused: fit keeps no co-occurrence counts",
    "check_n_features_in_after_fitting": "X is texts (n_features_in_ is not defined for them)",
    "check_n_features_in": "X is texts (n_features_in_ is not defined for them)",
    "check_transformer_data_not_an_array": "X is texts, token lists or a count matrix; other "
                                           "array-likes are refused",
    "check_fit2d_1sample": "an all-zero y is refused (nothing to learn), with xplant's message",
}

ESTIMATORS = [MIGRelevance(), OneVsRestLinear(), FrequencyPrior()]
if importlib.util.find_spec("napkinxc") is not None:
    ESTIMATORS.append(NapkinXCPLT())
if importlib.util.find_spec("omikuji") is not None:
    ESTIMATORS.append(OmikujiTrees())


def expected_failures(estimator):
    if isinstance(estimator, MIGRelevance):
        return RELEVANCE
    if isinstance(estimator, (NapkinXCPLT, OmikujiTrees)):
        return {**CLASSIFIER, **NATIVE_TREES}
    return CLASSIFIER


@parametrize_with_checks(ESTIMATORS, expected_failed_checks=expected_failures)
@pytest.mark.filterwarnings("ignore")
def test_sklearn_common_checks(estimator, check):
    check(estimator)


def test_the_tree_wrappers_are_checked_when_installed():
    names = {type(e).__name__ for e in ESTIMATORS}
    for module, cls in (("napkinxc", "NapkinXCPLT"), ("omikuji", "OmikujiTrees")):
        assert (cls in names) == (importlib.util.find_spec(module) is not None)


def test_multi_label_tags():
    from sklearn.utils import get_tags
    for est in (OneVsRestLinear(), FrequencyPrior()):
        tags = get_tags(est)
        assert tags.classifier_tags.multi_label and not tags.classifier_tags.multi_class
