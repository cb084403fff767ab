"""Stage 1 planted from gold evidence spans where a (document, label) pair has them, MIG elsewhere."""

import numpy as np
import pytest
import scipy.sparse as sp

torch = pytest.importorskip("torch")

from xplant.neural import AttentionPlanter, PlantClassifier  # noqa: E402
from xplant.neural.planting._items import Stage1Dataset  # noqa: E402
from xplant.neural._inputs import evidence_targets  # noqa: E402
from xplant.relevance import MIGRelevance  # noqa: E402


def test_evidence_targets_are_the_tokens_inside_the_spans_by_idf():
    texts = ["dolor de cabeza y fractura de cadera", "fractura de cadera", "dolor de cabeza"]
    Y = [[1, 1], [0, 1], [1, 0]]
    rel = MIGRelevance().fit(texts, Y)
    v = rel.vocabulary_
    # the second mention is discontinuous: "fractura" and "cadera", not "de" between them
    ev = [[("R51", [(0, 15)]), ("S72", [(18, 26), (30, 36)])], None, []]
    got = evidence_targets(rel, texts, ev, {"R51": 0, "S72": 1})
    assert got[1] is None and got[2] is None
    labels, tokens, grades = got[0]
    pairs = dict(zip(zip(labels.tolist(), tokens.tolist()), grades.tolist()))
    assert set(pairs) == {(0, v["dolor"]), (0, v["de"]), (0, v["cabeza"]),
                          (1, v["fractura"]), (1, v["cadera"])}
    n, df = 3, rel.document_frequency_
    # smooth idf: "de" is in all 3 documents, "cadera" in 2
    assert pairs[0, v["de"]] == pytest.approx(np.log(4 / 4) + 1)
    assert pairs[1, v["cadera"]] == pytest.approx(np.log((1 + n) / (1 + df[v["cadera"]])) + 1)
    # a span that only touches a token's first character still takes the token
    (_, t, _), = evidence_targets(rel, ["fractura"], [[("S72", [(0, 1)])]], {"S72": 1})
    assert t.tolist() == [v["fractura"]]


def test_an_items_span_tokens_rank_above_the_labels_mig_tokens_by_hand():
    # tokens 1..4 in the document; label 0's MIG targets are tokens 1 (0.5) and 2 (0.3)
    R = sp.csr_matrix(np.array([[0, 0.5, 0.3, 0, 0], [0, 0, 0, 0, 0]]))
    doc = np.array([4, 1, 2, 3, 1])
    plain = Stage1Dataset([doc], [np.array([0, 1])], R, deterministic=True, n_negatives=10)
    (l0, pos0, rel0), = plain.sample(0)
    assert l0 == 0 and rel0.tolist() == [0.5, 0.3, 0, 0]       # label 1 meets no token
    # evidence: label 0's span holds token 3 (grade 2.0); label 1's token 4 (grade 1.0)
    ev = [(np.array([0, 1]), np.array([3, 4]), np.array([2.0, 1.0]))]
    with_ev = Stage1Dataset([doc], [np.array([0, 1])], R, deterministic=True, n_negatives=10,
                            evidence=ev)
    items = with_ev.sample(0)
    (l0, pos0, rel0), (l1, pos1, rel1) = items
    # label 0: token 3 (first at position 3) at 2.0 + the row's top MIG 0.5, then MIG's order
    assert l0 == 0 and pos0[:3].tolist() == [3, 1, 2] and rel0[:3].tolist() == [2.5, 0.5, 0.3]
    # label 1 had no MIG token in the document: it is a candidate now, on its span token
    assert l1 == 1 and pos1[0] == 0 and rel1.tolist()[0] == 1.0 and rel1[1:].sum() == 0
    # a document without evidence keeps exactly its MIG items
    none = Stage1Dataset([doc], [np.array([0, 1])], R, deterministic=True, n_negatives=10,
                         evidence=[None])
    (m0, q0, r0), = none.sample(0)
    assert (m0, q0.tolist(), r0.tolist()) == (l0, plain.sample(0)[0][1].tolist(), [0.5, 0.3, 0, 0])


def _decoy_corpus(n_docs, seed):
    """Label 0's notes always say "alpha" and half the time "beta", the word its coders mark.

    MIG prefers "alpha" for label 0 (it is in every one of its notes, and in no other), so
    MIG planting looks at "alpha"; the evidence says "beta" justifies the code.
    """
    rng = np.random.default_rng(seed)
    filler = [f"w{i}" for i in range(30)]
    texts, Y, evidence = [], [], []
    for i in range(n_docs):
        words = list(rng.choice(filler, size=12))
        has = i % 2 == 0
        if has:
            both = i % 4 == 0
            words[3], words[8] = "alpha", ("beta" if both else words[8])
        elif i % 3 == 0:
            words[5] = "beta"                      # beta also in other notes: lower MIG
        words[10] = "gamma" if not has else words[10]
        text = " ".join(words)
        texts.append(text)
        Y.append([int(has), int(not has)])
        start = text.find(" beta") + 1 if has and "beta" in words else -1
        evidence.append([{"label": 0, "spans": [[start, start + 4]]}] if start > 0 else [])
    return texts, np.array(Y), evidence


def test_evidence_planting_points_the_attention_at_the_marked_words(planter_params):
    texts, Y, evidence = _decoy_corpus(120, seed=0)
    rel = MIGRelevance().fit(texts, Y)
    mig = rel.relevance_.toarray()[0]
    assert mig[rel.vocabulary_["alpha"]] > mig[rel.vocabulary_["beta"]] > 0
    test = [f"w1 alpha w2 w3 beta w{i} w5" for i in range(6, 16)]
    params = dict(planter_params, max_epochs=8, lr=5e-3)

    def argmax_words(planter):
        docs = planter.relevance_.tokenize(test)
        inv = {i: w for w, i in planter.relevance_.vocabulary_.items()}
        return [inv[int(d[int(np.argmax(s[0]))])] for d, s in zip(docs, planter.attention(test, [0]))]

    dev = (texts[100:], Y[100:])
    by_mig = AttentionPlanter(**params).fit(texts[:100], Y[:100], dev)
    by_evidence = AttentionPlanter(**params).fit(texts[:100], Y[:100], dev, evidence=evidence[:100])
    assert by_mig.n_evidence_pairs_ == 0 and by_mig.evidence_record_ is None
    assert by_evidence.n_evidence_pairs_ == 25                  # i % 4 == 0 of 100 notes
    assert by_evidence.evidence_record_["n_mentions"] == 25
    assert argmax_words(by_mig).count("alpha") >= 8
    assert argmax_words(by_evidence).count("beta") >= 8


def test_the_classifier_passes_evidence_to_its_planting_and_checks_it_first(small):
    texts, Y, evidence = _decoy_corpus(40, seed=1)
    clf = small(max_epochs=1).fit(texts[:32], Y[:32], (texts[32:], Y[32:]),
                                  evidence=evidence[:32])
    assert clf.planter_.n_evidence_pairs_ == 8                   # i % 4 == 0 of 32 notes
    assert clf.evidence_record_["n_mentions"] == 8
    bad = [list(e) for e in evidence]
    bad[0] = [{"label": 0, "spans": [[5, 500]]}]
    with pytest.raises(ValueError, match=r"evidence\[0\].*ends after the text"):
        small().fit(texts, Y, evidence=bad)
    # a label the document does not carry
    bad[0] = [{"label": 1, "spans": [[0, 2]]}]
    with pytest.raises(ValueError, match=r"evidence\[0\]"):
        small().fit(texts, Y, evidence=bad)
    # in a Pipeline the classifier reads the texts the token corpus keeps
    from sklearn.pipeline import Pipeline
    pipe = Pipeline([("mig", MIGRelevance()), ("clf", small(max_epochs=1))])
    pipe.fit(texts[:32], Y[:32], clf__validation_data=(texts[32:], Y[32:]),
             clf__evidence=evidence[:32])
    assert pipe[-1].planter_.n_evidence_pairs_ == 8
    counts = sp.csr_matrix(np.ones((40, 5)))
    with pytest.raises(ValueError, match="raw texts"):
        PlantClassifier().fit(counts, Y, evidence=evidence)
