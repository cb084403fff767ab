"""
Evidence spans, scored against CodiEsp-X
========================================

An evidence span is a piece of the raw document that supports a code.
:func:`~xplant.evidence.mig_highlighter` marks, for each code, the words with
the highest mutual information gain (MIG) with it, merged into character
spans by :func:`~xplant.evidence.merge_spans`; PLANT's
:meth:`~xplant.neural.PlantClassifier.explain` returns spans of the same form
from its label-wise attention. :func:`~xplant.evidence.score_evidence`
compares either with the evidence that CodiEsp-X annotators marked in the
Spanish text. The measured evidence figures are on the benchmark pages.
"""

# %%
# Spanish text: the gold evidence offsets refer to it
# ---------------------------------------------------
import matplotlib.pyplot as plt

from xplant import MIGRelevance
from xplant.datasets import load_codiesp, load_codiesp_evidence
from xplant.evidence import mig_highlighter, score_evidence
from xplant.model_selection import frequent_label_subset

train = load_codiesp(split="train", language="es", descriptions=False)
labels, rows = frequent_label_subset(train.Y, n_labels=10, n_docs=60, random_state=0)
texts = [train.texts[i] for i in rows]
Y = train.Y[rows][:, labels]
codes = list(train.label_names[labels])

# %%
# MIG of every token with every code
# ----------------------------------
# ``relevance_`` holds each code's top-20 tokens by MIG (in bits).
mig = MIGRelevance(top_k=20).fit(texts, Y)
vocabulary = {i: t for t, i in mig.vocabulary_.items()}
for row in range(3):
    top = mig.relevance_[row].toarray().ravel().argsort()[::-1][:5]
    print(codes[row], [vocabulary[i] for i in top])

# %%
# The ten tokens of the first code with the highest MIG: the words a span
# of that code is made of.
values = mig.relevance_[0].toarray().ravel()
top = values.argsort()[::-1][:10]
fig, ax = plt.subplots(figsize=(6.4, 3.6))
ax.barh([vocabulary[i] for i in top][::-1], values[top][::-1])
ax.set_xlabel("MIG with the code (bits)")
ax.set_title(f"top tokens of {codes[0]}")
fig.tight_layout()

# %%
# Spans for each gold code of the first documents
# -----------------------------------------------
# ``tokenize`` gives token ids and character offsets; each span is
# ``text[start:end]``, ranked by its weight (here the MIG it covers).
n = 10
ids, offsets = mig.tokenize(texts[:n], return_offsets=True)
gold_codes = [[codes[j] for j in Y[i].indices] for i in range(n)]
spans = mig_highlighter(texts[:n], offsets, ids, mig.relevance_, gold_codes, codes, top_spans=2)
for item in spans[0]:
    print(item["code"], [(s["start"], s["end"], s["text"]) for s in item["spans"]])

# %%
# Score the spans against the annotators' evidence
# ------------------------------------------------
# A span matches a gold reference of its (document, code) that it contains
# with 10 characters of slack; ``hit_rate`` is the share of pairs with a match.
# These are the documents MIG was fitted on, so the figures are optimistic.
doc_ids = [train.ids[i] for i in rows[:n]]
predicted = [{"id": doc_id, "code": item["code"], "spans": item["spans"]}
             for doc_id, items in zip(doc_ids, spans) for item in items]
gold = [g for g in load_codiesp_evidence("train") if g["id"] in set(doc_ids) and g["code"] in codes]
scores = score_evidence(predicted, gold)
print({k: round(scores[k], 3) for k in ("precision", "recall", "f1", "hit_rate")},
      f"over {scores['n_pairs']} (document, code) pairs")
