"""Dataset loaders returning one fixed label space, and what was done.

Every loader returns a :class:`sklearn.utils.Bunch` with ``texts`` (list of
str), ``Y`` (CSR, int64 {0, 1}), ``label_names``, ``ids``,
``label_frequency`` (positives per label in the loaded split) and
``record`` (source, split, label policy, counts). The ICD and EUROVOC
loaders add ``label_descriptions``, ``label_synonyms``, ``label_parents``,
``label_ancestor`` and ``parent_descriptions`` (one entry per label);
:func:`read_label_descriptions` gives the same fields for a user's file. ``return_X_y=True`` gives
``(texts, Y)``. Every split of a loader has the same label columns, built
from what a user can know; a split's labels outside them (codes that only
test holds) follow as extra columns, so metrics count them as misses.
:func:`load_catalogue` gives a whole code system (ICD-10-CM, ICD-10-PCS,
EUROVOC, a user's label file) for an open label space. Gold evidence, where a
source has it (CodiEsp-X; a user's ``evidence_field``), is ``evidence``: per
document, its mentions ``{"label", "spans"}``; :func:`take_documents` cuts
every per-document field alike.
"""

from ._base import document_fields, take_documents
from ._catalogue import CATALOGUES, catalogue_input, load_catalogue, open_label_space
from ._descriptions import align_descriptions, describe_codes, icd_prefixes, read_label_descriptions
from ._codiesp import CODIESP_CATALOGUES, CODIESP_LANGUAGES
from ._codiesp import load_codiesp, load_codiesp_evidence, parse_positions
from ._eurlex import load_eurlex57k
from ._label_space import align_label_space
from ._mimic import format_icd_code, load_mimic
from ._user import (check_document_ids, label_name, read_labelled_texts, read_rows, read_text_file,
                    text_value)
from ._xc import dump_xc, load_xc

__all__ = [
    "CATALOGUES",
    "CODIESP_CATALOGUES",
    "CODIESP_LANGUAGES",
    "load_catalogue",
    "catalogue_input",
    "open_label_space",
    "check_document_ids",
    "read_rows",
    "text_value",
    "label_name",
    "read_text_file",
    "align_descriptions",
    "align_label_space",
    "describe_codes",
    "dump_xc",
    "format_icd_code",
    "icd_prefixes",
    "load_codiesp",
    "load_codiesp_evidence",
    "load_eurlex57k",
    "load_mimic",
    "load_xc",
    "parse_positions",
    "read_label_descriptions",
    "read_labelled_texts",
    "document_fields",
    "take_documents",
]
