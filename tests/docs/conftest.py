"""Fixtures of the documentation tests: the repository's folders and the docs' API walker."""

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def repo_root():
    """The repository root (``docs/``, ``examples/``, ``README.md``)."""
    return ROOT


@pytest.fixture(scope="session")
def xplant_api():
    """``docs/_ext/xplant_api.py``: the one list of public names the API pages are built from."""
    spec = importlib.util.spec_from_file_location("xplant_api", ROOT / "docs" / "_ext" / "xplant_api.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
