"""Saving and loading every fitted xplant model, without pickle: the one persistence package.

Public API:

- :func:`save` / :func:`load` / :func:`load_saved`: any fitted model (a
  PlantClassifier, a DescriptionFusion, a linear or tree model, a Pipeline
  of them) to a folder and back, by the kind its ``config.json`` names;
- :func:`register_kind`: a kind of saved folder (one explicit call each;
  :func:`saved_kinds` lists them);
- :func:`register_part`: a fitted part class (an object of a model's
  ``parts_`` with ``to_dict``/``from_dict``), which every kind then saves and
  loads with the model (:func:`registered_parts` lists them).

The package stands on two floors (``tests/test_layers.py``):

- the lower floor, ``_codec`` and ``_parts``, imports nothing of xplant but
  the file helpers (:mod:`xplant._files`) and the plain helpers: the atomic
  folder, the format tag and its checks, the arrays (safetensors) and JSON
  records of a folder, and the registry of fitted parts. Every estimator
  package writes and reads its files through it: saved models, their
  parts, training checkpoints, plantings, the embeddings cache. No module
  outside this package imports safetensors or writes a saved folder's
  JSON (``tests/test_one_writer.py``).
- the upper floor, ``_kinds``, stands above the estimators: the registry of
  saved kinds and the dispatch of :func:`save` and :func:`load`, which
  imports a kind's code only when a model of that kind is saved or loaded.

Loading runs no stored code and imports nothing that a file names: a kind
or a part is found in the registry, or the folder is refused, naming the
file.
"""

from ._kinds import load, load_saved, register_kind, save, saved_kinds
from ._parts import register_part, registered_parts

__all__ = ["load", "load_saved", "register_kind", "register_part", "registered_parts", "save",
           "saved_kinds"]
