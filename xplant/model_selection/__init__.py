"""Multi-label splitters and label-frequency groups.

``IterativeStratifiedKFold`` and ``iterative_train_test_split`` keep every
label's positives balanced across parts (Sechidis et al. 2011);
``label_frequency_buckets``, ``few_shot_labels``, ``zero_shot_labels`` and
``frequent_labels`` group labels by training frequency (Chalkidis et al.
2019); ``nested_subsamples`` draws nested low-data training sets;
``frequent_label_subset`` a smaller corpus of a chosen shape (most
frequent labels, a seeded sample of documents); ``choose_on_dev`` the one
rule of every choice made on a dev split, ``dev_usability`` whether a dev
split can guide one; ``RefitOnDev`` and
``refit_params`` the refit on train + dev with those choices fixed.
"""

from .._choice import (CRITERIA, LOW_DEV_COVERAGE, DevChoice, DevUsability, NoDevDataWarning,
                       choose_on_dev, dev_usability)
from ._refit import DEFAULT_REFIT_EPOCHS, REFIT_EPOCHS, RefitOnDev, refit_params
from ._labels import (
    few_shot_labels,
    frequent_labels,
    label_frequency,
    label_frequency_buckets,
    zero_shot_labels,
)
from ._split import IterativeStratifiedKFold, iterative_train_test_split
from ._subsample import frequent_label_subset, nested_subsamples

__all__ = [
    "CRITERIA",
    "DEFAULT_REFIT_EPOCHS",
    "DevChoice",
    "IterativeStratifiedKFold",
    "NoDevDataWarning",
    "DevUsability",
    "LOW_DEV_COVERAGE",
    "dev_usability",
    "REFIT_EPOCHS",
    "RefitOnDev",
    "choose_on_dev",
    "few_shot_labels",
    "frequent_label_subset",
    "frequent_labels",
    "iterative_train_test_split",
    "label_frequency",
    "label_frequency_buckets",
    "nested_subsamples",
    "refit_params",
    "zero_shot_labels",
]
