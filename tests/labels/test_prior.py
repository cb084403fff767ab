"""label_prior: the one smoothed label prior (initial label bias, logit adjustment)."""

import numpy as np
import pytest
import scipy.sparse as sp

from xplant._labels import label_prior
from xplant.metrics import label_frequency


def test_by_hand_and_from_a_matrix():
    Y = sp.csr_matrix(np.array([[1, 0, 1], [1, 0, 0], [1, 0, 0], [0, 0, 1]]))
    # f = (3, 0, 2), N = 4: (f + 1/2) / 5
    np.testing.assert_allclose(label_prior(label_frequency(Y), 4), [0.7, 0.1, 0.5])
    p = label_prior([0, 10], 10)
    assert 0 < p[0] < p[1] < 1          # never 0 or 1, so log p and the log-odds are finite


@pytest.mark.parametrize("n, match", [(0, "positive integer"), (True, "positive integer"),
                                      (2.0, "positive integer"), (1, "n_documents is 1")])
def test_bad_counts_say_what_to_give(n, match):
    with pytest.raises(ValueError, match=match):
        label_prior(np.array([2, 0]), n)


def test_negative_counts_are_refused():
    with pytest.raises(ValueError, match="non-negative"):
        label_prior(np.array([-1, 2]), 5)
