"""The label space of a fitted estimator: one fitted part that every xplant estimator keeps.

What ``fit`` learns of the labels themselves, before any model of them: the
label names (``classes_``), their training frequencies, the number of
training documents, the form of the ``Y`` given to ``fit`` (which ``predict``
answers in) and, for PLANT, the labels its network scores. A fitted
estimator keeps it as ``parts_["label_space"]``, a :class:`LabelSpace`; its
documented fitted attributes (``classes_``, ``n_labels_``,
``label_frequency_``, ``n_train_documents_``, ``prediction_form_``,
``scored_labels_``) are views of it (:class:`LabelSpaceOwner`,
:class:`xplant._fitted_parts.PartField`), which ``fit`` sets as before and a
loader restores as one part.
"""

import numpy as np

from ._fitted_parts import FittedFields, PartField, part_fields


class LabelSpace(FittedFields):
    """A fitted estimator's label space: names, frequencies, training count, answer form.

    A record of fields (:class:`xplant._fitted_parts.FittedFields`), given by
    position in this order or by name; each is None until ``fit`` or a loader
    sets it.

    Parameters
    ----------
    classes : ndarray of shape (n_labels,) or None
        The label names (str), or the column indices (int64) when ``fit``
        had none.
    n_labels : int or None
        The number of labels (the columns of ``Y``).
    label_frequency : ndarray of int64 of shape (n_labels,) or None
        Training documents per label.
    n_train_documents : int or None
        Training documents (the rows the labels were counted on).
    prediction_form : dict or None
        The form of the ``Y`` given to ``fit``, which ``predict`` answers in
        (:func:`xplant._labels.prediction_form`); None: a CSR matrix.
    scored_labels : ndarray of bool of shape (n_labels,) or None
        The labels a model scores (PLANT's network leaves out some); None:
        every label.

    Examples
    --------
    >>> import numpy as np
    >>> space = LabelSpace(np.array(["A01", "B02"]), 2, np.array([3, 1]), 4)
    >>> LabelSpace.from_dict(space.to_dict()) == space
    True
    """

    FIELDS = ("classes", "n_labels", "label_frequency", "n_train_documents", "prediction_form",
              "scored_labels")

    def to_dict(self):
        """The state: JSON values, and numpy arrays for the per-label fields.

        Returns
        -------
        dict
            ``classes`` (list of str), ``classes_are_indices`` (bool),
            ``n_labels``, ``label_frequency`` (int64 array),
            ``n_train_documents``, ``prediction_form`` and ``scored_labels``
            (bool array or None).
        """
        classes = np.asarray(self.classes)
        return {"classes": [str(c) for c in classes],
                "classes_are_indices": bool(np.issubdtype(classes.dtype, np.integer)),
                "n_labels": int(self.n_labels),
                "label_frequency": np.asarray(self.label_frequency, dtype=np.int64),
                "n_train_documents": int(self.n_train_documents),
                "prediction_form": self.prediction_form,
                "scored_labels": (None if self.scored_labels is None
                                  else np.asarray(self.scored_labels, dtype=bool))}

    @classmethod
    def from_dict(cls, state):
        """The label space of :meth:`to_dict`'s state, checked.

        Raises
        ------
        ValueError
            When the names and the number of labels disagree, a per-label
            array has another length, or a label name breaks the rule of
            ``fit`` (:func:`xplant._labels.check_class_names`).
        """
        n = int(state["n_labels"])
        names = state["classes"]
        if len(names) != n:
            raise ValueError(f"'classes' holds {len(names)} names but n_labels is {n}")
        classes = np.arange(n) if state["classes_are_indices"] else np.asarray(names)
        if not state["classes_are_indices"]:
            from ._labels import check_class_names
            check_class_names(classes)
        frequency = np.asarray(state["label_frequency"], dtype=np.int64)
        scored = state.get("scored_labels")
        for field, values in (("label_frequency", frequency), ("scored_labels", scored)):
            if values is not None and np.shape(values) != (n,):
                raise ValueError(f"{field!r} holds {np.size(values)} values; there are {n} "
                                 "labels")
        return cls(classes, n, frequency, int(state["n_train_documents"]),
                   state.get("prediction_form"),
                   None if scored is None else np.asarray(scored, dtype=bool))

    def __eq__(self, other):
        if not isinstance(other, LabelSpace):
            return NotImplemented
        a, b = self.to_dict(), other.to_dict()
        return all(np.array_equal(a[k], b[k]) if isinstance(a[k], np.ndarray) else a[k] == b[k]
                   for k in a)

    __hash__ = None


class LabelSpaceOwner:
    """The base of every estimator with a label space: its fitted attributes are views of
    ``parts_["label_space"]`` (:class:`LabelSpace`).

    ``fit`` sets ``classes_``, ``n_labels_``, ``label_frequency_``,
    ``n_train_documents_``, ``prediction_form_`` (and PLANT ``scored_labels_``)
    as plain attributes; each assignment goes into the part, which a saved
    model stores and restores whole. Before ``fit`` they raise
    AttributeError, as a fitted attribute does.
    """

    classes_, n_labels_, label_frequency_, n_train_documents_, scored_labels_ = part_fields(
        "label_space", LabelSpace, "classes", "n_labels", "label_frequency", "n_train_documents",
        "scored_labels")
    # None once fitted: the CSR form (models saved before the form was kept)
    prediction_form_ = PartField("label_space", "prediction_form", factory=LabelSpace)
