"""
A tour: MIG, PLANT and the XMTC report in one Pipeline
======================================================

:class:`~xplant.relevance.MIGRelevance` tokenizes the documents and scores
every token–label pair by mutual information gain; it hands the token corpus
to :class:`~xplant.neural.PlantClassifier`, which plants the label attention
on the top MIG tokens (Stage 1) and trains the classifier (Stage 2). Both
are scikit-learn estimators, so they chain in a :class:`~sklearn.pipeline.Pipeline`.
"""

# %%
# A small corpus of the bundled CodiEsp-D data
# --------------------------------------------
# :func:`~xplant.model_selection.frequent_label_subset` keeps the most
# frequent codes and a seeded sample of the training documents that carry
# one; the test documents keep the same columns.
import matplotlib.pyplot as plt
from sklearn.pipeline import Pipeline

from xplant import AttentionPlanter, MIGRelevance, PlantClassifier
from xplant.datasets import load_codiesp
from xplant.metrics import xmtc_report
from xplant.model_selection import frequent_label_subset

train = load_codiesp(split="train", descriptions=False)
test = load_codiesp(split="test", descriptions=False)
labels, rows = frequent_label_subset(train.Y, n_labels=20, n_docs=40, random_state=0)
texts = [train.texts[i] for i in rows]
Y = train.Y[rows][:, labels]
test_texts, Y_test = test.texts[:20], test.Y[:20][:, labels]
names = train.label_names[labels]
print(f"{len(texts)} training documents, {Y.shape[1]} codes, {Y.nnz} positives")

# %%
# Fit the Pipeline
# ----------------
# One epoch of each stage and a fixed Stage 1 weight keep this example short;
# the defaults (``max_epochs=30``, ``stage1_weight="dev"``) are what a real
# fit uses. ``label_names`` is saved with the model, so predictions come in
# codes.
pipe = Pipeline([
    ("mig", MIGRelevance(top_k=20)),
    ("clf", PlantClassifier(backbone="cnn", planter=AttentionPlanter(max_epochs=1),
                            stage1_weight=0.1, max_epochs=1, verbose=0)),
])
pipe.fit(texts, Y, clf__label_names=names)

# %%
# Score the test documents
# ------------------------
# ``predict_proba`` gives one score per code; :func:`~xplant.metrics.xmtc_report`
# computes the ranking and classification metrics of every results table.
scores = pipe.predict_proba(test_texts)
report = xmtc_report(Y_test, scores)
print({k: round(v, 3) for k, v in report.items() if isinstance(v, float)})

# %%
# The ranking metrics of the report, after one epoch of each stage.
shown = [m for m in ("P@1", "P@3", "P@5", "nDCG@3", "nDCG@5", "MAP") if m in report]
fig, ax = plt.subplots(figsize=(6.4, 3.2))
ax.bar(shown, [report[m] for m in shown])
ax.set_ylim(0, 1)
ax.set_ylabel("score on 20 test documents")
fig.tight_layout()

# %%
# The top codes of a few documents
# --------------------------------
# ``predict_top_k`` ranks the codes of each document; the classifier reads
# the token corpus that the MIG step hands it. After this one-epoch fit the
# ranking is close to the codes' frequency; the evidence example shows the
# spans behind a code.
top, top_scores = pipe[-1].predict_top_k(pipe[0].transform(test_texts[:3]), k=3)
for doc, (idx, sc) in enumerate(zip(top, top_scores)):
    predicted = ", ".join(f"{names[i]} ({p:.2f})" for i, p in zip(idx, sc))
    print(f"document {doc}: predicted {predicted}; gold {', '.join(names[Y_test[doc].indices])}")
