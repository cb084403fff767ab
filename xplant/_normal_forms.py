"""The normal forms of xplant's strings: texts and label names in NFC, codes in one casing.

Every text is normalised to :data:`UNICODE_FORM` before tokenizing, and
every label name is read in it (:func:`normalize_label`), so one name typed
in two Unicode forms is one label. Codes of a code system are
case-insensitive, so every reader and lookup of a code cases it with
:func:`normalise_code`.
"""

import re
import unicodedata

import numpy as np

#: The one Unicode form of xplant: every text is normalised to it before
#: tokenizing (saved with a relevance as ``unicode_normalization``), and every
#: label name is read in it.
UNICODE_FORM = "NFC"


def normalize_label(name):
    """The one normaliser of a label name: a string in Unicode NFC, anything else unchanged.

    Texts are tokenized in NFC, so ``"Fièvre"`` typed with a precomposed
    ``è`` and with ``e`` + a combining grave accent is one word; label
    names follow the same rule and are one label.

    Examples
    --------
    >>> normalize_label("Fie\u0300vre") == "Fi\u00e8vre"
    True
    >>> normalize_label(3)
    3
    """
    return unicodedata.normalize(UNICODE_FORM, name) if isinstance(name, str) else name


def normalise_code(code, *, drop_dots=False, where=None):
    """The one casing of a code (ICD-10, ICD-9, EUROVOC id): stripped and upper-case.

    Codes of a code system are case-insensitive (CodiEsp writes ``n20.0``
    for ICD-10-CM's ``N20.0``), so every reader of codes and every lookup
    of a code by name cases it here. Codes are never parsed as numbers:
    ``"0117"`` and ``"117"`` stay distinct.

    Parameters
    ----------
    code : str
        A code as written in a file or passed by a caller.
    drop_dots : bool, default=False
        Also remove every ``.``: the undotted form MIMIC's tables write
        (``"011.7"`` and ``"0117"`` are then one code).
    where : str or None, default=None
        Where ``code`` was read (a file and line, an argument), to start the
        error message with.

    Returns
    -------
    str

    Raises
    ------
    TypeError
        If ``code`` is not a string (a number would have lost its leading or
        trailing zeros already).

    Examples
    --------
    >>> normalise_code(" n20.0 "), normalise_code("e880.9", drop_dots=True)
    ('N20.0', 'E8809')
    """
    if not isinstance(code, str):
        raise TypeError(
            f"{where + ': ' if where else ''}label {code!r} is a {type(code).__name__}, not a "
            "string; codes must be read as strings (a number loses leading and trailing zeros: "
            "'0117' != '117')"
        )
    code = code.strip().upper()
    return code.replace(".", "") if drop_dots else code


#: A word of :func:`folded_words`: a run of Unicode word characters and combining
#: diacritics (so a decomposed accent stays inside its word).
_WORD = re.compile(r"[\w\u0300-\u036f]+")
#: Characters that end a clause for :func:`folded_words`' ``breaks``.
_CLAUSE_END = re.compile(r"[.;:!?\n]")


def fold_word(word):
    """The matching form of one word: lower case, accents and other diacritics removed.

    Examples
    --------
    >>> fold_word("Neumonía"), fold_word("NA\u0301USEA")
    ('neumonia', 'nausea')
    """
    word = unicodedata.normalize("NFKD", word.lower())
    return "".join(c for c in word if not unicodedata.combining(c))


def folded_words(text):
    """The words of ``text`` in their matching form, with their character offsets.

    The one normaliser of text that is matched against mentions
    (:class:`xplant.linear.MentionMatcher`): words are runs of Unicode word
    characters (diacritics included), folded by :func:`fold_word`; every
    other character separates words.

    Parameters
    ----------
    text : str

    Returns
    -------
    words : list of str
        The folded words, in order.
    offsets : ndarray of int64 of shape (n_words, 2)
        ``text[start:end]`` is each word as written (end exclusive, Python
        string indices).
    breaks : ndarray of bool of shape (n_words,)
        True where a clause ends between the word and the one before it
        (``.``, ``;``, ``:``, ``!``, ``?`` or a line break), and for the
        first word.

    Examples
    --------
    >>> words, offsets, breaks = folded_words("Sin fiebre. Tos seca")
    >>> words, offsets.tolist(), breaks.tolist()
    (['sin', 'fiebre', 'tos', 'seca'], [[0, 3], [4, 10], [12, 15], [16, 20]], [True, False, True, False])
    """
    words, offsets, breaks, last = [], [], [], 0
    for m in _WORD.finditer(text):
        words.append(fold_word(m.group()))
        offsets.append(m.span())
        breaks.append(not offsets[1:] or bool(_CLAUSE_END.search(text, last, m.start())))
        last = m.end()
    return (words, np.asarray(offsets, dtype=np.int64).reshape(-1, 2),
            np.asarray(breaks, dtype=bool))
