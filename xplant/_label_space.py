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
    def from_dict(cls, state, where="the label space"):
        """The label space of :meth:`to_dict`'s state, checked field by field.

        The one reader of a saved label space: every saved kind (the linear
        steps' entries, PLANT's ``config.json``) reads its label space here.

        Parameters
        ----------
        state : dict
            :meth:`to_dict`'s fields, read back (``label_frequency`` and
            ``scored_labels`` as lists or arrays; ``scored_labels`` and
            ``prediction_form`` may be absent: every label scored, the CSR form).
        where : str or Path, default="the label space"
            The file ``state`` was read from, named in errors.

        Returns
        -------
        LabelSpace

        Raises
        ------
        ValueError
            Naming ``where`` and the field: a missing field or one of another
            type, names and the number of labels that disagree, a per-label
            array of another length or with negative counts, a label name that
            breaks the rule of ``fit`` (:func:`xplant._labels.check_label_names`),
            or a prediction form that is none of :func:`xplant._labels.prediction_form`'s.
        """
        from ._labels import check_label_names
        from .persistence._codec import FieldChecker
        c = FieldChecker(state, where)
        n = c.integer("n_labels", low=1)
        as_indices = c.get("classes_are_indices", bool, "true or false")
        names = c.get("classes", list, "a list of label names")
        if len(names) != n:
            c.fail("classes", f"holds {len(names)} names but n_labels is {n}")
        if not as_indices:
            try:
                check_label_names(names)
            except ValueError as exc:
                c.fail("classes", str(exc))
        frequency = state.get("label_frequency")
        if isinstance(frequency, np.ndarray):
            if frequency.shape != (n,) or not np.issubdtype(frequency.dtype, np.integer) \
                    or (frequency < 0).any():
                c.fail("label_frequency", f"must hold {n} integers >= 0, got {frequency.size} "
                                          f"of {frequency.dtype}")
        else:
            frequency = c.int_list("label_frequency", n)
        form = state.get("prediction_form")
        if form is not None and not (isinstance(form, dict)
                                     and form.get("kind") in ("sparse", "dense", "column")):
            c.fail("prediction_form", "must be null or an object with kind 'sparse', 'dense' "
                                      "or 'column' (xplant._labels.prediction_form)")
        scored = state.get("scored_labels")
        if scored is not None and np.shape(scored) != (n,):
            c.fail("scored_labels", f"holds {np.size(scored)} values; there are {n} labels")
        return cls(np.arange(n) if as_indices else np.asarray(names), n,
                   np.asarray(frequency, dtype=np.int64), c.integer("n_train_documents", low=1),
                   form, None if scored is None else np.asarray(scored, dtype=bool))

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
