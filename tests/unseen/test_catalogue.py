"""DescriptionFusion over an open label space: a catalogue's codes scored by text and hierarchy."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.utils import Bunch

from xplant.linear import FrequencyPrior
from xplant.unseen import CatalogueIndex, DescriptionFusion, DescriptionRanker

TEXTS = ["acute chest pain today. no fever", "fracture of the left femur neck after a fall",
         "fever and dry cough", "chest pain with fever. cough at night"]
KNOWN = ["R07.9", "S72.0", "R50.9"]
Y = np.array([[1, 0, 0], [0, 1, 0], [0, 0, 1], [1, 0, 1]])
DESC = ["Chest pain, unspecified", "Fracture of head and neck of femur", "Fever, unspecified"]
CATALOGUE = {"R07.9": ("Chest pain, unspecified", "R07"), "R07.1": ("Chest pain on breathing", "R07"),
             "S72.0": ("Fracture of head and neck of femur", "S72"),
             "S72.1": ("Fracture of femur after a fall", "S72"), "R50.9": ("Fever, unspecified", "R50"),
             "R50.8": ("Other fever at night", "R50"), "J05": ("Acute dry cough", "J00-J06")}


def _catalogue(codes=None):
    codes = list(CATALOGUE) if codes is None else codes
    return Bunch(label_names=np.array(codes), label_descriptions=np.array(
        [CATALOGUE[c][0] for c in codes], dtype=object),
        label_synonyms=[[] for _ in codes], label_parents=[[CATALOGUE[c][1]] for c in codes])


def _fit(catalogue, **weights):
    params = dict(weight=1.0, seen_weight=0.0, near_weight=0.5, family_weight=0.25, prior_weight=0.0,
                  n_candidates=10)
    params.update(weights)
    return DescriptionFusion(FrequencyPrior(), **params).fit(
        TEXTS, Y, label_names=KNOWN, label_descriptions=DESC,
        label_parents=[[CATALOGUE[c][1]] for c in KNOWN], catalogue=catalogue)


def test_open_space_columns_and_a_hand_computed_hierarchy_score():
    f = _fit(_catalogue(), weight=0.0, near_weight=1.0, family_weight=0.0)
    assert f.classes_.tolist() == KNOWN + ["R07.1", "S72.1", "R50.8", "J05"]
    assert f.label_frequency_.tolist() == [2, 1, 2, 0, 0, 0, 0]
    S = f.decision_function(TEXTS[:1])
    assert sp.issparse(S) and S.shape == (1, 7)
    prior = FrequencyPrior().fit(TEXTS, Y).predict_proba(TEXTS[:1])[0]
    m = prior.min()
    dense = S.toarray()[0]
    np.testing.assert_allclose(dense[:3], prior)
    # seen scores mapped onto [0, 1] per document: R07.9 and R50.9 (2 of 4) -> 1, S72.0 -> 0;
    # near = the best of the parent's group (siblings, the parent) and the own group (children)
    np.testing.assert_allclose(dense[3:6], [m + 1.0, m + 0.0, m + 1.0])
    np.testing.assert_allclose(dense[6], m)            # J05: no seen relative, no text weight


def test_open_space_scores_are_the_one_fusion_formula(monkeypatch):
    """The open-space scores come from xplant.fusion.fuse: the seen block plus
    seen_weight * cosine, the candidates at the floor m(d) plus their catalogue score."""
    import xplant.fusion
    from xplant.unseen._catalogue_fusion import candidate_scores
    f = _fit(_catalogue(), seen_weight=0.5, prior_weight=0.1)
    scorer = f._open_scorer()
    parts = scorer.parts(TEXTS)
    weights = (f.weight_, f.seen_weight_, f.near_weight_, f.family_weight_, f.prior_weight_)
    calls, fuse = [], xplant.fusion.fuse
    monkeypatch.setattr(xplant.fusion, "fuse", lambda *a, **kw: calls.append(1) or fuse(*a, **kw))
    S = scorer.scores(parts, *weights).toarray()
    assert calls
    seen = parts["base"] + 0.5 * parts["cos"]
    np.testing.assert_array_equal(S[:, f.catalogue_.seen_], seen)
    ptr, cols = parts["indptr"], parts["cols"]
    unseen = candidate_scores(parts["sig"], weights[:1] + weights[2:])
    for i in range(len(TEXTS)):
        np.testing.assert_array_equal(S[i, cols[ptr[i]:ptr[i + 1]]],
                                      seen[i].min() + unseen[ptr[i]:ptr[i + 1]])
    monkeypatch.setattr(xplant.fusion, "fuse", lambda *a, **kw: 2 * fuse(*a, **kw))
    np.testing.assert_array_equal(scorer.scores(parts, *weights).toarray(), 2 * S)


def test_text_signal_is_the_mean_of_document_and_best_sentence_cosines():
    f = _fit(_catalogue())
    idx = f.catalogue_
    text = idx.text_scores(["Chest pain on breathing. Nothing else"])
    vec = idx.vectorizer_
    row = list(idx.unseen_).index(3)                   # R07.1
    lab = vec.transform(["Chest pain on breathing"])
    doc = float((vec.transform(["Chest pain on breathing. Nothing else"]) @ lab.T).toarray()[0, 0])
    sent = float((vec.transform(["Chest pain on breathing."]) @ lab.T).toarray()[0, 0])
    assert sent == pytest.approx(1.0, abs=1e-6)
    assert text[0, row] == pytest.approx((doc + sent) / 2, rel=1e-5)


def test_a_new_release_ranks_its_codes_as_a_model_that_had_them_from_the_start():
    full = _fit(_catalogue())
    new = ["S72.1", "R50.8"]
    older = _fit(_catalogue([c for c in CATALOGUE if c not in new]))
    assert "S72.1" not in older.classes_.tolist()
    added = older.add_labels(_catalogue(new))
    assert added.tolist() == new and older.n_labels_ == full.n_labels_
    docs = ["a fall and a femur fracture", "fever at night, cough", "chest pain"]
    a, b = full.decision_function(docs).toarray(), older.decision_function(docs).toarray()
    order = [older.classes_.tolist().index(c) for c in full.classes_]
    np.testing.assert_allclose(b[:, order], a, rtol=1e-6)
    assert older.add_labels(_catalogue(new)).size == 0          # known codes are not added twice


def test_dev_choice_is_made_in_the_open_space():
    f = DescriptionFusion(FrequencyPrior(), n_candidates=10).fit(
        TEXTS, Y, label_names=KNOWN, label_descriptions=DESC, catalogue=_catalogue(),
        validation_data=(["chest pain on breathing", "a fall, femur fracture"],
                         np.array([[0, 0, 0, 1, 0, 0, 0], [0, 1, 0, 0, 1, 0, 0]])))
    assert f.dev_choice_["name"] == "description_weights"
    assert set(f.dev_choice_["value"]) == {"weight", "seen_weight", "near_weight", "family_weight",
                                           "prior_weight"}
    chosen = (f.weight_, f.seen_weight_, f.near_weight_, f.family_weight_, f.prior_weight_)
    assert max(f.dev_map_.values()) == f.dev_map_[chosen]
    # both dev documents' gold codes lie in the catalogue part and are ranked first: MAP 1
    assert f.dev_map_[chosen] == 1.0
    # two stages: the description pair (the others at 0), then the others with that pair
    first = [c for c, _ in f.dev_choice_["scores"] if c["near_weight"] == c["family_weight"]
             == c["prior_weight"] == 0.0]
    assert len(f.dev_choice_["scores"]) == 11 * 8 + 4 * 4 * 4 and len(first) >= 11 * 8
    top = f.predict_top_k(["chest pain on breathing"], 1)[0][0, 0]
    assert f.classes_[top] == "R07.1"


def test_suggestions_name_the_matching_sentence():
    f = _fit(_catalogue())
    (first, *_), = f.suggest_unseen(["Seen today. Acute dry cough since Monday."], k=2)
    assert first["label"] == "J05"
    assert first["span"]["text"] == "Acute dry cough since Monday."
    assert first["span"]["start"] == 12
    with pytest.raises(ValueError, match="catalogue"):
        DescriptionFusion(FrequencyPrior(), weight=1.0).fit(
            TEXTS, Y, label_descriptions=DESC).suggest_unseen(TEXTS)


def test_explain_names_a_catalogue_code_by_its_best_sentence():
    """A code of the catalogue (a column past the ranker's labels) is explained by the sentence
    that matches its names; a seen label by the model's own explain (none here: by the ranker)."""
    f = _fit(_catalogue())
    text = "Seen today. Acute dry cough since Monday."
    j05 = f.classes_.tolist().index("J05")
    ex = f.explain([text], labels=[[j05, 2]])[0]["labels"]
    assert [e["label"] for e in ex] == ["J05", "R50.9"] and ex[0]["index"] == j05
    assert ex[0]["source"] == "descriptions" and ex[0]["prob"] is None
    start, end, cos = f.catalogue_.best_sentence(text, j05)
    assert ex[0]["spans"] == [{"start": 12, "end": len(text), "text": "Acute dry cough since Monday.",
                               "weight": cos}] and (start, end) == (12, len(text)) and cos > 0
    assert ex[0]["score"] == f.decision_function([text]).toarray()[0, j05]
    assert ex[1]["source"] == "descriptions"          # FrequencyPrior has no explain


def test_saved_and_loaded_with_its_catalogue(tmp_path):
    from xplant import load_saved
    from xplant.unseen import save_description_fusion
    f = _fit(_catalogue())
    f.add_labels(Bunch(label_names=np.array(["R07.2"]), label_descriptions=np.array(
        ["Precordial chest pain"], dtype=object), label_parents=[["R07"]]))
    g, _ = load_saved(save_description_fusion(f, tmp_path / "m"))
    docs = ["precordial chest pain", "fever"]
    assert g.classes_.tolist() == f.classes_.tolist()
    np.testing.assert_array_equal(g.decision_function(docs).toarray(),
                                  f.decision_function(docs).toarray())
    assert g.suggest_unseen(docs, k=1) == f.suggest_unseen(docs, k=1)


def test_errors():
    with pytest.raises(ValueError, match="label_names"):
        DescriptionFusion(FrequencyPrior()).fit(TEXTS, Y, label_descriptions=DESC,
                                                catalogue=_catalogue())
    with pytest.raises(ValueError, match="near_weight"):
        _fit(_catalogue(), near_weight=-1)
    with pytest.raises(ValueError, match="n_candidates"):
        _fit(_catalogue(), n_candidates=0)
    with pytest.raises(ValueError, match="add_labels"):
        DescriptionFusion(FrequencyPrior(), weight=1.0).fit(
            TEXTS, Y, label_descriptions=DESC).add_labels(_catalogue())


def test_index_round_trip_is_exact():
    idx = _fit(_catalogue()).catalogue_
    again = CatalogueIndex.from_dict(*idx.to_dict(), idx.vectorizer_)
    P = np.array([[0.2, 0.9, 0.5]])
    for a, b in zip(idx.candidates(["femur fall"], P), again.candidates(["femur fall"], P)):
        np.testing.assert_array_equal(a, b)


def test_the_form_prior_is_the_hand_computed_log_ratio():
    from xplant.unseen import label_form_prior
    from xplant.unseen._label_forms import label_forms
    names = ["A1", "A2", "A11", "A12", "A13", "B1"]
    parents = ["", "", "A1", "A1", "A1", ""]
    forms = label_forms(names, parents)
    assert forms.tolist()[0] == ["2", "1", "parent"] and forms.tolist()[2] == ["3", "1", "leaf"]
    prior, table = label_form_prior(names, parents, [2, 1, 0, 0, 0, 9])   # rare: A1 and A2
    # length: rare {2: 2}, all {2: 3, 3: 3}; last: rare {1: 1, 2: 1}, all {1: 3, 2: 2, 3: 1};
    # parent: rare {parent: 1, leaf: 1}, all {parent: 1, leaf: 5}; Laplace: +1 a value
    want_a1 = (np.log(3 / 4) - np.log(4 / 8)) + (np.log(2 / 5) - np.log(4 / 9)) \
        + (np.log(2 / 4) - np.log(2 / 8))
    assert prior[0] == pytest.approx(want_a1, rel=1e-6)
    assert table[0]["3"] == pytest.approx(np.log(1 / 4) - np.log(4 / 8))
    # no rare label: no prior
    assert not label_form_prior(names, parents, [0, 0, 0, 0, 0, 9])[0].any()


def test_a_new_release_takes_the_prior_of_its_form():
    f = _fit(_catalogue(), near_weight=0.0, family_weight=0.0, prior_weight=0.5)
    idx = f.catalogue_
    f.add_labels(Bunch(label_names=np.array(["R50.2"]), label_descriptions=np.array(
        ["Drug induced fever"], dtype=object), label_parents=[["R50"]]))
    from xplant.unseen._label_forms import apply_form_prior, label_forms
    want = apply_form_prior(idx.prior_table_, label_forms(["R50.2"], ["R50"]))
    assert idx.prior_[-1] == want[0] != 0
    S = f.decision_function(["drug induced fever"]).toarray()[0]
    text = idx.text_scores(["drug induced fever"])[0, -1]
    floor = S[:3].min()
    assert S[-1] == pytest.approx(floor + 1.0 * text + 0.5 * want[0], rel=1e-5)


def test_the_encoder_joins_the_text_signal_and_the_names_are_encoded_once(tmp_path, monkeypatch):
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from xplant.unseen import _encoder
    monkeypatch.setenv("XPLANT_CACHE_DIR", str(tmp_path / "cache"))
    ranker = DescriptionRanker(encoder="minilm", encoder_threshold=0.3)
    f = DescriptionFusion(FrequencyPrior(), ranker=ranker, weight=1.0, seen_weight=0.0,
                          near_weight=0.0, family_weight=0.0, prior_weight=0.0,
                          n_candidates=10).fit(TEXTS, Y, label_names=KNOWN, label_descriptions=DESC,
                                               catalogue=_catalogue())
    idx = f.catalogue_
    assert idx.encoder == "minilm" and idx.part_embeddings_.dtype == np.float16
    assert len(list((tmp_path / "cache" / "embeddings").glob("*.safetensors"))) == 1
    doc = "He coughs at night. The fever is back."
    tfidf = CatalogueIndex(10).fit(TEXTS, f.classes_, [idx_text for idx_text in [
        "Chest pain, unspecified", "Fracture of head and neck of femur", "Fever, unspecified",
        "Chest pain on breathing", "Fracture of femur after a fall", "Other fever at night",
        "Acute dry cough"]], idx.label_parents_, f.label_frequency_ > 0).text_scores([doc])
    sents = _encoder.encode_texts(["He coughs at night.", "The fever is back."], "minilm")
    names = _encoder.encode_texts(["Chest pain on breathing", "Fracture of femur after a fall",
                                   "Other fever at night", "Acute dry cough"], "minilm")
    enc = np.maximum((sents @ names.T).max(axis=0) - 0.3, 0)
    np.testing.assert_allclose(idx.text_scores([doc])[0], tfidf[0] + enc, atol=2e-3)
    # a second fit reads the names' embeddings from the cache: nothing encoded but sentences
    calls = []
    real = _encoder.encode_texts
    monkeypatch.setattr(_encoder, "encode_texts",
                        lambda t, s, **kw: calls.append(len(t)) or real(t, s, **kw))
    DescriptionFusion(FrequencyPrior(), ranker=ranker, weight=1.0, seen_weight=0.0,
                      near_weight=0.0, family_weight=0.0, prior_weight=0.0, n_candidates=10).fit(
        TEXTS, Y, label_names=KNOWN, label_descriptions=DESC, catalogue=_catalogue())
    assert 4 not in calls                       # the four catalogue names were not encoded again
    # another training split puts its labels first in another order: the same set of names,
    # the same cache entry, the same embeddings of each name
    order = np.arange(len(KNOWN))[::-1]
    g = DescriptionFusion(FrequencyPrior(), ranker=ranker, weight=1.0, seen_weight=0.0,
                          near_weight=0.0, family_weight=0.0, prior_weight=0.0,
                          n_candidates=10).fit(TEXTS, Y[:, order], label_names=np.asarray(KNOWN)[order],
                                               label_descriptions=np.asarray(DESC, dtype=object)[order],
                                               catalogue=_catalogue())
    assert 7 not in calls                       # the open space's seven names not encoded again
    assert len(list((tmp_path / "cache" / "embeddings").glob("*.safetensors"))) == 1
    same = {str(g.catalogue_.label_names_[u]): g.catalogue_.part_embeddings_[i]
            for i, u in enumerate(g.catalogue_.unseen_[g.catalogue_.part_owner_])}
    for i, u in enumerate(idx.unseen_[idx.part_owner_]):
        np.testing.assert_array_equal(same[str(idx.label_names_[u])], idx.part_embeddings_[i])


def test_cached_embeddings_are_a_function_of_the_set_of_texts(tmp_path, monkeypatch):
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from xplant.unseen import _encoder, cached_embeddings
    monkeypatch.setenv("XPLANT_CACHE_DIR", str(tmp_path))
    names = ["Fever, unspecified", "Acute dry cough", "Chest pain on breathing"]
    E = cached_embeddings(names, "minilm")
    calls = []
    real = _encoder.encode_texts
    monkeypatch.setattr(_encoder, "encode_texts",
                        lambda t, s, **kw: calls.append(list(t)) or real(t, s, **kw))
    # another order, with a repeat: read from the one entry, row i is text i's embedding
    F = cached_embeddings([names[2], names[0], names[2], names[1]], "minilm")
    assert calls == [] and len(list((tmp_path / "embeddings").glob("*.safetensors"))) == 1
    np.testing.assert_array_equal(F, E[[2, 0, 2, 1]])
    # the entry is encoded in the sorted order of the distinct texts, whatever order they came in
    np.testing.assert_array_equal(E, real(sorted(names), "minilm")[[2, 0, 1]].astype(np.float16))
    # a machine that encodes in the other precision keeps an entry of its own
    other = "float32" if _encoder.encoder_precision() == "bfloat16" else "bfloat16"
    monkeypatch.setattr(_encoder, "encoder_precision", lambda precision="auto": other)
    G = cached_embeddings(names, "minilm")
    assert len(calls) == 1 and len(list((tmp_path / "embeddings").glob("*.safetensors"))) == 2
    np.testing.assert_array_equal(G, real(sorted(names), "minilm")[[2, 0, 1]].astype(np.float16))


# ------------------------------------------------- a dev split with no code absent from training
def test_a_dev_split_without_an_unseen_code_takes_the_fallback_weights_with_a_warning():
    from xplant.model_selection import NoDevDataWarning
    from xplant.unseen import FALLBACK_WEIGHT
    dev = (["chest pain today", "fever and cough"], np.array([[1, 0, 0], [0, 0, 1]]))
    with pytest.warns(NoDevDataWarning, match="none of the dev split's 2 positive labels is on "
                                              "a label without training documents"):
        f = DescriptionFusion(FrequencyPrior(), n_candidates=10).fit(
            TEXTS, Y, label_names=KNOWN, label_descriptions=DESC, catalogue=_catalogue(),
            validation_data=dev)
    assert (f.weight_, f.near_weight_, f.family_weight_, f.prior_weight_) == \
        (FALLBACK_WEIGHT, 0.0, 0.0, 0.0)
    # the seen labels' weight is still chosen on dev: the 8 seen weights, then the one
    # hierarchy and prior setting left
    assert f.dev_choice_["on_dev"] and len(f.dev_choice_["scores"]) == 8 + 1
    # a non-constant order: each note's best unseen code is the one its text names
    top = [s[0]["label"] for s in f.suggest_unseen(["chest pain on breathing", "acute dry cough",
                                                    "femur fracture after a fall"], k=3)]
    assert top == ["R07.1", "J05", "S72.1"]


def test_a_closed_fusion_without_an_unseen_dev_label_takes_the_fallback_weight():
    from xplant.model_selection import NoDevDataWarning
    from xplant.unseen import FALLBACK_WEIGHT
    Y4 = np.hstack([Y, np.zeros((4, 1), dtype=int)])        # J05 has no training note
    with pytest.warns(NoDevDataWarning, match="without training documents"):
        f = DescriptionFusion(FrequencyPrior()).fit(
            TEXTS, Y4, label_names=KNOWN + ["J05"], label_descriptions=DESC + ["Acute dry cough"],
            validation_data=(["chest pain today"], np.array([[1, 0, 0, 0]])))
    assert f.weight_ == FALLBACK_WEIGHT and f.unseen_.tolist() == [3]
    # with one in dev, the weight is chosen there, with no warning
    with warnings.catch_warnings():
        warnings.simplefilter("error", NoDevDataWarning)
        g = DescriptionFusion(FrequencyPrior()).fit(
            TEXTS, Y4, label_names=KNOWN + ["J05"], label_descriptions=DESC + ["Acute dry cough"],
            validation_data=(["a dry cough", "chest pain today"],
                             np.array([[0, 0, 0, 1], [1, 0, 0, 0]])))
    assert len(g.dev_choice_["scores"]) == 11 * 8


def test_dev_usability_of_the_unseen_labels_by_hand():
    from xplant.model_selection import dev_usability
    Yd = np.array([[1, 0, 1], [0, 0, 1], [0, 1, 0]])
    u = dev_usability(Yd, [3, 0, 0], labels="unseen")
    assert (u.usable, u.n_positives, u.n_covered, u.coverage) == (True, 4, 3, 0.75)
    assert not dev_usability(Yd[:, [0]], [3, 0, 0], labels="unseen").usable
    with pytest.raises(ValueError, match="labels must be 'seen' or 'unseen'"):
        dev_usability(Yd, [3, 0, 0], labels="all")


# ------------------------------------------------------- add_labels under a saved per-label rule
def test_codes_added_under_per_label_threshold_take_the_rules_global_threshold(tmp_path):
    """The release flow of unseen.md on a saved fusion whose rule is per_label_threshold."""
    import json
    from xplant import load_saved
    from xplant._saved import decide
    from xplant.datasets import load_catalogue
    from xplant.linear import make_tfidf_ovr
    from xplant.unseen import save_description_fusion
    words = {"A10": "fever cough", "B20": "fracture femur", "C30": "rash itch", "D40": "chest pain"}
    extra = {"E50": "headache migraine", "E51": "vomiting nausea", "F60": "back pain lumbar",
             "G70": "dizziness vertigo", "H80": "ear infection otitis",
             "J90": "sore throat pharyngitis", "K11": "diarrhea gastroenteritis"}
    rows = [{"label": c, "description": d} for c, d in {**words, **extra}.items()]
    (tmp_path / "cat.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    rng = np.random.default_rng(0)             # the open-space cases' 40 training notes
    names, texts, labels = list(words), [], []
    for _ in range(40):
        labs = [str(x) for x in rng.choice(names, size=rng.integers(1, 3), replace=False)]
        cue = [w for lab in labs for w in words[lab].split()]
        cue += [str(x) for x in rng.choice(["patient", "day", "the", "note", "seen"], 5)]
        texts.append(" ".join(rng.permutation(cue)))
        labels.append(labs)
    f = DescriptionFusion(make_tfidf_ovr(min_df=1, random_state=0), weight=1.0, seen_weight=0.0,
                          near_weight=0.0, family_weight=0.0, prior_weight=0.0).fit(
        texts, labels, label_names=names, label_descriptions=list(words.values()),
        catalogue=load_catalogue(tmp_path / "cat.jsonl"))
    rule = {"rule": "per_label_threshold", "k": 2, "threshold": 0.5,
            "thresholds": [0.4, 0.5, 0.6, 0.5] + [0.5] * (f.n_labels_ - 4)}
    f.decision_rule_ = rule
    fusion, decision = load_saved(save_description_fusion(f, tmp_path / "v1"))
    (tmp_path / "release.jsonl").write_text(json.dumps({"label": "L12",
                                                        "description": "zzfoo disease"}) + "\n")
    assert fusion.add_labels(load_catalogue(tmp_path / "release.jsonl")).tolist() == ["L12"]
    assert (fusion.n_labels_, len(decision["thresholds"])) == (12, 11)
    note = ["fever and cough", "zzfoo disease since monday"]
    S = fusion.decision_function(note).toarray()
    want = S >= np.r_[decision["thresholds"], 0.5]          # L12 takes the global 0.5
    want &= fusion.decision_function(note).toarray() != 0   # never an unstored code
    np.testing.assert_array_equal(decide(fusion, note, decision).toarray(), want.astype(int))
    # the fusion's own rule gave L12 the global threshold when the code was added
    assert fusion.decision_rule_.thresholds.tolist() == [0.4, 0.5, 0.6, 0.5] + [0.5] * 8
    np.testing.assert_array_equal(fusion.predict(note).toarray(), want.astype(int))
    # saved again: L12 has the global threshold as its own, and a second release still works
    g, saved = load_saved(save_description_fusion(fusion, tmp_path / "v2"))
    assert saved["thresholds"].tolist() == [0.4, 0.5, 0.6, 0.5] + [0.5] * 8
    (tmp_path / "release2.jsonl").write_text(json.dumps({"label": "L13",
                                                         "description": "qqbar fever"}) + "\n")
    g.add_labels(load_catalogue(tmp_path / "release2.jsonl"))
    assert decide(g, note, saved).shape == (2, 13)


def test_per_label_thresholds_short_by_more_than_the_added_labels_are_refused():
    from xplant.metrics import check_rule
    rule = {"rule": "per_label_threshold", "k": 1, "threshold": 0.3, "thresholds": [0.1, 0.2]}
    assert check_rule(rule, 4, n_added=2)["thresholds"].tolist() == [0.1, 0.2, 0.3, 0.3]
    with pytest.raises(ValueError, match=r"of length 4 \(or 3 before the 1 labels added since\)"):
        check_rule(rule, 4, n_added=1)
    with pytest.raises(ValueError, match="of length 4, got shape"):
        check_rule(rule, 4)


@pytest.mark.parametrize("value, ok", [(True, False), (False, False), (-0.5, False),
                                       (float("nan"), False), ("Dev", False), (0, True),
                                       (np.float32(0.25), True), ("dev", True)])
def test_every_weight_is_checked_alike(value, ok):
    """The fit's weights (weight, seen_weight, mention_weight) and the catalogue's
    (near_weight, family_weight, prior_weight) accept and refuse the same values:
    a bool is no weight."""
    for name in ("seen_weight", "near_weight"):
        params = {name: value}
        if not ok:
            with pytest.raises(ValueError, match=f"{name} must be 'dev' or a non-negative number"):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    _fit(_catalogue(), **params)
        else:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                _fit(_catalogue(), **params)
