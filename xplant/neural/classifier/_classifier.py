"""PlantClassifier: Stage 2 of PLANT, leveraging planted attention.

Saha Roy, Wallace & Aslam, "Don't Pay Attention, PLANT It", arXiv
2410.23066, §3.2.
"""

import numpy as np
import torch
from sklearn.utils import ClassifierTags
from skorch.callbacks import EarlyStopping, PrintLog, ProgressBar
from skorch.utils import to_tensor

from ..._labels import label_frequency
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
from ..parts._attributes import FittedPartsMixin
from ._stage1_weight import STAGE1_WEIGHT_FALLBACK, stage1_weight_to_train
from ._shortlist import ShortlistMixin
from ._inference import InferenceMixin
from ._io import SavedModelMixin, read_model
from ..planting._planter import AttentionPlanter
from .._settings import CLASSIFIER_CONSTRAINTS, CLASSIFIER_MODULE_DEFAULTS, decision_settings
from ._defaults import default_lr, default_phases, initial_label_bias, scored_labels
from ._planted_start import PlantingMixin
from ..losses import PlantLoss, stage1_loss
from ..modules import PlantNet


def _silent(*args, **kwargs):
    """A picklable no-op sink for EarlyStopping's messages."""


class PlantClassifier(PlantingMixin, InferenceMixin, ShortlistMixin, FittedPartsMixin,
                      SavedModelMixin, PlantNetBase):
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
        ``valid_loss`` (``ShortlistMixin._dev_scores``)."""
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
            self.label_frequency_, planted_from_texts=self._plants_from_texts(any(
                v is not None for v in (label_descriptions, label_synonyms, label_parents))))
        self.dev_docs_, self.dev_Y_ = dev_docs, Yd
        self.dev_dataset_ = None if dev_docs is None else TokenDataset(dev_docs, data.dev_pos)
        self.stage1_weight_ = None      # resolved below; the rate of lr=None follows it
        self.dev_choices_ = {}          # every choice made on dev (choose_on_dev records)
        # the fitted parts (parts/_attributes.py): τ = 0 while the network trains
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
            lambda: scores if scores is not None else self._scores(self.dev_docs_))
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
        self.dev_view_ = None
        self._release_dev_split()

    def _release_dev_split(self):
        """Drop what only training needed: the dev documents, targets and shortlist view
        (an (n_dev, L) order with a shortlist), here and in the fitted planter."""
        self.dev_docs_ = self.dev_Y_ = self.dev_dataset_ = None
        if hasattr(self, "dev_view_"):
            self.dev_view_ = None
        if getattr(self, "planter_", None) is not None:
            self.planter_.dev_dataset_ = self.planter_.dev_full_ = None


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
