"""
Swapping in a baseline
======================

Every ranker of :mod:`xplant.linear` follows the same scikit-learn
interface as :class:`~xplant.neural.PlantClassifier`, so a Pipeline or an
evaluation loop takes any of them unchanged. This script scores the
frequency prior, TF-IDF with a one-vs-rest linear SVM, and TF-IDF with
logistic regression on the same split with :func:`~xplant.metrics.xmtc_report`,
then saves and reloads one of them without pickle.
"""

# %%
# One split of the bundled CodiEsp data
# -------------------------------------
import tempfile
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from xplant.datasets import load_codiesp
from xplant.linear import (FrequencyPrior, load_linear, make_tfidf_logistic, make_tfidf_ovr,
                           predict_top_k, save_linear)
from xplant.metrics import xmtc_report
from xplant.model_selection import frequent_label_subset, iterative_train_test_split

data = load_codiesp(split="train", descriptions=False)
labels, rows = frequent_label_subset(data.Y, n_labels=20, n_docs=80, random_state=0)
texts = [data.texts[i] for i in rows]
Y = data.Y[rows][:, labels]
X_train, X_test, Y_train, Y_test = iterative_train_test_split(texts, Y, test_size=0.25,
                                                              random_state=0)

# %%
# The same loop for every model
# -----------------------------
# :func:`~xplant.linear.predict_top_k` ranks the codes of any fitted model or
# Pipeline (by ``decision_function`` or ``predict_proba``, whichever it has);
# the report takes the ranked columns.
models = {
    "frequency prior": FrequencyPrior(),
    "TF-IDF + SVM": make_tfidf_ovr(C=1.0),
    "TF-IDF + logistic": make_tfidf_logistic(C=10.0),
}
metrics = ("P@1", "P@5", "nDCG@5")
results = {}
for name, model in models.items():
    model.fit(X_train, Y_train)
    top, _ = predict_top_k(model, X_test, k=5)
    results[name] = report = xmtc_report(Y_test, y_top_k=top)
    print(f"{name:18s} P@1 {report['P@1']:.3f}  P@5 {report['P@5']:.3f}  nDCG@5 {report['nDCG@5']:.3f}")

# %%
# The three models side by side, on the 20 test documents.
fig, ax = plt.subplots(figsize=(6.4, 3.6))
width = 0.8 / len(results)
for i, (name, report) in enumerate(results.items()):
    ax.bar(np.arange(len(metrics)) + i * width, [report[m] for m in metrics], width, label=name)
ax.set_xticks(np.arange(len(metrics)) + width * (len(results) - 1) / 2, metrics)
ax.set_ylim(0, 1)
ax.set_ylabel("score on the test split")
ax.legend(loc="upper right", fontsize="small")
fig.tight_layout()

# %%
# Top codes, and a model saved without pickle
# -------------------------------------------
# :func:`~xplant.linear.save_linear` writes JSON and safetensors;
# :func:`~xplant.linear.load_linear` reads them back.
svm = models["TF-IDF + SVM"]
top, scores = predict_top_k(svm, X_test[:2], k=3)
print(data.label_names[labels][top])
with tempfile.TemporaryDirectory() as folder:
    save_linear(svm, Path(folder) / "svm")
    again = load_linear(Path(folder) / "svm")
    print("reloaded model ranks the same:", (predict_top_k(again, X_test[:2], k=3)[0] == top).all())
