"""One reader of JSON (and YAML) object files, xplant._files.read_json_object: a saved
folder's configuration, a run's records and a user's config file all read the same
way, byte-order mark included, and name the file and place of a fault alike."""

import json

import pytest

from xplant._files import read_json_object


def _readers():
    from xplant.app._fit import read_model_spec
    from xplant.report._io import read_results
    out = {"read_json_object": lambda p: read_json_object(p, "an object"),
           "xplant fit --model": lambda p: read_model_spec("prior", params_file=str(p))[1],
           "xplant report": lambda p: read_results(p.parent)}
    try:
        from xplant.neural.distributed import read_config_file
    except ImportError:                                  # without torch
        pass
    else:
        out["xplant train --config"] = read_config_file
    return out


@pytest.mark.parametrize("name", list(_readers()))
def test_every_reader_names_the_line_and_column_of_invalid_json(tmp_path, name):
    path = tmp_path / "results.json"
    path.write_text('{"models": [],\n "C": 1,}', encoding="utf-8")
    with pytest.raises(ValueError, match=r"results\.json, line 2, column 9: not valid JSON"):
        _readers()[name](path)


@pytest.mark.parametrize("name", list(_readers()))
def test_every_reader_takes_a_byte_order_mark_and_refuses_a_non_object(tmp_path, name):
    path = tmp_path / "results.json"
    path.write_text("\ufeff" + json.dumps({"models": []}), encoding="utf-8")
    assert _readers()[name](path) == {"models": []}
    path.write_text("[1, 2]", encoding="utf-8")
    with pytest.raises(ValueError, match=r"results\.json: expected a JSON object holding"):
        _readers()[name](path)


def test_yaml_where_asked_and_a_missing_file(tmp_path):
    yaml_file = tmp_path / "c.yaml"
    yaml_file.write_text("model: svm\nparams:\n  C: 2.5\n", encoding="utf-8")
    pytest.importorskip("yaml")
    assert read_json_object(yaml_file, "a config", yaml=True) == {"model": "svm",
                                                                   "params": {"C": 2.5}}
    with pytest.raises(ValueError, match="not valid JSON"):
        read_json_object(yaml_file, "a config")          # YAML only where the caller reads it
    with pytest.raises(FileNotFoundError, match=r"nope\.json does not exist"):
        read_json_object(tmp_path / "nope.json", "a config")
