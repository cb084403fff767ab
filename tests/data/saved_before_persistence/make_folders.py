"""Write one saved folder per kind with the code of the checkout on PYTHONPATH, and the scores
that code gives on fixed texts, for tests/data/saved_before_persistence.

Run from that checkout: python make_folders.py OUT
"""
import json
import sys
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp


NAMES = ["R50.9", "S72.0", "L29.9"]
WORDS = ["fever", "cough", "fracture", "femur", "rash", "itch"]


def corpus(n=40, seed=0):
    """Documents whose label j is signalled by the words WORDS[2j] and WORDS[2j + 1]."""
    rng = np.random.default_rng(seed)
    Y = np.zeros((n, 3), dtype=np.int64)
    Y[np.arange(n), rng.integers(0, 3, n)] = 1
    texts = [" ".join(rng.permutation([w for j in np.flatnonzero(row) for w in WORDS[2 * j:2 * j + 2]]
                                      + list(rng.choice(["patient", "day", "note", "fiebre"], 3))))
             for row in Y]
    return texts, sp.csr_matrix(Y)


def main(out):
    """Fit and save one model of each kind into ``out``, with its scores on the probe."""
    import xplant
    out.mkdir(parents=True)
    print("xplant from", xplant.__file__)
    texts, Y = corpus()
    probe, _ = corpus(8, seed=1)
    evidence = [[{"label": NAMES[j], "spans": [[t.index(WORDS[2*j]), t.index(WORDS[2*j]) + len(WORDS[2*j])]]}
                 for j in np.flatnonzero(Y[i].toarray()[0])] for i, t in enumerate(texts)]
    warnings.simplefilter("ignore")
    from xplant.linear import make_tfidf_ovr, save_linear, MentionMatcher
    from xplant.unseen import DescriptionFusion, save_description_fusion
    from xplant.neural import AttentionPlanter, PlantClassifier

    def record(folder, model, X):
        np.save(folder.parent / f"{folder.name}.scores.npy", np.asarray(model.decision_function(X)))

    svm = make_tfidf_ovr(C=1.0, min_df=1, random_state=0).fit(texts, Y, ovr__label_names=NAMES)
    save_linear(svm, out / "linear", decision={"rule": "per_label_threshold", "k": 1, "threshold": 0.0,
                                               "thresholds": np.array([0.1, -0.2, 0.3])})
    record(out / "linear", svm, probe)

    mm = MentionMatcher().fit(texts, Y, evidence=evidence, label_names=NAMES)
    save_linear(mm, out / "mention_matcher")
    record(out / "mention_matcher", mm, probe)

    Y4 = sp.hstack([Y, sp.csr_matrix((Y.shape[0], 1), dtype=np.int64)]).tocsr()
    fusion = DescriptionFusion(make_tfidf_ovr(C=1.0, min_df=1, random_state=0), weight=1.0).fit(
        texts, Y4, label_names=NAMES + ["R21"],
        label_descriptions=["fever cough", "fracture femur", "rash itch", "rash"])
    save_description_fusion(fusion, out / "description_fusion", decision={"rule": "top_k", "k": 2,
                                                                           "threshold": 0.5})
    record(out / "description_fusion", fusion, probe)

    plant = PlantClassifier(module__embedding_dim=8, module__hidden_dim=8, module__attention_dim=8,
                            module__pool_size=8, batch_size=8, verbose=0, n_jobs=1, max_epochs=2,
                            shortlist="linear", n_candidates=2, random_state=0,
                            planter=AttentionPlanter(max_epochs=1, verbose=0))
    plant.fit(texts, Y, label_names=NAMES, validation_data=corpus(12, seed=2))
    plant.save(out / "plant_classifier")
    record(out / "plant_classifier", plant, probe)
    planter = AttentionPlanter(max_epochs=1, verbose=0, module__embedding_dim=8,
                               module__attention_dim=8).fit(texts, Y)
    planter.save_planting(out / "planting")
    (out / "probe.json").write_text(json.dumps(probe))
    print("ok")



if __name__ == "__main__":
    main(Path(sys.argv[1]))
