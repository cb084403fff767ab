"""The applications built on xplant's library: the ``xplant`` command line and its jobs.

``xplant run`` (the main job and any data source), ``fit``, ``evaluate``,
``predict``, ``ablate`` and ``train`` live here, apart from the estimators,
metrics and data loaders they use. Nothing here is public API: scripts
import the estimators from :mod:`xplant` and its sub-packages, and run the
jobs through the ``xplant`` command.
"""
