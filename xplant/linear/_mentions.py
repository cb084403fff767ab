"""The mention matcher: labels found by the mentions that coders marked as their evidence.

A classical, dictionary-based ranker in the family of IAMsystem (Cossin
and Jouhet, CLEF eHealth 2020) and of the mention-level supervision of
López-García et al. (IEEE Access 9, 2021): it learns each label's mentions
from the gold evidence of the training documents, finds them in new text
with an Aho-Corasick automaton (pyahocorasick: linear in the text, every
overlapping and nested match at once), and scores a (document, label) pair
by how reliable its best matched mention was on the training documents.
"""

import functools
import numbers

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin, _fit_context
from sklearn.utils.validation import check_is_fitted

from .._fitted_parts import FittedFields, part_fields
from .._labels import label_lists
from .._normal_forms import folded_words
from .._params import Interval, ParamsMixin, StrOptions, int_at_least, number_at_least
from ._base import MultiLabelRankerMixin

#: Words that negate or rule out a mention that follows them within its clause
#: (NegEx, Chapman et al., J Biomed Inform 2001; folded as the text is).
NEGATION_CUES = {
    "es": {"before": ("no", "sin", "niega", "niegan", "nego", "negativo", "negativa",
                      "negativos", "negativas", "descarta", "descartan", "descarto",
                      "descartandose", "descartaron", "descartada", "descartado", "ausencia",
                      "ni", "excluye", "excluyo", "libre"),
           "after": ("negativo", "negativa", "negativos", "negativas", "descartado",
                     "descartada", "descartados", "descartadas", "ausente", "ausentes")},
    "en": {"before": ("no", "not", "without", "denies", "denied", "deny", "negative", "absence",
                      "excluded", "exclude", "free", "nor"),
           "after": ("negative", "excluded", "absent", "ruled")},
}
#: Words looked at before (and after) a mention for a negation cue, within its clause.
NEGATION_WINDOW = (5, 2)
#: The states of a matched mention, best first: exact or stemmed words, affirmed or negated.
STATES = ("exact", "exact_negated", "stem", "stem_negated")
_STEMMERS = {"es": "spanish", "en": "english"}


@functools.lru_cache(maxsize=None)
def _stemmer(language):
    """The Snowball stemmer of ``language`` (snowballstemmer), as a word -> stem function."""
    import snowballstemmer
    return functools.lru_cache(maxsize=1 << 18)(snowballstemmer.stemmer(_STEMMERS[language]).stemWord)


def _automaton(forms):
    """An Aho-Corasick automaton of ``" form "`` (word-bounded) -> (index, words, length)."""
    import ahocorasick
    auto = ahocorasick.Automaton()
    for i, form in enumerate(forms):
        auto.add_word(f" {form} ", (i, form.count(" ") + 1, len(form) + 2))
    if forms:
        auto.make_automaton()
    return auto


def _find(auto, words):
    """(form index, first word, last word) of every match of ``auto`` in ``words``."""
    if not words or auto.kind != 2:                     # 2: ahocorasick.AHOCORASICK
        return []
    text = " " + " ".join(words) + " "
    starts = np.cumsum([0] + [len(w) + 1 for w in words])   # words[t] begins at starts[t] + 1
    out = []
    for end, (i, n_words, length) in auto.iter(text):      # end: the match's last character
        out.append((i, int(np.searchsorted(starts, end - length + 1)), n_words))
    return out


class LearnedMentions(FittedFields):
    """The fitted model of a :class:`MentionMatcher`, its part ``parts_["model"]``.

    Owns ``mentions_``, ``pairs_``, ``reliability_``, ``n_words_``,
    ``evidence_record_`` and ``k_`` (their views) and turns them into a
    saved folder's arrays and JSON (:meth:`to_dict`) and back
    (:meth:`from_dict`). The matcher's automata are not state: they are
    built from ``mentions_``.

    Fields: ``mentions`` (the learned patterns, sorted), ``pairs`` (CSR
    float64 of shape (n_mentions, n_labels): training mentions of each
    (pattern, label) pair), ``reliability`` (one CSR per state of
    :data:`STATES`, on the pattern of ``pairs``), ``n_words`` (int64 words
    per pattern), ``evidence_record`` (the training evidence's counts) and
    ``k`` (labels of the default rule).
    """

    FIELDS = ("mentions", "pairs", "reliability", "n_words", "evidence_record", "k")

    def to_dict(self):
        """The state: ``mentions``, ``pairs.data``/``.indices``/``.indptr``, one
        ``reliability.<state>`` array per state (on the pairs' pattern: every
        reliability is > 0), ``evidence_record`` and ``k``.

        Returns
        -------
        dict of str to ndarray, list, dict or int
        """
        P = sp.csr_matrix(self.pairs)
        state = {"pairs.data": P.data.astype(np.float64),
                 "pairs.indices": P.indices.astype(np.int64),
                 "pairs.indptr": P.indptr.astype(np.int64)}
        state.update({"reliability." + s: self.reliability[s].data for s in STATES})
        return {**state, "k": int(self.k), "mentions": list(self.mentions),
                "evidence_record": self.evidence_record}

    @classmethod
    def from_dict(cls, state):
        """The part of a state :meth:`to_dict` gave, with the label space's ``n_labels``
        (the saved step's entry holds both; other keys are ignored).

        Parameters
        ----------
        state : dict

        Returns
        -------
        LearnedMentions
        """
        mentions = [str(m) for m in state["mentions"]]
        pairs = sp.csr_matrix((state["pairs.data"], state["pairs.indices"], state["pairs.indptr"]),
                              shape=(len(mentions), int(state["n_labels"])))
        reliability = {s: sp.csr_matrix((state["reliability." + s], pairs.indices, pairs.indptr),
                                        shape=pairs.shape) for s in STATES}
        n_words = np.array([m.count(" ") + 1 for m in mentions], dtype=np.int64)
        return cls(mentions=mentions, pairs=pairs, reliability=reliability, n_words=n_words,
                   evidence_record=dict(state["evidence_record"]), k=int(state["k"]))


class MentionMatcher(ParamsMixin, MultiLabelRankerMixin, ClassifierMixin, BaseEstimator):
    """Rank labels by the gold mentions of the training documents found in a text.

    ``fit`` reads each training document's evidence: per label, the
    mentions (character spans) that justify it. Each mention's words,
    folded (lower case, accents removed: :func:`xplant._normal_forms.folded_words`),
    are one pattern; with ``approximate=True`` their Snowball stems are a
    second (inflection: *neumonías* matches *neumonía*). Every pattern is
    matched in the training documents too, which estimates for each
    (mention, label) pair and each match state (exact or stemmed,
    affirmed or negated) its reliability, the share of the documents
    containing the mention in that state that carry the label::

        r(m, l, s) = (n(m, l, s) + c_s) / (n(m, s) + 1)

    with ``c`` = ``smoothing`` for an exact affirmed match and, for the
    other states, the exact affirmed reliability times ``smoothing`` (a
    state never seen in training falls back on it). A document's score for
    a label is the best over its matched mentions of
    ``r · (1 + length_bonus · words)``: a longer mention, when as reliable,
    is the more specific evidence (a nested *insuficiencia renal aguda*
    beats *insuficiencia renal*).

    A match is negated when a negation cue (:data:`NEGATION_CUES`: *no*,
    *sin*, *niega*, *se descarta*, *negativo para* ...) stands within the
    five words before it, or one of the closing cues (*negativo*,
    *descartado*) within the two after it, in the same clause (NegEx,
    Chapman et al. 2001). Negated matches keep their own, lower,
    reliability rather than being dropped: "no fiebre" still says the note
    is about fever.

    Parameters
    ----------
    approximate : bool, default=True
        Also match the mentions' Snowball stems (their inflected and
        derived forms), with their own reliabilities.
    negation : bool, default=True
        Tell negated matches from affirmed ones.
    language : {"en", "es"}, default="en"
        The text's language: its stemmer and negation cues (``xplant run``
        sets Spanish for CodiEsp, whose evidence indexes the Spanish
        original).
    min_chars : int, default=3
        Mentions of fewer folded characters are not learned (spans of one
        or two letters match everywhere).
    smoothing : float, default=0.5
        ``c`` above: the pseudo-count of a label among a mention's
        documents; in (0, 1].
    length_bonus : float, default=0.05
        Score bonus per word of the mention, >= 0.
    text_field : str or None, default=None
        Documents given as mappings (JSON lines records) are read at this
        field; None reads strings, or a mapping's ``"text"``. Fitted on a
        field, the model refuses a document that lacks it.

    Attributes
    ----------
    parts_ : dict of str to object
        The fitted parts: ``"label_space"`` (:class:`xplant._label_space.LabelSpace`),
        which the label-space attributes read, ``"model"``
        (:class:`LearnedMentions`, which the attributes below read but
        ``stems_``), the decision rule once set, and any part of your own
        (:func:`xplant.persistence.register_part`), saved with the model.
    decision_rule_ : DecisionRule
        The rule of ``predict(X)`` (``parts_["decision_rule"]``,
        :class:`xplant.metrics.DecisionRule`): top-``k_``
        until one is set; ``xplant run`` sets the rule it chose on dev, and
        a saved model keeps it.
    classes_ : ndarray of shape (n_labels,)
        Label names given to ``fit``, else ``0..L-1``.
    n_labels_, label_frequency_, n_train_documents_, prediction_form_
        As in :class:`~xplant.linear.OneVsRestLinear`.
    mentions_ : list of str
        The learned patterns (folded words joined by one space), sorted.
    stems_ : list of str
        Their stemmed forms (empty without ``approximate``).
    pairs_ : csr_matrix of float64
        Shape (number of patterns, n_labels): the number of training
        mentions of each (pattern, label) pair.
    reliability_ : dict of str to csr_matrix
        ``r(m, l, s)`` of each state ``s`` of :data:`STATES`, of the shape
        and on the pattern of ``pairs_``.
    n_words_ : ndarray of int64 of shape (n_mentions,)
        Words per pattern.
    evidence_record_ : dict
        :func:`xplant.evidence.check_evidence`'s counts of the training evidence.
    k_ : int
        Default number of labels ``predict`` returns: the mean number of
        labels per training document, rounded, at least 1.

    Notes
    -----
    The automata are rebuilt from ``mentions_`` when a saved model is
    loaded (:func:`xplant.linear.save_linear`), so nothing but strings and
    arrays is stored. Labels without a training mention score 0 for every
    document, as do documents without a match.

    Examples
    --------
    >>> texts = ["Paciente con neumonía aguda.", "Sin neumonía. Fiebre alta.", "Fiebre."]
    >>> evidence = [[{"label": "J18.9", "spans": [[13, 21]]}],
    ...             [{"label": "R50.9", "spans": [[14, 20]]}], []]
    >>> m = MentionMatcher(language="es").fit(texts, [["J18.9"], ["R50.9"], ["R50.9"]],
    ...                                       evidence=evidence)
    >>> m.classes_.tolist(), m.mentions_
    (['J18.9', 'R50.9'], ['fiebre', 'neumonia'])
    >>> m.decision_function(["Neumonías bilaterales"]).round(4).tolist()  # stemmed: 0.75 * 0.5 * 1.05
    [[0.3938, 0.0]]
    >>> ex = m.explain(["Tiene fiebre"], top_labels=1)[0]["labels"][0]
    >>> ex["label"], ex["spans"][0]["start"], ex["spans"][0]["end"], ex["spans"][0]["text"]
    ('R50.9', 6, 12, 'fiebre')
    """

    #: the fitted model's views: parts_["model"], saved and restored whole
    mentions_, pairs_, reliability_, n_words_, evidence_record_, k_ = part_fields(
        "model", LearnedMentions, "mentions", "pairs", "reliability", "n_words",
        "evidence_record", "k")

    _parameter_constraints = {
        "approximate": ["boolean"],
        "negation": ["boolean"],
        "language": [StrOptions({"es", "en"})],
        "min_chars": [int_at_least(1)],
        "smoothing": [Interval(numbers.Real, 0.0, 1.0, closed="right")],
        "length_bonus": [number_at_least(0)],
        "text_field": [None, str],
    }

    def __init__(self, *, approximate=True, negation=True, language="en", min_chars=3,
                 smoothing=0.5, length_bonus=0.05, text_field=None):
        self.approximate = approximate
        self.negation = negation
        self.language = language
        self.min_chars = min_chars
        self.smoothing = smoothing
        self.length_bonus = length_bonus
        self.text_field = text_field

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, Y, *, evidence, label_names=None):
        """Learn the mentions of each label and their reliability on the training documents.

        Parameters
        ----------
        X : sequence of str or of dict
            Training documents: the texts the evidence offsets index.
        Y : {array-like, sparse matrix} of shape (n_samples, n_labels), or label lists
            0/1 label indicators (:func:`xplant._labels.check_targets`).
        evidence : sequence of length n_samples
            Each document's mentions, ``[{"label": name, "spans": [[start,
            end], ...]}, ...]`` (a column index where no ``label_names``
            are given), or None; checked by
            :func:`xplant.evidence.check_evidence`.
        label_names : sequence of n_labels names, default=None
            Stored as ``classes_``.

        Returns
        -------
        self : MentionMatcher

        Raises
        ------
        ValueError
            An invalid parameter, a bad target, evidence of another length
            or form (:func:`~xplant.evidence.check_evidence`), a document
            without ``text_field``, or evidence with no mention of
            ``min_chars`` characters or more (nothing to match).
        """
        from ..evidence import check_evidence
        texts = self._texts(X)
        Y = self._fit_label_space(Y, len(texts), label_names)
        classes = np.asarray(self.classes_)
        checked, self.evidence_record_ = check_evidence(evidence, texts,
                                                        label_lists(Y, classes))
        column = {c: j for j, c in enumerate(classes.tolist())}
        pairs = {}
        for text, mentions in zip(texts, checked):
            for label, spans in mentions:
                words = [w for s, e in spans for w in folded_words(text[s:e])[0]]
                form = " ".join(words)
                if len(form.replace(" ", "")) >= self.min_chars:
                    key = (form, column[label])
                    pairs[key] = pairs.get(key, 0) + 1
        if not pairs:
            raise ValueError(f"the training evidence holds no mention of {self.min_chars} "
                             "characters or more: nothing to match (give evidence spans, or "
                             "lower min_chars)")
        self.mentions_ = sorted({form for form, _ in pairs})
        index = {form: i for i, form in enumerate(self.mentions_)}
        rows, cols = zip(*((index[f], j) for f, j in pairs))
        self.pairs_ = sp.csr_matrix((np.fromiter(pairs.values(), np.float64), (rows, cols)),
                                    shape=(len(self.mentions_), self.n_labels_))
        self.n_words_ = np.array([f.count(" ") + 1 for f in self.mentions_], dtype=np.int64)
        self._build()
        self.reliability_ = self._reliability(self._states(texts), Y)
        self.k_ = max(1, int(round(Y.nnz / self.n_train_documents_)))
        return self

    # -- matching -------------------------------------------------------------------------
    def _build(self):
        """The automata (and stems) of ``mentions_``: fitted, or rebuilt at load."""
        self._exact = _automaton(self.mentions_)
        if self.approximate:
            stem = _stemmer(self.language)
            self.stems_ = [" ".join(map(stem, f.split(" "))) for f in self.mentions_]
            groups = {}
            for i, s in enumerate(self.stems_):
                groups.setdefault(s, []).append(i)
            self._stem_forms = list(groups)
            self._stem_members = list(groups.values())
            self._stem = _automaton(self._stem_forms)
        else:
            self.stems_ = []

    def _texts(self, X):
        """Documents as strings: ``X`` itself, or each mapping's ``text_field`` (``"text"``
        where it is None)."""
        if isinstance(X, str) or not hasattr(X, "__len__"):
            raise ValueError("X must be a sequence of documents (strings, or mappings with "
                             "text_field), not a single string")
        out = []
        for i, doc in enumerate(X):
            if isinstance(doc, str):
                out.append(doc)
                continue
            field = self.text_field or "text"
            if not hasattr(doc, "keys"):
                raise ValueError(f"document {i} is a {type(doc).__name__}; give strings, or "
                                 "mappings holding the text at text_field ('text' where it is "
                                 "None)")
            if field not in doc or not isinstance(doc[field], str):
                raise ValueError(f"document {i} has no text field {field!r} (fields: "
                                 f"{sorted(doc)}); this model reads {field!r}: give it, or a "
                                 "model fitted on the field the documents hold")
            out.append(doc[field])
        return out

    def _matches(self, text):
        """Every match in ``text``: (pattern, state, first word, last word, offsets)."""
        words, offsets, breaks = folded_words(text)
        found = {}
        for i, first, n in _find(self._exact, words):
            found[(i, first, n)] = 0
        if self.approximate and words:
            stems = list(map(_stemmer(self.language), words))
            for g, first, n in _find(self._stem, stems):
                for i in self._stem_members[g]:
                    found.setdefault((i, first, n), 2)
        cues = NEGATION_CUES[self.language]
        out = []
        for (i, first, n), state in found.items():
            last = first + n - 1
            if self.negation and self._negated(words, breaks, first, last, cues):
                state += 1
            out.append((i, state, first, last, offsets))
        return out

    @staticmethod
    def _negated(words, breaks, first, last, cues):
        before, after = NEGATION_WINDOW
        t = first
        while t > 0 and first - t < before and not breaks[t]:
            t -= 1
            if words[t] in cues["before"]:
                return True
        t = last
        while t + 1 < len(words) and t - last < after and not breaks[t + 1]:
            t += 1
            if words[t] in cues["after"]:
                return True
        return False

    def _states(self, texts):
        """(n_docs, n_mentions) CSR of each document's best match state + 1 (0: no match)."""
        rows, cols, vals = [], [], []
        for d, text in enumerate(texts):
            best = {}
            for i, state, *_ in self._matches(text):
                best[i] = min(best.get(i, state), state)
            rows.extend([d] * len(best))
            cols.extend(best)
            vals.extend(s + 1 for s in best.values())
        return sp.csr_matrix((np.asarray(vals, np.int64), (rows, cols)),
                             shape=(len(texts), len(self.mentions_)))

    def _reliability(self, S, Y):
        """``r(m, l, s)`` for every state, on the pattern of ``pairs_``."""
        rows, cols = self.pairs_.nonzero()
        Yf = sp.csr_matrix(Y, dtype=np.float64)
        out, exact = {}, None
        for s, name in enumerate(STATES):
            A = (S == s + 1).astype(np.float64).tocsr()
            n_m = np.asarray(A.sum(axis=0)).ravel()
            n_ml = np.asarray((A.T @ Yf)[rows, cols]).ravel()
            prior = self.smoothing if exact is None else self.smoothing * exact
            r = (n_ml + prior) / (n_m[rows] + 1.0)
            out[name] = sp.csr_matrix((r, (rows, cols)), shape=self.pairs_.shape)
            exact = r if exact is None else exact
        return out

    # -- scoring --------------------------------------------------------------------------
    def _validate_X(self, X):
        return self._texts(X)

    def _match_scores(self, texts):
        """Dense (n, n_labels) scores, the reliabilities behind them, and each label's matches.

        The score of (d, l) is the best ``r · (1 + length_bonus · words)`` over
        the matches of d; its reliability ``r`` is kept with it, and every
        match of the label as ``(score, r, state, start, end)``.
        """
        S = np.zeros((len(texts), self.n_labels_), dtype=np.float64)
        P = np.zeros_like(S)
        found = [dict() for _ in texts]
        for d, text in enumerate(texts):
            for i, state, first, last, offsets in self._matches(text):
                R = self.reliability_[STATES[state]]
                lo, hi = R.indptr[i], R.indptr[i + 1]
                bonus = 1.0 + self.length_bonus * self.n_words_[i]
                span = (int(offsets[first, 0]), int(offsets[last, 1]))
                for j, r in zip(R.indices[lo:hi].tolist(), R.data[lo:hi].tolist()):
                    found[d].setdefault(j, []).append((r * bonus, r, state) + span)
                    if r * bonus > S[d, j]:
                        S[d, j], P[d, j] = r * bonus, r
        return S, P, found

    def _scores(self, X):
        return self._match_scores(X)[0]

    def _rule_scores(self, X):
        return self._match_scores(X)[1]

    def decision_function(self, X):
        """Each label's score: the best matched mention's reliability times its length bonus.

        Parameters
        ----------
        X : sequence of str or of dict
            Documents.

        Returns
        -------
        scores : ndarray of shape (n_samples, n_labels), dtype float64
            0 where no mention of the label matched.
        """
        check_is_fitted(self)
        return self._score_form(self._scores(self._validate_X(X)))

    def predict_proba(self, X):
        """Each label's probability: the reliability of the match that scored it.

        Parameters
        ----------
        X : sequence of str or of dict
            Documents.

        Returns
        -------
        proba : ndarray of shape (n_samples, n_labels), dtype float64
            In [0, 1]: the share of the training documents holding the
            best-scoring mention (in its match state) that carry the label;
            0 where no mention of the label matched.
        """
        check_is_fitted(self)
        return self._score_form(self._rule_scores(self._validate_X(X)), proba=True)

    def explain(self, X, top_labels=5, top_spans=3, *, labels=None):
        """The top labels of each document with the matched mentions behind their scores.

        Parameters
        ----------
        X : sequence of str or of dict
            Documents.
        top_labels : int, default=5
            Labels explained per document, best first (ties: the lower
            column), when ``labels`` is None.
        top_spans : int, default=3
            Matches kept per label, best first.
        labels : sequence of sequence of int, optional
            Per document, the label columns to explain instead.

        Returns
        -------
        list of dict, one per document
            ``{"labels": [{"label", "index", "score", "prob", "source",
            "spans": [{"start", "end", "text", "weight", "negated",
            "approximate"}]}]}``, the form of every ``explain`` of xplant:
            ``score`` is :meth:`decision_function`'s, ``prob``
            :meth:`predict_proba`'s, ``source`` is ``"mentions"``, and each
            span is a matched mention (offsets into the document's text,
            end exclusive) with its score as ``weight``. A label with no
            match has no span.

        Raises
        ------
        ValueError
            Bad ``top_labels``, ``top_spans`` or ``labels``, or documents
            without the model's text field.
        """
        from ..evidence._spans import check_label_lists
        from ..metrics import top_k_indices
        from ..metrics._validation import check_k
        check_is_fitted(self)
        texts = self._validate_X(X)
        top_labels, top_spans = check_k(top_labels, "top_labels"), check_k(top_spans, "top_spans")
        S, P, found = self._match_scores(texts)
        chosen = (check_label_lists(labels, len(texts), self.n_labels_) if labels is not None
                  else list(top_k_indices(S, min(top_labels, self.n_labels_))) if texts else [])
        names = np.asarray(self.classes_).tolist()
        out = []
        for d, text in enumerate(texts):
            explained = []
            for j in np.asarray(chosen[d]).tolist():
                matches = sorted(found[d].get(j, []), key=lambda m: (-m[0], m[3]))[:top_spans]
                explained.append({
                    "label": names[j], "index": j, "score": float(S[d, j]),
                    "prob": float(P[d, j]), "source": "mentions",
                    "spans": [{"start": s, "end": e, "text": text[s:e], "weight": w,
                               "negated": state % 2 == 1, "approximate": state >= 2}
                              for w, _, state, s, e in matches]})
            out.append({"labels": explained})
        return out

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.string = True
        tags.input_tags.two_d_array = False
        tags.input_tags.sparse = False
        tags.non_deterministic = False
        return tags
