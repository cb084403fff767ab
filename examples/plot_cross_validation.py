"""
Cross-validation with XMTC scorers
==================================

The scorers of :mod:`xplant.metrics` plug the ranking metrics (P@k, nDCG@k,
MAP, ...) into scikit-learn's model selection, and
:class:`~xplant.model_selection.IterativeStratifiedKFold` splits a
multi-label corpus so that every label's positives are spread evenly over
the folds. The label matrix is a 0/1 indicator matrix ``Y``.
"""

# %%
# Data: a few dozen bundled CodiEsp documents and their frequent codes
# ---------------------------------------------------------------------
import matplotlib.pyplot as plt
import numpy as np
from sklearn.model_selection import cross_validate

from xplant.datasets import load_codiesp
from xplant.linear import make_tfidf_ovr
from xplant.metrics import get_scorer, make_xmtc_scorer
from xplant.model_selection import IterativeStratifiedKFold, frequent_label_subset

train = load_codiesp(split="train", descriptions=False)
labels, rows = frequent_label_subset(train.Y, n_labels=15, n_docs=60, random_state=0)
texts = [train.texts[i] for i in rows]
# scikit-learn's cross_validate takes a dense indicator matrix: documents x codes, {0, 1}
Y = train.Y[rows][:, labels].toarray()
print(Y.shape, Y.dtype)

# %%
# Named scorers and a scorer of your own
# --------------------------------------
# ``get_scorer("map")`` is a named scorer; ``make_xmtc_scorer`` builds one for
# any metric and cutoff. Scorers rank by ``decision_function`` (or
# ``predict_proba``), so every estimator with one works, here TF-IDF with a
# one-vs-rest linear SVM.
scoring = {"map": get_scorer("map"), "p@1": get_scorer("precision_at_1"),
           "ndcg@3": make_xmtc_scorer("ndcg", k=3)}
cv = IterativeStratifiedKFold(n_splits=3, shuffle=True, random_state=0)
result = cross_validate(make_tfidf_ovr(C=1.0), texts, Y, cv=cv, scoring=scoring)
for name in scoring:
    values = result[f"test_{name}"]
    print(f"{name:7s} " + "  ".join(f"{v:.3f}" for v in values) + f"   mean {values.mean():.3f}")

# %%
# The folds keep the labels balanced
# ----------------------------------
# Positives of each code per test fold: iterative stratification
# (Sechidis et al. 2011) spreads every code's positives over the folds, so
# each fold's test part has some of each.
positives = []
for k, (_, test_idx) in enumerate(cv.split(texts, Y)):
    positives.append(Y[test_idx].sum(axis=0))
    print(f"fold {k}: {len(test_idx)} documents, positives per code "
          f"{positives[-1].tolist()}")
print(f"total  : {Y.sum(axis=0).tolist()}")

# %%
# Each code's positives, stacked by the fold that tests them: every code has
# positives in every fold's test part.
fig, ax = plt.subplots(figsize=(6.4, 3.6))
bottom = np.zeros(Y.shape[1])
for k, counts in enumerate(positives):
    ax.bar(np.arange(Y.shape[1]), counts, bottom=bottom, label=f"fold {k}")
    bottom += counts
ax.set_xticks(np.arange(Y.shape[1]), train.label_names[labels], rotation=60, ha="right",
              fontsize="small")
ax.set_ylabel("positive documents")
ax.legend(fontsize="small")
fig.tight_layout()
