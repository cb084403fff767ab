"""Fitted attributes as views of a fitted estimator's parts: the one view of ``parts_``.

A fitted xplant estimator keeps its fitted state as a few parts in its
``parts_`` dict (``{name: part}``): objects that own their fields and turn
them into JSON and arrays and back (``to_dict``/``from_dict``), which a saved
model stores and a loader restores whole (:mod:`xplant.persistence`). The
documented fitted attributes (``classes_``, ``k_``, ``best_epoch_``, ...) are
:class:`PartField` descriptors over them, so that a loader assigns no fitted
attribute by name: restoring a part restores every attribute that reads it.
"""

import copy


class FittedFields:
    """A fitted part made of named fields (``FIELDS``), each None until ``fit`` or a loader
    sets it: the base of the parts that are plain records.

    Parameters
    ----------
    *values
        Values of the first of ``FIELDS``, in their order (a call may name them
        by position, as the arguments of an ``__init__``).
    **fields
        Values of some of ``FIELDS`` by name; the others are None.

    Raises
    ------
    TypeError
        For a name that is not one of ``FIELDS``, more values than ``FIELDS``,
        or a field given both by position and by name.

    Examples
    --------
    >>> class Space(FittedFields):
    ...     FIELDS = ("names", "size")
    >>> Space(size=2)
    Space(names=None, size=2)
    >>> Space(["A01"], 1)
    Space(names=['A01'], size=1)
    """

    FIELDS = ()

    def __init__(self, *values, **fields):
        if len(values) > len(self.FIELDS):
            raise TypeError(f"{type(self).__name__} has {len(self.FIELDS)} fields; "
                            f"{len(values)} values given")
        for name, value in zip(self.FIELDS, values):
            if name in fields:
                raise TypeError(f"{type(self).__name__} got field {name!r} twice")
            fields[name] = value
        for name in self.FIELDS:
            setattr(self, name, fields.pop(name, None))
        if fields:
            raise TypeError(f"{type(self).__name__} has no field {sorted(fields)}")

    def __repr__(self):
        fields = ", ".join(f"{k}={getattr(self, k)!r:.40}" for k in self.FIELDS)
        return f"{type(self).__name__}({fields})"


class PartField:
    """A fitted attribute that reads a part of ``parts_``, or one of its fields.

    Parameters
    ----------
    part : str
        The part's name in ``parts_``.
    field : str or None, default=None
        The part's attribute to read; None: the part itself.
    factory : callable or None, default=None
        Makes the part the first time ``fit`` sets the field.
    settable : bool or None, default=None
        Whether ``fit`` may set the attribute: a field (of the part, made by
        ``factory`` if need be) or, with ``field=None``, the whole part.
        None: True when ``factory`` is given. A read-only attribute raises
        AttributeError when set (``fit`` sets the part itself).
    optional : bool, default=False
        A part that is None reads as None (a model without a shortlist);
        else it raises AttributeError.
    unset : bool, default=False
        A field that is None has not been set by ``fit`` yet: AttributeError.

    Examples
    --------
    >>> class Space:
    ...     def __init__(self): self.names = None
    >>> class Model:
    ...     names_ = PartField("space", "names", factory=Space, unset=True)
    >>> m = Model()
    >>> hasattr(m, "names_")
    False
    >>> m.names_ = ["A01"]
    >>> m.names_, type(m.parts_["space"]).__name__
    (['A01'], 'Space')
    """

    def __init__(self, part, field=None, *, factory=None, settable=None, optional=False,
                 unset=False):
        self.part, self.field, self.factory = part, field, factory
        self.settable = factory is not None if settable is None else settable
        self.optional, self.unset = optional, unset

    def __set_name__(self, owner, name):
        self.name = name

    def _missing(self, obj):
        return AttributeError(f"{type(obj).__name__!r} object has no attribute {self.name!r} "
                              f"(fit sets it: parts_[{self.part!r}])")

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        parts = obj.__dict__.get("parts_")
        if parts is None:
            raise self._missing(obj)
        part = parts.get(self.part)
        if part is None:
            if self.optional and self.part in parts:
                return None
            raise self._missing(obj)
        value = part if self.field is None else getattr(part, self.field)
        if value is None and self.unset:
            raise self._missing(obj)
        return value

    def __set__(self, obj, value):
        if not self.settable:
            raise AttributeError(f"{self.name} is read-only: it reads parts_[{self.part!r}]")
        # copy on write: a copy of the estimator (copy.copy) shares its parts until one of
        # them sets an attribute, as it shared its attributes until then
        parts = dict(obj.__dict__.get("parts_") or {})
        if self.field is None:
            parts[self.part] = value
        else:
            part = parts.get(self.part)
            part = self.factory() if part is None else copy.copy(part)
            setattr(part, self.field, value)
            parts[self.part] = part
        obj.__dict__["parts_"] = parts

    def __delete__(self, obj):
        self.__set__(obj, None)


def part_fields(part, factory, *fields, unset=True):
    """One :class:`PartField` per field of a part, in order: the views of a whole part.

    Parameters
    ----------
    part : str
        The part's name in ``parts_``.
    factory : callable
        Makes the part the first time ``fit`` sets one of its fields.
    *fields : str
        The part's fields.
    unset : bool, default=True
        A field that is None has not been set yet: its attribute raises
        AttributeError (as a fitted attribute ``fit`` has not set).

    Returns
    -------
    tuple of PartField

    Examples
    --------
    >>> class Space:
    ...     names = size = None
    >>> class Model:
    ...     names_, size_ = part_fields("space", Space, "names", "size")
    >>> m = Model()
    >>> m.size_ = 2
    >>> m.size_, hasattr(m, "names_")
    (2, False)
    """
    return tuple(PartField(part, f, factory=factory, unset=unset) for f in fields)

