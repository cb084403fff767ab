from pathlib import Path

import pytest

SHARED = Path(__file__).resolve().parents[2] / ".." / "shared" / "data"


@pytest.fixture(scope="session")
def codiesp_home():
    path = SHARED / "codiesp"
    if not (path / "train" / "trainD.tsv").is_file():
        pytest.skip("official CodiEsp distribution not found beside the repository")
    return path


@pytest.fixture(scope="session")
def eurlex_home():
    path = SHARED / "eurlex57k"
    if not (path / "train.jsonl.gz").is_file():
        pytest.skip("EURLEX57K not found beside the repository")
    return path
