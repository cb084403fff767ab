"""Scikit-learn wrappers around external XMTC libraries (optional extras).

Each library is imported only inside ``fit``; when it is missing, the
``ImportError`` names the extra that installs it. Each wrapper takes the
same ``X`` (sparse features, for example TF-IDF) and ``Y`` (0/1 indicator
matrix) as :class:`~xplant.linear.OneVsRestLinear`, and handles its
library's data quirks inside.
"""

import numbers
import os
import shutil
import tempfile
import warnings
import weakref

import numpy as np

from .._fitted_parts import FittedFields, part_fields
from .._params import StrOptions, int_at_least, number_above, number_at_least
from ..datasets import dump_xc
from ._base import SparseFeatureRanker, top_k_dense
from ._base import import_optional as _import_optional
from ._ovr import EMPTY_LABEL_SCORE


def _temporary_dir(owner, prefix):
    """A temporary folder removed when ``owner`` is garbage-collected."""
    path = tempfile.mkdtemp(prefix=prefix)
    weakref.finalize(owner, shutil.rmtree, path, True)
    return path


class NativeModel(FittedFields):
    """The fitted model of a wrapper around an XMTC library, its part ``parts_["model"]``.

    Owns ``model_`` (the library's own model object), ``model_dir_`` (the
    temporary folder of its files, for a library that keeps them on disk:
    napkinXC; None otherwise) and ``n_features_in_``. A saved folder keeps
    the model in its library's own format (the wrapper's ``_save_native``)
    and the feature count in ``config.json``; the library reads the model
    back (``_read_native``), which makes this part again.

    Fields: ``model``, ``folder`` and ``n_features_in``.
    """

    FIELDS = ("model", "folder", "n_features_in")


class _TreeWrapper(SparseFeatureRanker):
    """Common face of label-tree libraries that return top-k (label, prob) lists.

    ``predict_top_k`` asks the library's own tree search for each block's
    top k: labels the search did not reach score 0 and fill the list by
    decreasing training frequency (the frequency prior; equal frequencies:
    lower index first), as do ties between reached labels.
    """

    _score_kind = "proba"
    #: the fitted model's views: parts_["model"]
    model_, model_dir_, n_features_in_ = part_fields("model", NativeModel, "model", "folder",
                                                     "n_features_in", unset=False)

    def _default_decision_rule(self):
        from ..metrics import DecisionRule
        return DecisionRule("threshold", threshold=0.5)

    def _native_top_k(self, X, k):  # pragma: no cover - abstract
        raise NotImplementedError

    def _save_native(self, folder):  # pragma: no cover - abstract
        """Write the native model to ``folder`` in its library's own format."""
        raise NotImplementedError

    def _read_native(self, folder):  # pragma: no cover - abstract
        """The model of a folder written by :meth:`_save_native`, as a :class:`NativeModel`
        (the library reads it; its feature count is the caller's)."""
        raise NotImplementedError

    def __getstate__(self):
        """Pickle the native model as its library's own files (it holds C++ or Rust state)."""
        state = dict(super().__getstate__())   # object.__getstate__ gives __dict__ itself
        parts = dict(state.get("parts_") or {})
        native = parts.get("model")
        if native is not None and native.model is not None:
            with tempfile.TemporaryDirectory() as tmp:
                folder = os.path.join(tmp, "model")
                self._save_native(folder)
                state["_native_files"] = {
                    os.path.relpath(os.path.join(root, name), folder): open(
                        os.path.join(root, name), "rb").read()
                    for root, _, names in os.walk(folder) for name in names}
            parts["model"] = NativeModel(n_features_in=native.n_features_in)
            state["parts_"] = parts
        return state

    def __setstate__(self, state):
        files = state.pop("_native_files", None)
        super().__setstate__(state)
        if files is not None:
            with tempfile.TemporaryDirectory() as tmp:
                for name, data in files.items():
                    path = os.path.join(tmp, "model", name)
                    os.makedirs(os.path.dirname(path), exist_ok=True)
                    with open(path, "wb") as fh:
                        fh.write(data)
                native = self._read_native(os.path.join(tmp, "model"))
            native.n_features_in = self.parts_["model"].n_features_in
            self.parts_ = {**self.parts_, "model": native}

    def _fill(self, pairs, k):
        """(label, score) lists -> (n, k) arrays, missing labels scored 0."""
        n = len(pairs)
        scores = np.zeros((n, self.n_labels_))
        for i, row in enumerate(pairs):
            for label, score in row:
                if 0 <= label < self.n_labels_:
                    scores[i, label] = score
        return scores

    def _scores(self, X):
        return self._fill(self._native_top_k(X, self.n_labels_), self.n_labels_)

    def _top_k_block(self, X, k):
        # columns by decreasing training frequency: the stable top-k breaks ties
        # (the unreached labels' zeros among them) in that order
        by_freq = np.argsort(-self.label_frequency_, kind="stable")
        top, values = top_k_dense(self._fill(self._native_top_k(X, k), k)[:, by_freq], k)
        return by_freq[top], values


class NapkinXCPLT(_TreeWrapper):
    """Probabilistic label tree (napkinXC ``PLT``) as a scikit-learn estimator.

    Jasinska-Kobus et al., "Probabilistic label trees for extreme multi-label
    classification" (2020); napkinXC's hierarchical k-means tree with
    LIBLINEAR node classifiers. Needs ``pip install 'xplant[trees]'``.

    The wrapper passes features as float32 CSR and labels as plain Python
    int lists, as napkinXC wants, and keeps the model files in a temporary
    folder removed with the estimator (so a fitted wrapper cannot be
    pickled).

    Parameters
    ----------
    loss : {"log", "l2"}, default="log"
        Node classifier loss: logistic or squared hinge.
    liblinear_c : float, default=10.0
        Inverse regularisation strength of the node classifiers.
    arity : int, default=2
        Arity of the k-means tree.
    max_leaves : int, default=100
        Maximum number of labels under one pre-leaf node.
    weights_threshold : float, default=0.1
        Node weights with smaller magnitude are pruned.
    ensemble : int, default=1
        Number of trees.
    n_jobs : int, default=None
        Threads; ``None`` or -1 use all cores.
    random_state : int, default=0
        Seed of tree building.

    Attributes
    ----------
    model_ : napkinxc.models.PLT
    model_dir_ : str
        Temporary folder holding the model files.
    parts_ : dict of str to object
        The fitted parts: ``"label_space"`` (:class:`xplant._label_space.LabelSpace`),
        which the label-space attributes read, ``"model"`` (:class:`NativeModel`:
        ``model_``, its folder, ``n_features_in_``), the decision rule once
        set, and any part of your own
        (:func:`xplant.persistence.register_part`), saved with the model.
    decision_rule_ : DecisionRule
        The rule of ``predict(X)`` (``parts_["decision_rule"]``,
        :class:`xplant.metrics.DecisionRule`): the default rule (Notes)
        until one is set; ``xplant run`` sets the rule it chose on dev, and
        a saved model keeps it.
    classes_, n_labels_, label_frequency_, n_train_documents_, n_features_in_, prediction_form_
        As in :class:`~xplant.linear.OneVsRestLinear`.

    Notes
    -----
    ``predict(X)`` with no argument predicts labels with probability >= 0.5.
    """

    _parameter_constraints = {
        "loss": [StrOptions({"log", "l2"})],
        "liblinear_c": [number_above(0)],
        "arity": [int_at_least(2)],
        "max_leaves": [int_at_least(1)],
        "weights_threshold": [number_at_least(0)],
        "ensemble": [int_at_least(1)],
        "n_jobs": [numbers.Integral, None],
        "random_state": [numbers.Integral],
    }
    _requires = ("napkinxc.models", "trees", "napkinxc")

    def __init__(self, loss="log", liblinear_c=10.0, arity=2, max_leaves=100,
                 weights_threshold=0.1, ensemble=1, n_jobs=None, random_state=0):
        self.loss = loss
        self.liblinear_c = liblinear_c
        self.arity = arity
        self.max_leaves = max_leaves
        self.weights_threshold = weights_threshold
        self.ensemble = ensemble
        self.n_jobs = n_jobs
        self.random_state = random_state

    def _fit(self, X, Y, models):
        """Build the tree and train its node classifiers (``models``: napkinxc.models)."""
        self.model_dir_ = _temporary_dir(self, "xplant-napkinxc-")
        threads = 0 if self.n_jobs in (None, -1) else int(self.n_jobs)
        self.model_ = models.PLT(
            self.model_dir_, loss=self.loss, liblinear_c=float(self.liblinear_c),
            arity=int(self.arity), max_leaves=int(self.max_leaves),
            weights_threshold=float(self.weights_threshold), ensemble=int(self.ensemble),
            threads=threads, seed=int(self.random_state), verbose=0,
        )
        labels = [[int(j) for j in Y.indices[Y.indptr[i]:Y.indptr[i + 1]]] for i in range(Y.shape[0])]
        self.model_.fit(X.astype(np.float32), labels)

    def _native_top_k(self, X, k):
        return self.model_.predict_proba(X.astype(np.float32), top_k=int(k))

    def _save_native(self, folder):
        shutil.copytree(self.model_dir_, folder, dirs_exist_ok=True)

    def _read_native(self, folder):
        models = _import_optional(*self._requires)
        own = _temporary_dir(self, "xplant-napkinxc-")
        shutil.copytree(folder, own, dirs_exist_ok=True)
        model = models.PLT(own)
        model.load()
        return NativeModel(model=model, folder=own)


class OmikujiTrees(_TreeWrapper):
    """Omikuji's partitioned label trees (Parabel- or Bonsai-like).

    Prabhu et al., "Parabel" (WWW 2018) and Khandagale et al., "Bonsai"
    (2020), as implemented by Omikuji. Omikuji trains from a file in the
    Extreme Classification repository format; the wrapper writes it to a
    temporary folder and removes it after training. Needs
    ``pip install 'xplant[trees]'``.

    Parameters
    ----------
    preset : {"parabel", "bonsai"}, default="bonsai"
        ``"parabel"``: balanced 2-means trees, depth up to 20, 3 trees
        (Omikuji's defaults). ``"bonsai"``: unbalanced 100-means, depth 3.
    n_trees : int, default=None
        Override the preset's number of trees.
    linear_c : float, default=1.0
        Inverse regularisation strength of the node classifiers.
    beam_size : int, default=10
        Beam width of prediction.
    n_jobs : int, default=None
        Threads; ``None`` uses all cores.

    Attributes
    ----------
    model_ : omikuji.Model
    parts_ : dict of str to object
        The fitted parts: ``"label_space"`` (:class:`xplant._label_space.LabelSpace`),
        which the label-space attributes read, ``"model"`` (:class:`NativeModel`:
        ``model_``, its folder, ``n_features_in_``), the decision rule once
        set, and any part of your own
        (:func:`xplant.persistence.register_part`), saved with the model.
    decision_rule_ : DecisionRule
        The rule of ``predict(X)`` (``parts_["decision_rule"]``,
        :class:`xplant.metrics.DecisionRule`): the default rule (Notes)
        until one is set; ``xplant run`` sets the rule it chose on dev, and
        a saved model keeps it.
    classes_, n_labels_, label_frequency_, n_train_documents_, n_features_in_, prediction_form_
        As in :class:`~xplant.linear.OneVsRestLinear`.

    Notes
    -----
    ``predict(X)`` with no argument predicts labels with probability >= 0.5.
    The fitted model lives in Omikuji's native memory and cannot be pickled;
    use ``model_.save(path)``.
    """

    _parameter_constraints = {
        "preset": [StrOptions({"parabel", "bonsai"})],
        "n_trees": [int_at_least(1), None],
        "linear_c": [number_above(0)],
        "beam_size": [int_at_least(1)],
        "n_jobs": [int_at_least(1), None],
    }
    _requires = ("omikuji", "trees")

    def __init__(self, preset="bonsai", *, n_trees=None, linear_c=1.0, beam_size=10, n_jobs=None):
        self.preset = preset
        self.n_trees = n_trees
        self.linear_c = linear_c
        self.beam_size = beam_size
        self.n_jobs = n_jobs

    def _fit(self, X, Y, omikuji):
        """Write an XC-format file, train Omikuji on it, remove the file."""
        X.sort_indices()
        hp = omikuji.Model.default_hyper_param()
        if self.preset == "bonsai":
            hp.cluster_balanced = False
            hp.cluster_k = 100
            hp.max_depth = 3
        if self.n_trees is not None:
            hp.n_trees = int(self.n_trees)
        hp.linear_c = float(self.linear_c)
        folder = tempfile.mkdtemp(prefix="xplant-omikuji-")
        try:
            path = os.path.join(folder, "train.txt")
            dump_xc(path, X, Y)
            from .._progress import native_output
            with native_output():            # Omikuji's progress bars: plain lines in logs
                self.model_ = omikuji.Model.train_on_data(path, hp, n_threads=self.n_jobs)
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    def _native_top_k(self, X, k):
        out = []
        for i in range(X.shape[0]):
            start, stop = X.indptr[i], X.indptr[i + 1]
            pairs = list(zip(X.indices[start:stop].tolist(), X.data[start:stop].tolist()))
            out.append(self.model_.predict(pairs, beam_size=int(self.beam_size), top_k=int(k)))
        return out

    def _save_native(self, folder):
        from .._progress import native_output
        with native_output():
            self.model_.save(str(folder))

    def _read_native(self, folder):
        omikuji = _import_optional(*self._requires)
        from .._progress import native_output
        with native_output():
            return NativeModel(model=omikuji.Model.load(str(folder)))


class LibMultiLabelLinear(SparseFeatureRanker):
    """LibMultiLabel's linear one-vs-rest model (``train_1vsrest``).

    LibMultiLabel (Lin et al., "LibMultiLabel: a library for multi-label
    text classification", 2022) trains one LIBLINEAR model per label; its
    default option string ``""`` means an L2-regularised L2-loss SVM solved
    in the dual (``-s 1``), C = 1, no bias, on all physical cores. Needs
    ``pip install 'xplant[libmultilabel]'``.

    Parameters
    ----------
    options : str, default=""
        LIBLINEAR option string, passed unchanged (for example
        ``"-s 1 -c 0.5 -B 1"``).
    verbose : bool, default=False
        Show LibMultiLabel's progress bar.

    Attributes
    ----------
    model_ : libmultilabel.linear.FlatModel
        Dense weights ``(n_features, n_labels)``, as LibMultiLabel keeps them.
    parts_ : dict of str to object
        The fitted parts: ``"label_space"`` (:class:`xplant._label_space.LabelSpace`),
        which the label-space attributes read, ``"model"`` (:class:`NativeModel`:
        ``model_``, its folder, ``n_features_in_``), the decision rule once
        set, and any part of your own
        (:func:`xplant.persistence.register_part`), saved with the model.
    decision_rule_ : DecisionRule
        The rule of ``predict(X)`` (``parts_["decision_rule"]``,
        :class:`xplant.metrics.DecisionRule`): the default rule (Notes)
        until one is set; ``xplant run`` sets the rule it chose on dev, and
        a saved model keeps it.
    classes_, n_labels_, label_frequency_, n_train_documents_, n_features_in_, prediction_form_
        As in :class:`~xplant.linear.OneVsRestLinear`.

    Notes
    -----
    Labels with no training positive score ``EMPTY_LABEL_SCORE``.
    ``predict(X)`` with no argument predicts decision values >= 0.
    """

    _parameter_constraints = {"options": [str], "verbose": ["boolean"]}
    #: the fitted model's views: parts_["model"] (no folder: the model is in memory)
    model_, n_features_in_ = part_fields("model", NativeModel, "model", "n_features_in",
                                         unset=False)
    _requires = ("libmultilabel.linear", "libmultilabel", "libmultilabel")

    def __init__(self, options="", verbose=False):
        self.options = options
        self.verbose = verbose

    def _fit(self, X, Y, linear):
        """Train LibMultiLabel's one-vs-rest linear model (``linear``: libmultilabel.linear)."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PendingDeprecationWarning)  # its np.matrix weights
            self.model_ = linear.train_1vsrest(
                Y.astype(np.float64), X, options=self.options, verbose=self.verbose
            )

    def _scores(self, X):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PendingDeprecationWarning)
            scores = np.asarray(self.model_.predict_values(X), dtype=np.float64)
        scores[:, self.label_frequency_ == 0] = EMPTY_LABEL_SCORE
        return scores

    def _default_decision_rule(self):
        from ..metrics import DecisionRule
        return DecisionRule("threshold", threshold=0.0)
