"""PlantClassifier's Stage 1 parts: running the planter, and keeping its loss in Stage 2.

A mixin of :class:`~xplant.neural.PlantClassifier`: ``_plant`` fits an
:class:`AttentionPlanter` (or loads a saved planting) and copies its
encoder and label attention into the Stage 2 network; ``_train_dataset``
builds the Stage 2 items, with the planter's ranking items when
``stage1_weight`` > 0 (PLANT.md §3; docs/evidence.md) and with shortlist
candidates when there is a shortlist (docs/shortlist.md).
"""

import os

from sklearn.base import clone

from ._common import ARCH_PARAMS
from ._data import AnchoredDataset, CandidateDataset, Stage1Dataset, TokenDataset
from ._planter import AttentionPlanter, load_planting, tf_relevance


class PlantingMixin:
    """Stage 1 inside :class:`PlantClassifier`'s fit."""

    def _stage1_settings(self):
        """The planter whose loss, cutoff and sampling ``stage1_weight`` keeps."""
        planter = self.planter_ if self.planter_ is not None else (
            self.planter if self.planter is not None else AttentionPlanter())
        kind = self.stage1_loss if self.stage1_loss is not None else planter.stage1_loss
        return planter, kind

    def _train_dataset(self, train_docs, train_pos, Y_train, candidates=None):
        """Stage 2 training items; with ``stage1_weight`` > 0 also ranking items.

        With shortlist ``candidates`` (one label-id array per document),
        each item holds the document's candidates and their targets.
        """
        if not self.stage1_weight_:
            if candidates is not None:
                return CandidateDataset(train_docs, train_pos, candidates)
            return TokenDataset(train_docs, train_pos)
        planter, kind = self._stage1_settings()
        # the ranking loss of every anchored batch (not looked up per batch)
        self.stage1_loss_params_ = {"kind": kind, "k": planter.ndcg_k, "sigma": planter.sigma}
        rel = self.relevance_
        special = {i for i in (rel.pad_id_, rel.unk_id_) if i is not None and i >= 0}
        target = getattr(planter, "target_relevance_", None)
        if target is None:         # plant_from, plant=False, or a resumed fit
            kind = self.stage1_target if self.stage1_target is not None else planter.target
            if kind == "tf" and self.plant_from is None:
                target = tf_relevance(train_docs, Y_train, len(rel.vocabulary_),
                                      getattr(rel, "top_k", None) or 50, special)
            else:
                target = rel.relevance_
        ranking = Stage1Dataset(train_docs, train_pos, target,
                                labels_per_doc=planter.labels_per_doc,
                                max_relevant=planter.max_relevant,
                                n_negatives=planter.n_negatives, generator=self.rng_,
                                ignore_ids=special)
        if candidates is not None:
            return CandidateDataset(train_docs, train_pos, candidates, ranking)
        return AnchoredDataset(TokenDataset(train_docs, train_pos), ranking)

    def _plant(self, train_docs, Y_train, dev_docs, Y_dev, resume=False, described=None):
        if self.plant_from is not None:
            state, meta = load_planting(self.plant_from)
            if meta["n_labels"] != self.n_labels_:
                raise ValueError(f"the planting at {self.plant_from} has {meta['n_labels']} labels, "
                                 f"the data {self.n_labels_}")
            fp = getattr(self.relevance_, "tokenizer_fingerprint_", None)
            if meta.get("tokenizer_fingerprint") != fp:
                raise ValueError(f"the planting at {self.plant_from} was made with another tokenizer "
                                 "or vocabulary; plant again on this data")
        else:
            planter = clone(self.planter) if self.planter is not None else AttentionPlanter()
            over = {p: getattr(self, p) for p in ARCH_PARAMS}
            if self.stage1_target is not None:
                over["target"] = self.stage1_target
            if self.stage1_loss is not None:
                over["stage1_loss"] = self.stage1_loss
            over["random_state"] = self.random_state
            over["min_epoch_docs"] = self.min_epoch_docs
            over["max_epoch_docs"] = self.max_epoch_docs
            if self.checkpoint_dir is not None:
                over["checkpoint_dir"] = os.path.join(self.checkpoint_dir, "stage1")
            if self.strategy == "deepspeed" and planter.strategy == "skorch":
                over.update(strategy="deepspeed", deepspeed_config=self.deepspeed_config)
            planter.set_params(**over)
            # the classifier's checked rows and encoded documents, not a second check
            resume = resume and planter.strategy == "skorch"
            planter._start_fit(resume)
            planter.classes_, planter.relevance_ = self.classes_, self.relevance_
            data = planter._split_fit_data(Y_train, train_docs, dev_docs, Y_dev)
            planter._fit_prepared(data, resume=resume, **(described or {}))
            self.planter_ = planter
            state = planter.module_.state_dict()
        own = self.module_.state_dict()
        shared = {k: v for k, v in state.items()
                  if (k.startswith("encoder.") or k.startswith("attention.")) and k in own}
        missing = [k for k in own if k.startswith("attention.") and k not in shared]
        if missing:
            raise ValueError(f"the planting lacks {missing}; its architecture differs from this classifier")
        self.module_.load_state_dict(shared, strict=False)
