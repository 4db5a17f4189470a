"""The regression runner's results from Python."""

import json

import pytest

import spyre_dma


def test_regress_smoke_on_refdev():
    results = spyre_dma.regress("smoke", "refdev", seeds="1..2", wall_timeout=300)
    assert results["summary"]["tests"] == 2 and results["summary"]["passed"] == 2
    frame = spyre_dma.regress_frame(results)
    assert list(frame["seed"]) == [1, 2]
    assert (frame["status"] == "pass").all()
    assert {"setup_s", "run_s", "check_s", "ops", "bytes"} <= set(frame.columns)


def test_regress_refusal_is_an_error():
    with pytest.raises(spyre_dma.Error, match="nosuchsuite"):
        spyre_dma.regress("nosuchsuite", "refdev", seeds="1")


def test_results_files(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(ValueError, match="bad.json:1:2: not JSON"):
        spyre_dma.read_regress_results(str(bad))
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"tests": []}))
    with pytest.raises(ValueError, match="not a spyre-dma regress results document"):
        spyre_dma.read_regress_results(str(other))
