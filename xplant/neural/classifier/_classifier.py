"""PlantClassifier: Stage 2 of PLANT, leveraging planted attention.

Saha Roy, Wallace & Aslam, "Don't Pay Attention, PLANT It", arXiv
2410.23066, §3.2.
"""

import numbers

import numpy as np
import torch
from sklearn.utils import ClassifierTags
from sklearn.utils.validation import check_is_fitted
from skorch.callbacks import EarlyStopping, PrintLog, ProgressBar
from skorch.utils import to_tensor

from ..._fitted_parts import PartField
from ..._labels import as_prediction_form, as_score_form, label_frequency
from ..._sigmoid import sigmoid
from ...fusion import check_n_candidates
from .._base import PlantNetBase
from ..training._checkpoint import TrainingCheckpoint, read_checkpoint, restore_checkpoint
from ..training._callbacks import DevScoring, FiniteLossGuard, ProgressiveUnfreezing
from ..._params import to_python
from ..training._torch_state import torch_state_restored
from ..parts._logit_adjustment import LogitAdjustment
from ._items import Stage2Collate
from ..training._data import TokenDataset
from ._final_choices import choose_decision, choose_epoch
from ..parts._dev_choices import DevChoices, Stage1WeightRace
from ._stage1_weight import STAGE1_WEIGHT_FALLBACK, stage1_weight_to_train
from ._shortlist import FusedScorer, ShortlistTraining, shortlist_texts
from ._network import NetworkScorer
from ._io import read_model, save_model
from ..planting._planter import AttentionPlanter
from .._settings import CLASSIFIER_CONSTRAINTS, CLASSIFIER_MODULE_DEFAULTS, decision_settings
from ._defaults import default_lr, default_phases, initial_label_bias, scored_labels
from ._planted_start import (configured_planter, planting_folder, plants_from_texts,
                             ranking_items, read_planting, stage2_items, start_from_planting)
from .._inputs import encode
from ..training._data import truncate
from ..losses import PlantLoss, stage1_loss
from ..modules import PlantNet


def _silent(*args, **kwargs):
    """A picklable no-op sink for EarlyStopping's messages."""


class PlantClassifier(PlantNetBase):
    """PLANT: label-wise attention planted by learning to rank, then trained.

    ``fit`` runs Stage 1 (an :class:`AttentionPlanter`, unless ``plant=False``
    or ``planter`` names a saved planting) and Stage 2: label-wise
    attention A = softmax(S)(H W_v), feature boosting A' = B_a + A ⊙ B_m,
    adaptive pooling, a shared head plus per-label bias, focal loss with
    label smoothing over positives and hard negatives, and progressive
    unfreezing (Saha Roy et al. 2024, §3.2).

    Parameters
    ----------
    backbone : str, default="cnn"
        "cnn" or "bigru" (word encoders trained from scratch), "hf" (the
        bundled MiniLM-L6), "hf:<folder>" (a local Hugging Face encoder),
        "llm:<folder>" (a decoder LLM with LoRA/QLoRA).
    plant : bool, default=True
        Run Stage 1. False leaves the label queries at their random
        initialisation (the LAAT-style baseline).
    planter : AttentionPlanter, str or None, default=None
        Stage 1: an unfitted planter (cloned and fitted inside ``fit``; its
        ``module__`` architecture is the classifier's, and setting it apart
        raises), a folder saved by :meth:`AttentionPlanter.save_planting` to
        reuse, or None for ``AttentionPlanter()``; ``planter__max_epochs=3`` reaches it.
    relevance : MIGRelevance or None, default=None
        Fitted inside ``fit`` when X is raw text (None: ``MIGRelevance()``
        with the backbone's tokenizer); unused for a token corpus.
    stage1_weight : float or "dev", default="dev"
        Weight of the planter's ranking loss kept in Stage 2 (0 is the
        paper: the attention is free to drift once unfrozen). "dev" trains
        Stage 2 once per weight in {0, 0.1} from the planted state and keeps
        the better on the dev ``scoring``; 0.1 trains on only while dev shows
        it ahead of 0 (:class:`~xplant.neural.classifier._stage1_weight.CandidateRace`), so
        where dev shows no difference the choice costs little more than one
        Stage 2 (its measurements are in :doc:`/benchmarks/evidence`).
    shortlist : None, "linear" or estimator, default=None
        A cheap ranker of every label, fitted on the training rows: "linear"
        is TF-IDF + one-vs-rest squared-hinge SVM with C chosen on dev; any
        unfitted estimator of texts with ``predict_top_k``,
        ``decision_function`` or ``predict_proba`` serves. None: no fusion.
    n_candidates : int or None, default=100
        Labels per document that Stage 2 scores with a shortlist: the gold
        labels plus the shortlist's top negatives in training, its top C at
        test time. None: every label (then only the fusion uses it).
    shortlist_cv : int or None, default=None
        Training candidates in-sample (None) or out-of-fold from k >= 2
        shortlist clones, so training negatives look like test negatives.
    fusion : "dev" or float, default="dev"
        α of the final score α·σ(a·s + b) + (1 − α)·σ(z) of the shortlist's
        score s and the network's logit z; "dev" chooses α in {0, 0.1, ...,
        1} and the calibration (a, b) on dev.
    decision : {"dev", "top_k", "threshold", "per_label_threshold"}, default="dev"
        The rule of ``predict``. "dev" chooses among the three by
        cross-fitted dev micro-F1 (:func:`xplant.metrics.choose_rule`); a
        rule's name fixes it. Either way its parameters are fitted on dev:
        k from 1 to ``decision__max_k``, the global threshold, or one threshold
        per label (labels with fewer than 5 dev positives take the global
        one).
    lr : float or None, default=None
        Stage 2 learning rate (AdamW), scaled per group by the unfreezing
        phases. None: :func:`default_lr`. ``optimizer__lr`` replaces it.
    max_epochs : int, default=30
        Stage 2 epoch budget; early stopping on the dev ``scoring`` may end it sooner.
    batch_size : int, default=16
        Documents per batch (batches are bucketed by length).
    validation_fraction : float or None, default=0.1
        Seeded dev split of X when ``fit`` gets no ``validation_data``.
    scoring : {"map", "precision_at_k", "ndcg_at_k"}, default="map"
        Dev metric of early stopping, ``best_epoch_`` and the ranking
        choices (α, the calibration, ``stage1_weight``).
    patience : int or None, default=6
        Epochs without a better dev ``scoring`` before training stops; the
        best epoch's weights are kept. None: no early stopping, Stage 2
        trains exactly ``max_epochs`` and the epoch is recorded as fixed
        (how :class:`~xplant.model_selection.RefitOnDev` pins the epoch
        count chosen on dev).
    random_state : int, default=0
        Seeds the weights, the batches and the dev split.
    n_jobs : int or None, default=None
        torch threads inside ``fit`` (restored after it).
    strategy : "skorch", "deepspeed" or DeepSpeedStrategy, default="skorch"
        "deepspeed" trains with DeepSpeed (:mod:`xplant.neural.distributed`);
        ``batch_size`` is then the global batch.
    checkpoint_dir : str, Path or None, default=None
        Folder of an atomic checkpoint after every epoch (and of the fitted
        shortlist); ``fit(..., resume=True)`` continues from it.
    **kwargs
        skorch's own (``device``, ``verbose``, ``callbacks``, ...) and the
        prefixed settings, each listed with its default in
        :doc:`/guide/classifier`: ``module__`` (:class:`~xplant.neural.modules.PlantNet`
        and its backbone: ``embedding_dim``, ``max_length``, ``pool_size``, ``head``, ...),
        ``criterion__`` (:class:`~xplant.neural.losses.PlantLoss`: ``gamma``,
        ``label_smoothing``, ``hard_negatives``, ...), ``optimizer__``,
        ``iterator_train__`` (``min_epoch_docs``, ``max_epoch_docs``),
        ``callbacks__unfreeze__phases``, ``decision__`` (``max_k``,
        ``logit_adjustment``; ``k``, ``threshold``, ``thresholds``: a named
        rule's parameters taken as given) and ``planter__`` (the planter's own settings).

    Attributes
    ----------
    module_ : PlantNet
    relevance_ : MIGRelevance
    planter_ : AttentionPlanter or None
    classes_ : ndarray of shape (n_labels,)
    n_labels_, n_train_documents_ : int
        Labels, and documents Stage 2 trained on (without the dev rows that
        ``validation_fraction`` holds out).
    label_frequency_ : ndarray of int64 of shape (n_labels,)
        Training documents of each label, over the same rows (the order of
        non-candidate labels, and propensities for PSP@k scorers).
    scored_labels_ : ndarray of bool of shape (n_labels,)
        The labels Stage 2's network attends and scores
        (:func:`scored_labels`): those with a training positive, or every
        label when ``fit`` plants from label texts. The others get
        probability σ(:data:`~xplant.neural.modules.UNSCORED_LOGIT`) ≈ 0
        and no share of the attention's work or of the loss.
    parts_ : dict of str to object
        The fitted parts besides the network, which the fitted attributes
        read and saving walks: ``"label_space"``
        (:class:`xplant._label_space.LabelSpace`: ``classes_``,
        ``label_frequency_``, ...), ``"relevance"`` (``relevance_``),
        ``"dev_choices"`` and ``"stage1_weight"``
        (:mod:`xplant.neural.parts._dev_choices`: ``best_epoch_``,
        ``dev_choices_``, ``stage1_weight_``, ``stage1_weight_candidates_``),
        ``"decision_rule"`` (:class:`~xplant.metrics.DecisionRule`),
        ``"logit_adjustment"``
        (:class:`~xplant.neural.parts._logit_adjustment.LogitAdjustment`),
        ``"shortlist_fusion"`` (:class:`~xplant.neural.parts._shortlist_fusion.ShortlistFusion`,
        None without a shortlist) and ``"planting"`` (``planter_``, not
        saved); and any part of your own
        (:func:`xplant.persistence.register_part`), saved with the model.
    decision_rule_ : DecisionRule
        The rule of ``predict`` (``parts_["decision_rule"]``).
    decision_ : str
        The rule ``predict`` applies: "top_k", "threshold" or
        "per_label_threshold" (``decision``, or the one chosen on dev).
    k_ : int
        k of the top-k rule (fitted whatever the rule).
    threshold_ : float
        The global threshold on the probability scale (fitted whatever the
        rule; the per-label rule's fallback).
    label_thresholds_ : ndarray of float64 of shape (n_labels,) or None
        With the per-label rule: label l is predicted when its probability
        is at least ``label_thresholds_[l]``; None under the other rules.
    best_epoch_ : int
    stage1_weight_ : float
        The weight Stage 2 trained with (``stage1_weight``, or the one
        chosen on dev).
    stage1_weight_candidates_ : list of dict or None
        With ``stage1_weight="dev"``: each candidate's ``stage1_weight``,
        best dev score (``dev_map`` by default), ``best_epoch``, ``epochs``,
        ``lr``, ``raced_out`` and ``seconds`` (the wall time of its epochs).
        Saved and loaded with the model.
    dev_choices_ : dict of str to dict
        Every choice ``fit`` made on dev, by name ("epoch", "stage1_weight",
        "fusion", "logit_adjustment", "decision", "k", "threshold"), each the record of
        :class:`~xplant.model_selection.DevChoice` (value, criterion family,
        metric, every candidate's dev score, ``on_dev``). Without labelled
        dev data every choice takes its fallback (``on_dev`` False) and the
        fit warns once with a ``NoDevDataWarning`` listing them. Saved and
        loaded with the model.
    shortlist_ : estimator or None
        The fitted shortlist.
    fusion_weight_ : float or None
        α (1 = the shortlist alone, 0 = PLANT alone on its candidates).
    shortlist_calibration_ : tuple of float
        (a, b) of σ(a·s + b), chosen on dev with α; (1, 0) is the plain sigmoid.
    logit_adjustment_ : float
        The τ the model scores with (``logit_adjustment``, or the one chosen
        on dev); 0 while it trains.
    logit_adjustment_dev_ : dict of float to float or None
        With ``logit_adjustment="dev"`` and dev data: each τ's dev micro-F1
        (a fraction) at its best k.
    n_candidates_ : int or None
        C, the labels per document Stage 2 scores (None: every label).
    prediction_form_ : dict
        The form ``predict`` answers in, read from the ``Y`` of ``fit``
        (:func:`xplant._labels.prediction_form`): CSR for a sparse ``Y`` or
        label lists, a dense array for a dense ``Y``, y's values for a 1-D y.

    Notes
    -----
    What a fitted model keeps: the network (``module_``; its label part is
    O(L · d) floats), the fitted MIGRelevance (vocabulary and the sparse
    (L, V) MIG matrix), the fitted shortlist, a few length-L arrays
    (``label_frequency_``, ``classes_``) and the fitted planter (``planter_``:
    its settings, its network and its sparse (L, V) targets). The dev split
    is released at the end of ``fit``: no dev document, dev target or
    (n_dev, L) array stays on the model or its planter.

    Examples
    --------
    >>> from xplant.neural import PlantClassifier          # doctest: +SKIP
    >>> clf = PlantClassifier(max_epochs=5).fit(texts, Y)  # doctest: +SKIP
    >>> idx, scores = clf.predict_top_k(new_texts, k=5)     # doctest: +SKIP
    """

    # the documented fitted attributes besides the network: read-only views of parts_
    decision_rule_ = PartField("decision_rule")
    decision_ = PartField("decision_rule", "rule")
    k_ = PartField("decision_rule", "k")
    threshold_ = PartField("decision_rule", "threshold")
    label_thresholds_ = PartField("decision_rule", "thresholds")
    logit_adjustment_ = PartField("logit_adjustment", "tau")
    logit_adjustment_dev_ = PartField("logit_adjustment", "dev_scores")
    shortlist_ = PartField("shortlist_fusion", "shortlist", optional=True)
    n_candidates_ = PartField("shortlist_fusion", "n_candidates", optional=True)
    fusion_weight_ = PartField("shortlist_fusion", "weight", optional=True)
    shortlist_info_ = PartField("shortlist_fusion", "info", optional=True)
    shortlist_calibration_ = PartField("shortlist_fusion", "calibration")
    best_epoch_ = PartField("dev_choices", "best_epoch", factory=DevChoices)
    dev_choices_ = PartField("dev_choices", "records", factory=DevChoices)
    stage1_weight_ = PartField("stage1_weight", "weight", factory=Stage1WeightRace)
    stage1_weight_candidates_ = PartField("stage1_weight", "candidates", factory=Stage1WeightRace)
    # the fitted planter of Stage 1, kept after fit (None: not planted, or loaded)
    planter_ = PartField("planting", settable=True, optional=True)

    def __init__(self, backbone="cnn", *, plant=True, planter=None, relevance=None,
                 stage1_weight="dev", shortlist=None, n_candidates=100, shortlist_cv=None,
                 fusion="dev", decision="dev", lr=None, max_epochs=30, batch_size=16,
                 validation_fraction=0.1, scoring="map", patience=6, random_state=0,
                 n_jobs=None, strategy="skorch", checkpoint_dir=None, **kwargs):
        super().__init__(lr=lr, max_epochs=max_epochs, batch_size=batch_size, **kwargs)
        self.backbone = backbone
        self.plant = plant
        self.planter = planter
        self.relevance = relevance
        self.stage1_weight = stage1_weight
        self.shortlist = shortlist
        self.n_candidates = n_candidates
        self.shortlist_cv = shortlist_cv
        self.fusion = fusion
        self.decision = decision
        self.validation_fraction = validation_fraction
        self.scoring = scoring
        self.patience = patience
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.strategy = strategy
        self.checkpoint_dir = checkpoint_dir

    #: skorch's prefixes plus ``decision__`` (the choices after training) and
    #: ``planter__`` (the Stage 1 estimator's settings, in the constructor too)
    prefixes_ = PlantNetBase.prefixes_ + ["decision", "planter"]

    def set_params(self, **params):
        """Set parameters (see :meth:`PlantNetBase.set_params`).

        ``decision`` and the ``decision__`` settings are read when ``fit``
        makes its choices, so setting them never re-initialises the network
        (skorch would re-initialise a component named by a prefix).
        """
        own = {k: params.pop(k) for k in list(params)
               if k == "decision" or k.startswith("decision__")}
        if own:
            from .._settings import check_renamed
            check_renamed(self, own)
            for key, value in own.items():
                setattr(self, key, value)
                if "__" in key:
                    self._params_to_validate.add(key)
        return super().set_params(**params) if params else self
    _nested_defaults = {"planter": AttentionPlanter}
    _module_defaults = CLASSIFIER_MODULE_DEFAULTS    # the module__ settings and their defaults
    _parameter_constraints = CLASSIFIER_CONSTRAINTS  # every setting's valid values (_settings)

    collate = Stage2Collate
    _default_module, _default_criterion, _default_verbose = PlantNet, PlantLoss, 1

    # -- skorch ladder -----------------------------------------------------
    @property
    def _default_callbacks(self):
        base = [cb for cb in super()._default_callbacks if cb[0] != "print_log"]
        cbs = base + [("guard", FiniteLossGuard()), ("unfreeze", ProgressiveUnfreezing())]
        if getattr(self, "dev_docs_", None) is not None:   # no dev data: train max_epochs
            cbs += [("dev_score", DevScoring(self.scoring))]
        if getattr(self, "dev_docs_", None) is not None and self.patience is not None:
            cbs += [("early_stopping", EarlyStopping(monitor="valid_" + self.scoring,
                                                     lower_is_better=False, patience=self.patience,
                                                     load_best=True, sink=_silent))]
        if self.checkpoint_dir is not None:                 # after early stopping (its state)
            cbs += [("checkpoint", TrainingCheckpoint(self.checkpoint_dir))]
        if self.verbose:
            cbs += [("progress", ProgressBar()), ("print_log", PrintLog())]
        return cbs

    def get_split_datasets(self, X, y=None, **fit_params):
        """No skorch validation pass: with dev data, :class:`DevScoring` makes
        one pass over dev per epoch and records both the dev scores and
        ``valid_loss`` (:meth:`_dev_scores`)."""
        return X, None

    def initialize_module(self):
        from .._settings import network_settings
        self.module_ = self.module(self.build_encoder(), self.n_labels_,
                                   **network_settings(self._module_settings()))
        self.module_.score_only(getattr(self, "scored_labels_", None))
        return self

    def initialize_criterion(self):
        self.criterion_ = self.criterion(**self.get_params_for("criterion"))
        return self

    def initialize_optimizer(self, triggered_directly=None):
        named = dict(self.module_.named_parameters())
        groups = []
        for gname, names in self.module_.parameter_groups().items():
            if names:
                groups.append({"params": [named[n] for n in names], "lr": 0.0,
                               "name": gname, "param_names": names})
        return self.make_optimizer(groups)

    def _default_lr(self):
        """``lr=None``: :func:`default_lr` for the backbone and the Stage 2 weight.

        The weight is ``stage1_weight_`` once ``fit`` has resolved it (each
        candidate's, inside ``stage1_weight="dev"``); before that, the fixed
        ``stage1_weight`` or the fallback of ``"dev"``.
        """
        weight = getattr(self, "stage1_weight_", None)
        if weight is None:
            weight = (STAGE1_WEIGHT_FALLBACK if self.stage1_weight == "dev"
                      else float(self.stage1_weight))
        return default_lr(self.backbone, weight)

    def resolve_phases(self):
        """Set ``phases_``: ``callbacks__unfreeze__phases``, or :func:`default_phases`
        at :meth:`effective_lr`."""
        phases = self._phases()
        self.phases_ = to_python(phases if phases is not None
                                 else default_phases(self.backbone, self.effective_lr()))
        return self

    def _phases(self):
        return getattr(self, "callbacks__unfreeze__phases", None)

    def _criterion_settings(self):
        """The loss's settings, :class:`PlantLoss`'s defaults filled in."""
        return self._criterion_defaults()

    def _more_resolved(self):
        from .._settings import decision_settings
        return {"decision__" + k: v for k, v in decision_settings(self).items()}

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.estimator_type = "classifier"
        # labels are 0/1 columns; a 1-D multi-class y is refused (xplant._labels.check_targets)
        tags.classifier_tags = ClassifierTags(multi_class=False, multi_label=True)
        tags.target_tags.required = True
        tags.target_tags.multi_output = True
        tags.input_tags.string = True
        return tags

    # -- fit -------------------------------------------------------------------
    def fit(self, X, Y, validation_data=None, *, resume=False, label_names=None,
            label_descriptions=None, label_synonyms=None, label_parents=None, evidence=None):
        """Fit Stage 1 (unless disabled) and Stage 2.

        Parameters
        ----------
        X : list of str, token corpus from MIGRelevance.transform, or {ndarray, sparse matrix} of shape (n, n_features)
            Raw texts, a token corpus, or a non-negative document-token
            count matrix read as bags of token ids, column j being id j
            (:func:`~xplant.neural._inputs.is_count_matrix`; a word
            backbone only). ``predict`` then takes the same kind of input.
        Y : {array-like, sparse matrix} of shape (n, n_labels), 1-D binary y, or label lists
            Read by :func:`xplant._labels.check_targets` (a rectangular 0/1
            array-like is a matrix; sets or rows of strings are label lists).
            ``predict`` answers in the same form
            (:func:`xplant._labels.prediction_form`).
        validation_data : tuple (X_dev, Y_dev) or None
            The official dev split (raw texts or a token corpus of the same
            MIGRelevance); else a seeded ``validation_fraction`` split of X.
        resume : bool, default=False
            Continue from the latest checkpoint in ``checkpoint_dir`` (same
            weights, optimizer state, history, unfreezing schedule, early
            stopping state and RNG states), skipping Stage 1 when the
            checkpoint exists; with no checkpoint there yet, train from the
            start. Give the same data and parameters as the interrupted fit.
            After a resumed fit ``planter_`` is None (Stage 1 ran in the
            interrupted process).
        label_names : array-like of shape (n_labels,) or None
            The label names (codes) of Y's columns, or the label space of
            label lists; stored as ``classes_``, saved with the model and
            used by ``explain`` and ``xplant predict``. None: the sorted
            labels of label lists, else ``0..n_labels-1``.
        label_descriptions, label_synonyms, label_parents : sequences of length n_labels, optional
            Passed to the planter's ``fit`` (with ``label_names``): labels
            with no training document are planted on their descriptions'
            corpus tokens, and a label without targets borrows its
            relatives' query (:class:`AttentionPlanter`). None: the plain
            planting.
        evidence : sequence of length n_samples, optional
            Gold evidence spans into the texts X, each document's
            ``[{"label": name, "spans": [[start, end], ...]}, ...]`` or None
            (:func:`xplant.evidence.check_evidence`). Stage 1 plants a
            (document, label) pair with a mention on the tokens of its spans,
            above the label's MIG tokens, and every other pair on MIG
            (:class:`AttentionPlanter`); with ``stage1_weight`` > 0 Stage 2's
            ranking loss keeps the same targets. Needs raw texts X. None: MIG
            planting.

        Returns
        -------
        self : PlantClassifier
            Fitted: the planted and trained network and the parts chosen on
            dev (``dev_choices_``).

        Raises
        ------
        ValueError
            Invalid parameters, misaligned X/Y, non-binary Y, no positive
            label at all, or a token corpus from another tokenizer;
            ``resume=True`` without ``checkpoint_dir`` or with a checkpoint of
            other data.
        FloatingPointError
            A NaN or inf training loss (the last epoch's checkpoint is kept).

        Warns
        -----
        DegenerateModelWarning
            After an epoch whose dev predictions (probability > 0.5) cover
            more than half of the labels per document, or reach recall >= 0.99
            at precision < 0.01; ``history`` records
            ``valid_mean_predicted_labels`` every epoch.
        """
        with torch_state_restored():
            return self._fit(X, Y, validation_data, resume=resume, label_names=label_names,
                             label_descriptions=label_descriptions,
                             label_synonyms=label_synonyms, label_parents=label_parents,
                             evidence=evidence)

    def _fit(self, X, Y, validation_data, *, resume, label_names, label_descriptions,
             label_synonyms, label_parents, evidence=None):
        data = self._prepare_fit(X, Y, validation_data, resume=resume, label_names=label_names,
                                 evidence=evidence)
        Y, docs, tr, dv = data.Y, data.docs, data.tr, data.dv
        train_docs, train_pos, dev_docs, Yd = data.train_docs, data.train_pos, data.dev_docs, data.Y_dev
        # the rows Stage 2 trains on: validation_fraction's dev rows are not counted
        self.label_frequency_ = label_frequency(Y[tr])
        # a dev split that cannot guide a choice (no positive label, or none on a label with
        # training documents) chooses nothing: it is no labelled dev data
        from ...model_selection import dev_usability
        usable = dev_usability(Yd if dev_docs is not None else None, self.label_frequency_)
        self._no_dev_reason_ = ("no dev split (validation_data=None, validation_fraction=None)"
                               if dev_docs is None else usable.reason)
        if dev_docs is not None and not usable.usable:
            dev_docs = Yd = None
            validation_data = None
        self.n_train_documents_ = len(tr)
        self.scored_labels_ = scored_labels(
            self.label_frequency_, planted_from_texts=plants_from_texts(
                self.plant, self.planter, any(v is not None for v in (
                    label_descriptions, label_synonyms, label_parents))))
        self.dev_docs_, self.dev_Y_ = dev_docs, Yd
        self.dev_dataset_ = None if dev_docs is None else TokenDataset(dev_docs, data.dev_pos)
        self.stage1_weight_ = None      # resolved below; the rate of lr=None follows it
        self.dev_choices_ = {}          # every choice made on dev (choose_on_dev records)
        # the fitted parts (the PartField views above): τ = 0 while the network trains
        self.parts_ = {**self.parts_, "decision_rule": None, "shortlist_fusion": None,
                       "logit_adjustment": LogitAdjustment(0.0, None, self._log_prior())}
        self.n_fit_train_ = len(train_docs)
        n_candidates = (None if self.shortlist is None
                        else check_n_candidates(self.n_candidates, self.n_labels_))
        self.initialize()
        self._init_label_bias(Y[tr])
        cands = self._fit_shortlist(X, docs, tr, dv, validation_data, dev_docs, Y, Yd,
                                    n_candidates, resume=resume)
        self.planter_ = None
        weight = stage1_weight_to_train(self, dev_Y=Yd if dev_docs is not None else None)
        on_dev = weight == "dev"
        self.stage1_weight_ = 0.0 if on_dev else weight
        self.stage1_weight_candidates_ = None
        self.resolve_phases()           # fit_stage2_on_dev resolves them per candidate
        ckpt = read_checkpoint(self.checkpoint_dir) if resume else None
        if ckpt is not None:           # Stage 1 ran before the first checkpoint: not again
            restore_checkpoint(self, ckpt)
        elif self.plant:
            described = {k: v for k, v in (("label_descriptions", label_descriptions),
                         ("label_synonyms", label_synonyms), ("label_parents", label_parents)) if v is not None}
            self._plant(train_docs, Y[tr], dev_docs, Yd, resume=resume, described=described,
                        evidence=data.train_evidence)

        def dataset():
            return self._train_dataset(train_docs, train_pos, Y[tr], cands,
                                       evidence=data.train_evidence)

        def fit_on_dev(make_dataset):    # Stage 2 per candidate weight, from the planted state
            from ._stage1_weight import fit_stage2_on_dev
            self.stage1_weight_candidates_ = fit_stage2_on_dev(self, make_dataset, resume=resume)

        self._train(dataset, ckpt, fit=fit_on_dev if on_dev else None)
        epoch = choose_epoch(self.history, self.scoring, self.patience)
        self.best_epoch_, self.dev_choices_["epoch"] = int(epoch.value), epoch.to_dict()
        scores = self._choose_scoring()      # the dev scores, once τ and the fusion are chosen
        has_dev = self.dev_docs_ is not None and self.dev_Y_.nnz > 0
        rule = choose_decision(
            self.decision, decision_settings(self), Y[tr], self.dev_Y_ if has_dev else None,
            lambda: scores if scores is not None else
            self._network().probabilities(self.dev_docs_))
        self.parts_["decision_rule"] = rule
        self.dev_choices_.update({n: c.to_dict() for n, c in rule.choices.items()})
        self._release_dev_split()
        self._warn_fallbacks()
        return self

    def _warn_fallbacks(self):
        """One :class:`~xplant.model_selection.NoDevDataWarning` for every choice of
        this fit that took its fallback (no labelled dev data)."""
        fell = {n: c["value"] for n, c in self.dev_choices_.items()
                if not c["on_dev"] and not c.get("fixed")}
        if fell:
            import warnings
            from ...model_selection import NoDevDataWarning
            warnings.warn(f"{self._no_dev_reason_}: no labelled dev data to choose on, so "
                          "these choices took their fallbacks: "
                          + ", ".join(f"{n}={v!r}" for n, v in fell.items())
                          + ". Pass validation_data with labelled documents (or a "
                          "validation_fraction), or set the values yourself",
                          NoDevDataWarning, stacklevel=3)

    def _ready_after_loading(self):
        """The training-time state of a model just loaded (its fitted parts restored): a
        fresh generator, the unfreezing phases, no dev split."""
        self.rng_ = np.random.default_rng(self.random_state)
        self.phases_ = self._phases() if self._phases() is not None else []
        self._release_dev_split()

    def _release_dev_split(self):
        """Drop what only training needed: the dev documents, targets and the shortlist's
        share of the fit (its dev view, an (n_dev, L) order), here and in the fitted planter."""
        self.dev_docs_ = self.dev_Y_ = self.dev_dataset_ = self.shortlist_training_ = None
        if getattr(self, "planter_", None) is not None:
            self.planter_.dev_dataset_ = self.planter_.dev_full_ = None

    # -- Stage 1 inside fit (_planted_start.py) -------------------------------
    def _plant(self, train_docs, Y_train, dev_docs, Y_dev, resume=False, described=None,
               evidence=None):
        """Run Stage 1 (or read the saved planting given as ``planter``) and start the
        network from it (:func:`~xplant.neural.classifier._planted_start.start_from_planting`)."""
        folder = planting_folder(self.planter)
        if folder is not None:
            state = read_planting(folder, self.n_labels_, self.relevance_)
        else:
            planter = configured_planter(self)
            # the classifier's checked rows and encoded documents, not a second check
            resume = resume and not planter._uses_deepspeed()
            planter._start_fit(resume)
            planter.classes_, planter.relevance_ = self.classes_, self.relevance_
            data = planter._split_fit_data(Y_train, train_docs, dev_docs, Y_dev, evidence)
            planter.evidence_record_ = self.evidence_record_
            planter._fit_prepared(data, resume=resume, **(described or {}))
            self.planter_ = planter
            state = planter.module_.state_dict()
        start_from_planting(self.module_, state)

    def _train_dataset(self, train_docs, train_pos, Y_train, candidates=None, evidence=None):
        """Stage 2 training items; with ``stage1_weight`` > 0 also Stage 1's ranking items
        (taking the rows' gold ``evidence`` targets as Stage 1 did); with shortlist
        ``candidates`` (one label-id array per document), each document's candidates."""
        ranking = None
        if self.stage1_weight_:
            planter = self.planter_
            if planter is None:
                planter = self.planter if isinstance(self.planter, AttentionPlanter) \
                    else AttentionPlanter()
            # the ranking loss of every anchored batch (not looked up per batch)
            self.stage1_loss_params_ = planter._criterion_defaults()
            ranking = ranking_items(planter, self.relevance_, train_docs, train_pos, Y_train,
                                    from_folder=planting_folder(self.planter) is not None,
                                    generator=self.rng_, evidence=evidence)
        return stage2_items(train_docs, train_pos, candidates, ranking)

    # -- the shortlist inside fit (_shortlist.py) ------------------------------
    def _fit_shortlist(self, X, docs, tr, dv, validation_data, dev_docs, Y, Yd, n_candidates,
                       resume=False):
        """Fit the shortlist (:meth:`ShortlistTraining.fit`): its part
        ``parts_["shortlist_fusion"]``, and ``shortlist_training_`` until the end of fit.

        Returns each training document's candidates, or None when Stage 2
        scores every label.
        """
        self.shortlist_training_ = self.parts_["shortlist_fusion"] = None
        if self.shortlist is None:
            return None
        texts = shortlist_texts(X, docs, self.relevance_)
        if dv is not None:                      # validation_fraction rows of X
            dev_texts = [texts[i] for i in dv]
        elif validation_data is not None:
            dev_texts = shortlist_texts(validation_data[0], dev_docs, self.relevance_)
        else:
            dev_texts = None
        stage, cands = ShortlistTraining.fit(self, texts, tr, dev_texts, Y, Yd, n_candidates,
                                             resume=resume)
        self.shortlist_training_, self.parts_["shortlist_fusion"] = stage, stage.fusion
        if "choice" in stage.fusion.info:        # "linear": its C, chosen on dev
            self.dev_choices_["shortlist_C"] = stage.fusion.info["choice"]
        return cands

    def _dev_scores(self):
        """Dev scores for early stopping and the dev loss, from one pass over dev.

        Returns ``(scores, loss, tail)``: the scores of PLANT alone on its
        test-time candidates, the Stage 2 loss on dev (the history's
        ``valid_loss``; skorch's own validation pass, a second forward pass
        over dev each epoch, is not run), and what stands for the rest of
        the labels, as keyword arguments of
        :func:`~xplant.neural.training._callbacks.score_by_name` and
        :func:`~xplant.neural.training._callbacks.degenerate_check`. With fewer
        candidates than labels (``n_candidates`` < L) the scores are the
        (n_dev, C) candidates' σ(z), floored as :func:`~xplant.fusion.dense_scores` floors them,
        and ``tail`` is ``{"candidates", "rank"}`` (the candidates and
        their fixed tail order): every metric and the collapse check read
        them to the last digit as they would the (n_dev, L) scores of
        ``dense_scores``, which are never built (exact for MAP and for a
        metric at any k; see ``score_by_name``). Otherwise ``scores`` are
        (n_dev, L) and ``tail`` is empty: σ of the network's logits, the
        model's own output (with every label a candidate, the dense scores
        of those candidates, built in that one array without a permuted
        copy: :func:`~xplant.fusion.every_label_scores`).

        Without a shortlist, or with every label a candidate, the loss is
        the training loss over all labels (positives and hard negatives);
        with ``n_candidates`` < L it is over each document's test-time
        candidates.

        With a shortlist, no α is swept here (nothing per epoch is chosen
        with it): the α chosen after the fit and its fused score are
        recorded on the history's last row (``valid_fusion_weight``,
        ``valid_fused_<scoring>``). Early stopping follows PLANT's own score
        (α = 0): the fused score is at least the shortlist's alone, so while
        the network is still weak it stays flat at that level and would stop
        the fit before the network has learnt anything (docs/benchmarks/shortlist.md,
        section "What the fit chooses, measured").
        """
        net, stage = self._network(), getattr(self, "shortlist_training_", None)
        if stage is None or stage.dev_view is None:
            logits = net.logits(self.dev_docs_)
            return sigmoid(logits), self._dev_loss(logits), {}
        return stage.dev_scores(net, self.dev_docs_, self._dev_loss)

    def _dev_loss(self, logits, candidates=None):
        """Mean Stage 2 loss over the dev documents (float).

        ``logits`` (n_dev, L) are scored as in training (positives and hard
        negatives); with ``candidates`` (n_dev, C) they are the logits of
        those labels, scored against the dev targets there (the criterion's
        shortlist form, as in training).
        """
        from ..training._data import pad_batch
        positives = self.dev_dataset_.positives
        scored = self._scored_mask(device="cpu")
        total, n = 0.0, logits.shape[0]
        for lo in range(0, n, 256):                # chunks: the loss is a mean over documents
            z = torch.from_numpy(np.ascontiguousarray(logits[lo:lo + 256], dtype=np.float32))
            rows = range(lo, min(n, lo + 256))
            if candidates is None:
                target, _ = pad_batch([positives[i] for i in rows], pad_value=-1, min_len=1)
                target = target.long()
            else:                                  # targets at the candidates, never (n, L)
                y = np.stack([np.isin(candidates[i], positives[i]) for i in rows])
                target = {"target": torch.from_numpy(y.astype(np.float32)),
                          "keep": torch.ones(z.shape, dtype=torch.bool)}
            keep = scored if scored is None or candidates is None else \
                scored[torch.from_numpy(np.asarray(candidates[lo:lo + 256], dtype=np.int64))]
            with torch.no_grad():
                total += float(self.criterion_(z, target, scored=keep)) * z.shape[0]
        return total / max(1, n)

    def _log_prior(self):
        """log p_l of each label (float64, (n_labels,)): the logit adjustment's prior."""
        from ..parts._logit_adjustment import log_prior
        return log_prior(self.label_frequency_, self.n_train_documents_)

    def _choose_scoring(self):
        """α and the calibration, then τ, once more on dev after the best epoch is restored.

        With a shortlist, α and the calibration are chosen at τ = 0 by the
        dev ``scoring`` metric (:meth:`ShortlistTraining.choose`; recorded
        on the history's last row as ``valid_fusion_weight`` and
        ``valid_fused_<scoring>``); then the logit adjustment τ by
        :meth:`LogitAdjustment.choose`, from one pass of the network over
        dev. Each is a :func:`~xplant.model_selection.choose_on_dev` choice
        recorded in ``dev_choices_``; without labelled dev data each takes
        its fallback with a ``NoDevDataWarning`` (α: the fixed ``fusion``,
        0.5 for ``"dev"``, with the plain sigmoid; τ: 0). Returns the dev
        scores at the choice (for the decision rule), or None without
        labelled dev data.
        """
        from ..parts._logit_adjustment import adjust_logits, check_logit_adjustment
        from ...fusion import check_fusion
        decision = decision_settings(self)
        tau = check_logit_adjustment(decision["logit_adjustment"])
        log_p = self._log_prior()
        has_dev = self.dev_docs_ is not None and self.dev_Y_.nnz > 0
        scores_at = None
        net, stage = self._network(), self.shortlist_training_
        if stage is not None:
            choice, scores_at = stage.choose(self.fusion, self.scoring, net,
                                             self.dev_docs_ if has_dev else None, self.dev_Y_,
                                             log_p)
            if has_dev and not isinstance(check_fusion(self.fusion), tuple) and len(self.history):
                self.history.record("valid_fusion_weight", choice.value[0])
                self.history.record("valid_fused_" + self.scoring,
                                    max(v for _, v in choice.scores))
            self.dev_choices_["fusion"] = choice.to_dict()
        elif has_dev:
            z = net.logits(self.dev_docs_, tau=0.0)

            def scores_at(t):
                return sigmoid(adjust_logits(z, log_p, t))
        part, scores = LogitAdjustment.choose(tau, log_p, self.dev_Y_, scores_at,
                                              max_k=decision["max_k"])
        self.parts_["logit_adjustment"] = part
        self.dev_choices_["logit_adjustment"] = part.choice.to_dict()
        if scores_at is None:
            return None
        return scores if scores is not None else scores_at(part.tau)


    def infer(self, x, **fit_params):
        if isinstance(x, dict) and ("rank" in x or "candidates" in x):
            return self.module_(**{k: v.to(self.device) for k, v in x.items()})
        return super().infer(x, **fit_params)

    def _scored_mask(self, device=None):
        """``scored_labels_`` as a bool tensor on ``device`` (the net's), or None
        when every label is scored (the loss then reads every label)."""
        scored = getattr(self, "scored_labels_", None)
        if scored is None or scored.all():
            return None
        return torch.as_tensor(scored, device=self.device if device is None else device)

    def get_loss(self, y_pred, y_true, X=None, training=False):
        """Stage 2 loss; plus ``stage1_weight`` × the ranking loss on anchored batches."""
        if isinstance(y_true, dict):                  # shortlist candidates
            logits, s = y_pred if isinstance(y_pred, tuple) else (y_pred, None)
            y = {k: v.to(self.device) for k, v in y_true.items()}
            scored = self._scored_mask()
            if scored is not None:
                scored = scored[X["candidates"].to(self.device)]
            loss = self.criterion_(logits, {"target": y["target"], "keep": y["keep"]},
                                   scored=scored)
            if s is not None:
                loss = loss + self.stage1_weight_ * stage1_loss(s, y["rel"], y["valid"],
                                                               **self.stage1_loss_params_)
            return loss
        scored = self._scored_mask()
        if not isinstance(y_pred, tuple):
            return self.criterion_(y_pred, to_tensor(y_true, device=self.device), scored=scored)
        logits, s = y_pred
        pos, rel, valid = (t.to(self.device) for t in y_true)
        rank = stage1_loss(s, rel, valid, **self.stage1_loss_params_)
        return self.criterion_(logits, pos, scored=scored) + self.stage1_weight_ * rank

    @torch.no_grad()
    def _init_label_bias(self, Y_train):
        """Start each label's bias at the log-odds of its mean training target
        (:func:`~xplant.neural.classifier._defaults.initial_label_bias`)."""
        crit = self._criterion_settings()
        prior = initial_label_bias(Y_train, crit["label_smoothing"], crit["smoothing_form"])
        self.module_.label_bias.copy_(torch.as_tensor(prior, dtype=self.module_.label_bias.dtype))

    # -- prediction (NetworkScorer in _network.py, FusedScorer in _shortlist.py) --------
    def _network(self):
        """The trained network with its logit adjustment, as a :class:`NetworkScorer`."""
        part = self.__dict__.get("parts_", {}).get("logit_adjustment")
        if part is None:                       # no fitted part (yet): τ = 0
            part = LogitAdjustment(0.0, None, None)
        return NetworkScorer(self.module_, part, pad_id=self.relevance_.pad_id_,
                             n_labels=self.n_labels_, device=self.device,
                             batch_size=self.batch_size)

    def _fused_scorer(self):
        """The fitted shortlist fusion and the network, as a :class:`FusedScorer`."""
        return FusedScorer(self.parts_["shortlist_fusion"], self._network(),
                           self.label_frequency_)

    def _docs(self, X):
        check_is_fitted(self, "module_")
        return truncate(encode(X, self.relevance_, self._max_length), self._max_length)

    def decision_function(self, X):
        """The ranking score: logits, whose σ is :meth:`predict_proba`.

        Without a shortlist, PLANT's logits z − τ · log p
        (``logit_adjustment_``), float32. With a shortlist, logit(p) of the
        fused probability p of :meth:`predict_proba`
        (:func:`xplant.fusion.logit`, float64; fusion is defined on
        probabilities): strictly increasing in p, so it ranks the labels as
        :meth:`predict_proba` does, ties included, and a probability that
        saturates at 1.0 gets a finite logit above every other.

        Parameters
        ----------
        X : list of str or token corpus
            Raw documents, or the token corpus of the fitted MIGRelevance.

        Returns
        -------
        scores : ndarray of shape (n_samples, n_labels)
            Shape (n_samples,) when fitted on a 1-D ``y``
            (:func:`xplant._labels.as_score_form`).
        """
        if getattr(self, "shortlist_", None) is not None:
            from ...fusion import logit
            return self._score_form(logit(self._proba(X)))
        docs = self._docs(X)                 # NotFittedError before fit
        return self._score_form(self._network().logits(docs))

    def _score_form(self, S, *, proba=False):
        """Scores in the form of the fitted target (:func:`xplant._labels.as_score_form`)."""
        return as_score_form(S, getattr(self, "prediction_form_", None), proba=proba)

    def predict_proba(self, X):
        """Label probabilities σ(z − τ · log p), shape (n_samples, n_labels), float32.

        z is PLANT's logit and τ · log p its logit adjustment
        (``logit_adjustment_``; τ = 0 gives σ(z)). One sigmoid, no (n, 2, L)
        stacking. With a shortlist, the fused
        probabilities of each document's candidates; every other label
        scores strictly below the row's lowest candidate, in the
        shortlist's order, then by training frequency. Raises
        NotFittedError before fit. Shape (n_samples, 2), the columns
        1 − p and p, when fitted on a 1-D ``y``
        (:func:`xplant._labels.as_score_form`).

        Parameters
        ----------
        X : list of str or token corpus
            Raw documents, or the token corpus of the fitted MIGRelevance.
        """
        return self._score_form(self._proba(X), proba=True)

    def _proba(self, X):
        """The (n_samples, n_labels) probabilities of :meth:`predict_proba`."""
        docs = self._docs(X)
        if getattr(self, "shortlist_", None) is not None:
            texts = shortlist_texts(X, docs, self.relevance_)
            return self._fused_scorer().dense(docs, texts).astype(np.float32)
        return self._network().probabilities(docs)

    def predict_top_k(self, X, k=5):
        """Top-k labels and probabilities without a dense (n, L) matrix.

        Labels are ranked by their logits, not by the probabilities: σ of
        two logits above about 17 is exactly 1.0 in float32, so the
        probabilities tie where the logits do not. Only equal logits go to
        the lower label index. k larger than the number of labels returns
        every label.

        Parameters
        ----------
        X : list of str or token corpus
            Raw documents, or the token corpus of the fitted MIGRelevance.
        k : int, default=5
            Labels per document.

        Returns
        -------
        indices : ndarray of int64 of shape (n_samples, min(k, n_labels))
            Best first.
        scores : ndarray of float32 of shape (n_samples, min(k, n_labels))
            Their probabilities.
        """
        if not isinstance(k, numbers.Integral) or k < 1:
            raise ValueError(f"k must be a positive integer, got {k!r}")
        docs = self._docs(X)
        k = int(min(k, self.n_labels_))
        if getattr(self, "shortlist_", None) is not None:
            ind, sc = self._fused_scorer().top_k(docs, shortlist_texts(X, docs, self.relevance_),
                                                 k)
            return ind, sc.astype(np.float32)
        return self._network().top_k(docs, k)

    def explain(self, X, top_labels=5, top_spans=3, *, cut=None, labels=None):
        """The top labels of each document with the text spans their attention points at.

        Parameters
        ----------
        X : list of str
            Raw documents (offsets refer to these strings).
        top_labels : int, default=5
            Labels explained per document, by predicted probability.
        top_spans : int, default=3
            Spans kept per label.
        cut : float or None
            Attention cut for merging tokens into spans; None uses the rule
            of :func:`xplant.evidence.merge_spans` (half the largest weight).
        labels : sequence of sequence of int, optional
            Per document, the label columns to explain instead of its top
            labels (``top_labels`` is then ignored; an empty sequence gives
            no labels). Their ``prob`` is the network's own σ(logit) (with
            its ``logit_adjustment_``), also with a shortlist: the report uses this to show the evidence of
            labels another score ranked, e.g. zero-shot labels.

        Returns
        -------
        list of dict, one per document
            ``{"labels": [{"label", "index", "prob", "spans": [{"start",
            "end", "text", "weight"}]}]}``; ``text == document[start:end]``,
            ``weight`` is attention mass (the sum over the span's tokens).

        Notes
        -----
        Adjacent tokens above the cut are merged into one span and spans are
        snapped to word boundaries (:func:`xplant.evidence.merge_spans`; :doc:`/guide/evidence`,
        section "Spans from token weights"). Token offsets
        come from the same tokenizer the model attends over (word or
        WordPiece), so they map back to the original string, unicode
        included.
        """
        from ...evidence import merge_spans
        from .._inputs import check_texts
        check_is_fitted(self, "module_")
        texts = check_texts(X)
        if not isinstance(top_labels, numbers.Integral) or top_labels < 1:
            raise ValueError(f"top_labels must be a positive integer, got {top_labels!r}")
        ids_list, offsets = self.relevance_.tokenize(texts, return_offsets=True,
                                                     max_length=self._max_length)
        net = self._network()
        out = []
        m = int(min(top_labels, self.n_labels_))
        from ...metrics import top_k_indices
        from ...evidence._spans import check_label_lists
        chosen = None if labels is None else check_label_lists(labels, len(texts), self.n_labels_)
        fused = self.predict_top_k(texts, m) if getattr(self, "shortlist_", None) is not None \
            and chosen is None else None
        for i, (text, ids, off) in enumerate(zip(texts, ids_list, offsets)):
            ids = ids[: self._max_length] if self._max_length else ids
            off = off[: len(ids)]
            if chosen is not None:    # the network's own probabilities of the given labels
                top = chosen[i]
                if top.size == 0:
                    out.append({"labels": []})
                    continue
                probs = net.document_probabilities(ids, top)
            elif fused is None:
                probs = net.document_probabilities(ids)
                top = top_k_indices(probs[None], m)[0]
            else:                     # fused scores of the shortlist's candidates
                top = fused[0][i]
                probs = np.zeros(self.n_labels_, dtype=np.float32)
                probs[top] = fused[1][i]
            att = net.attention(ids, top)
            labels = []
            for j, lab in enumerate(top):
                spans = merge_spans(off, att[j, :len(ids)].numpy(), cut=cut, top_spans=top_spans,
                                    text=text) if len(ids) else []
                labels.append({"label": self.classes_[lab].item() if hasattr(self.classes_[lab], "item")
                               else self.classes_[lab], "index": int(lab), "prob": float(probs[lab]),
                               "spans": spans})
            out.append({"labels": labels})
        return out

    def predict(self, X):
        """0/1 predictions by the fitted rule ``decision_rule_``.

        The top-k rule takes the labels of :meth:`predict_top_k`, ranked by
        the scores that break ties of saturated probabilities; the threshold
        rules compare :meth:`predict_proba` with ``threshold_`` or
        ``label_thresholds_`` (:meth:`xplant.metrics.DecisionRule.apply`).

        Parameters
        ----------
        X : list of str or token corpus of length n_samples
            As in :meth:`predict_proba`.

        Returns
        -------
        Y_pred : csr_matrix of int64, ndarray of shape (n_samples, n_labels), or ndarray of shape (n_samples,)
            In the form of the ``Y`` given to ``fit`` (``prediction_form_``,
            :func:`xplant._labels.prediction_form`): CSR for a sparse ``Y``
            or label lists, a dense array of ``Y``'s dtype for a dense
            ``Y``, ``y``'s values for a 1-D ``y``.
        """
        check_is_fitted(self, "module_")
        rule = self.decision_rule_
        if rule.rule == "top_k":
            P = rule.apply(None, y_top_k=self.predict_top_k(X, rule.k)[0], n_labels=self.n_labels_)
        else:
            P = rule.apply(self._proba(X))
        return as_prediction_form(P, getattr(self, "prediction_form_", None))

    def fusion_scores(self, X, alphas, *, logit_adjustment=None):
        """(n, L) scores of ``X`` at several fusion weights, from one pass of each model.

        The shortlist and the network score X once; each α re-mixes them
        (α = 0: PLANT alone on its candidates, α = 1: the shortlist alone),
        so rows of a results table can report them side by side without
        refitting.

        Parameters
        ----------
        X : list of str or token corpus
            Raw documents, or the token corpus of the fitted MIGRelevance.
        alphas : sequence of float in [0, 1]
            The fusion weights to score.
        logit_adjustment : float >= 0 or None, default=None
            τ of the network's logit adjustment; None: the fitted
            ``logit_adjustment_`` (0 gives the network as trained).

        Returns
        -------
        dict of float to ndarray of float64 of shape (n_samples, n_labels)

        Raises
        ------
        ValueError
            When the classifier has no shortlist, an α is not a number in
            [0, 1], or ``logit_adjustment`` is not None or a number >= 0.
        """
        if getattr(self, "shortlist_", None) is None:
            raise ValueError("fusion_scores needs a PlantClassifier fitted with a shortlist")
        from ..._params import check_param
        for a in alphas:
            check_param("each of alphas", a, low=0.0, high=1.0)
        src = self.fusion_sources(X, logit_adjustment=logit_adjustment)
        from ...fusion import calibrate, tail_factor
        from ..parts._shortlist_fusion import fuse_pair
        cand, factor = src["candidates"], tail_factor(src["tail_rank"])
        p_short = calibrate(src["shortlist"], src["calibration"])
        p_net = sigmoid(src["network"])
        return {float(a): fuse_pair((p_short, None), (p_net, None), float(a), cand, factor,
                                    self.n_labels_)
                for a in alphas}

    def fusion_sources(self, X, *, logit_adjustment=None):
        """The two sources of the fused score of ``X``, and the tail order, from one pass each.

        What :meth:`fusion_scores` and ``predict_proba`` mix with
        :func:`xplant.fusion.fuse`, for other fusions of the same fit (per
        label weights, other calibrations): the fused score of a candidate
        is ``α · σ(a · shortlist + b) + (1 − α) · σ(network)``, and every
        other label falls below the candidates by its ``tail_rank``
        (:func:`xplant.fusion.tail_factor`).

        Parameters
        ----------
        X : list of str or token corpus
            Raw documents, or the token corpus of the fitted MIGRelevance.
        logit_adjustment : float >= 0 or None, default=None
            τ of the network's logits; None: the fitted ``logit_adjustment_``.

        Returns
        -------
        dict
            ``"candidates"`` (n, C) int64, each row's candidates in the
            shortlist's order; ``"shortlist"`` (n, C) float64, their raw
            shortlist scores; ``"calibration"`` (a, b), the fitted
            ``shortlist_calibration_``; ``"network"`` (n, C) float32, the
            network's logits at the candidates, adjusted by τ;
            ``"tail_rank"`` (n, L) int32, :func:`xplant.fusion.tail_order`
            of the labels outside the candidates; ``"fusion_weight"``, the
            fitted α.

        Raises
        ------
        ValueError
            When the classifier has no shortlist, or ``logit_adjustment``
            is not None or a number >= 0.
        """
        if getattr(self, "shortlist_", None) is None:
            raise ValueError("fusion_sources needs a PlantClassifier fitted with a shortlist")
        if logit_adjustment is not None:
            from ..parts._logit_adjustment import check_logit_adjustment
            if isinstance(logit_adjustment, str):
                raise ValueError("logit_adjustment must be a number >= 0 or None here, got "
                                 f"{logit_adjustment!r}")
            logit_adjustment = check_logit_adjustment(logit_adjustment)
        docs = self._docs(X)
        return self._fused_scorer().sources(docs, shortlist_texts(X, docs, self.relevance_),
                                            tau=logit_adjustment)

    def save(self, path, *, overwrite=False):
        """Save to a folder: safetensors weights + JSON config + the MIGRelevance.

        See :func:`xplant.neural.save_model`. Loading runs no pickled code.

        Parameters
        ----------
        path : str or Path
            The folder to write.
        overwrite : bool, default=False
            Replace an existing folder.
        """
        return save_model(self, path, overwrite=overwrite)

    @classmethod
    def load(cls, path):
        """Load a model saved by :meth:`save` (see :func:`xplant.neural.load_model`).

        Parameters
        ----------
        path : str or Path
            The folder :meth:`save` wrote.
        """
        return read_model(path, cls)


def load_model(path):
    """Load a PlantClassifier saved by :func:`save_model`; ready to predict.

    Every parameter is validated exactly as ``fit`` validates it, the
    fields of ``config.json`` against each other (label names, label
    frequencies, k) and against the relevance and the weights' shapes.
    The same as ``PlantClassifier.load(path)``; :func:`xplant.persistence.load`
    loads a saved model of any kind.

    Parameters
    ----------
    path : str or Path
        The folder that :func:`save_model` wrote.

    Returns
    -------
    PlantClassifier
        Fitted, in eval mode; its registered fitted parts restored
        (:func:`xplant.persistence.register_part`).

    Raises
    ------
    FileNotFoundError
        When ``path`` is not a saved model folder.
    ValueError
        Naming the file and the field: invalid JSON (with its line), a
        missing or invalid field, a parameter ``fit`` would refuse, label
        names that collide or hold control characters, fields that
        disagree, a tokenizer that no longer matches, weights of another
        shape, or, with an ``llm:`` backbone, a base model whose weight
        files differ from the recorded ones (the message names both bases).
    ImportError
        With an ``llm:`` backbone whose model package or reader is missing.
    """
    return read_model(path, PlantClassifier)
