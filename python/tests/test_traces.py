"""The trace tools from Python: capture, read and write, import, replay, compare, calibrate."""

import json
import os

import numpy as np
import pytest

import spyre_dma
from conftest import DATA, KINETO


def capture_some(backend="sim"):
    with spyre_dma.Engine(backend, capture=True) as e:
        s = e.create_stream()
        buf = e.allocate(1 << 20)
        s.copy_h2d(buf, np.ones(1 << 20, dtype=np.uint8))
        s.fill(buf, 3, nbytes=4096)
        s.copy_d2h(np.zeros(1 << 16, dtype=np.uint8), buf)
        s.synchronize()
        return e.captured_trace()


def test_capture_read_write(tmp_path):
    t = capture_some()
    assert len(t) == 3
    assert [op["kind"] for op in t.ops] == ["h2d", "fill", "d2h"]
    assert t.header["source"] == "capture" and "PCIe Gen" in t.header["link"]
    assert all(op["duration_ns"] > 0 for op in t.ops)
    assert t.check() == ""
    path = str(tmp_path / "run.trace")
    t.save(path)
    again = spyre_dma.Trace.load(path)
    assert again.to_jsonl() == t.to_jsonl()
    assert spyre_dma.Trace.from_jsonl(t.to_jsonl()).ops == t.ops
    frame = t.to_frame()
    assert list(frame["kind"]) == ["h2d", "fill", "d2h"]


def test_capture_needs_capture_true(sim):
    with pytest.raises(spyre_dma.InvalidArgument, match="capture=True"):
        sim.captured_trace()


def test_trace_errors_name_line_and_field(tmp_path):
    bad = tmp_path / "bad.trace"
    bad.write_text('{"format": "spyre-dma-trace", "version": 1}\n{"op": {"id": 1, "kind": "sideways"}}\n')
    with pytest.raises(spyre_dma.TraceError) as e:
        spyre_dma.Trace.load(str(bad))
    assert e.value.line == 2 and e.value.field == "op.kind" and "sideways" in str(e.value)
    with pytest.raises(spyre_dma.OutputError):
        capture_some().save(str(tmp_path / "no" / "such" / "folder" / "t.trace"))


def test_kineto_import_replay_compare():
    t, report = spyre_dma.import_kineto(KINETO, link="PCIe Gen4 x16")
    assert report["memcpy"] == 16 and report["malformed"] == 0
    assert t.header["link"] == "PCIe Gen4 x16"
    r = spyre_dma.replay(t)
    assert r.data_ok and r.total_ns > 0 and len(r.ops) == len(t)
    c = spyre_dma.compare(t, r)
    groups = c.groups_frame()
    assert {"direction", "size_class", "median_abs_rel_error"} <= set(groups.columns)
    assert "h2d pageable" in c.table()
    frame = c.to_frame()
    assert (frame["captured_ns"] > 0).all()


def test_compare_in_host_time():
    # A capture records each op's host time beside its device time; compare sets either against
    # the replay's, the host time holding the pageable copies' staging.
    t = capture_some()
    assert all(op["host_duration_ns"] >= op["duration_ns"] for op in t.ops)
    r = spyre_dma.replay(t)
    assert {"host_start_ns", "host_duration_ns"} <= set(r.to_frame().columns)
    host, device = spyre_dma.compare(t, r, timing="host"), spyre_dma.compare(t, r)
    assert host.timing == "host" and device.timing == "device"
    assert host.table().startswith("timing: host")
    assert len(host.ops) == len(device.ops) == 3
    h2d = host.ops[0]
    assert h2d["direction"] == "h2d pageable" and h2d["simulated_ns"] > 2 * device.ops[0]["simulated_ns"]
    with pytest.raises(ValueError, match="sideways"):
        spyre_dma.compare(t, r, timing="sideways")
    # The worst ops, worst first, each with its stream and captured start (trace compare --top).
    worst = spyre_dma.compare(t, r, timing="host").worst(t, 2)
    lines = worst.splitlines()
    assert lines[0].startswith("worst 2 of ") and lines[0].endswith("compared ops (host time):"), worst
    assert len(lines) == 4 and lines[2].split()[0] == "1" and lines[3].split()[0] == "2", worst


def test_replay_on_refdev_checks_data():
    t = capture_some()
    r = spyre_dma.replay(t, "refdev")
    assert r.data_ok, r.data_error
    assert len(r.to_frame()) == len(t)


def test_replay_is_deterministic_on_sim():
    t = spyre_dma.Trace.load(os.path.join(DATA, "alexnet-a100.jsonl"))
    assert spyre_dma.replay(t).to_dict() == spyre_dma.replay(t).to_dict()


def test_bandwidth_test_import_and_calibrate(tmp_path):
    t = spyre_dma.import_bandwidth_test(os.path.join(DATA, "cuda_memory_h2d_bw.log"), link="PCIe Gen3 x16")
    assert len(t) > 0 and all(op["kind"] == "h2d" for op in t.ops)
    cal = spyre_dma.calibrate(t, fit="atleast:1MB", max_replays=4, fit_copies_per_size=1)
    # The budget's replays, one of the whole trace with the result, one per fitted parameter for its
    # uncertainty (docs/traces.md, "Staying physical").
    assert cal.replays <= 5 + len(cal.parameters) and cal.rms_log_error >= 0
    for p in cal.parameters:  # inside its physical bounds, with its interval around it
        lo, hi = p["physical_bounds"]
        assert lo <= p["value"] <= hi, p
        assert p["interval_90"][0] is None or p["interval_90"][0] <= p["value"] <= p["interval_90"][1], p
    assert all(i["lo_ns"] <= i["simulated_ns"] for i in cal.intervals)
    assert cal.config["preset"] == cal.preset_json()["preset"]
    out = str(tmp_path / "fitted.json")
    cal.save_config(out)
    # The file loads back to the fitted configuration.
    assert spyre_dma.model_config(config=out) == cal.config
    # Strict JSON (any reader opens it), saying where it came from.
    with open(out) as f:
        about = json.load(f)["about"]
    assert about["made_by"] == "spyre-dma trace calibrate" and about["rms_log_error"] == cal.rms_log_error


def test_ranks_calibrate_together(tmp_path):
    # Two ranks (here the same capture twice) fitted together on a server of one device each.
    t = capture_some()
    alone = spyre_dma.calibrate(t, max_replays=4)
    cal = spyre_dma.calibrate([t, t], max_replays=4)
    assert cal.config["topology"]["devices"] == 2
    assert len(cal.fit.ops) == 2 * len(alone.fit.ops) > 0
    out = str(tmp_path / "node.json")
    cal.save_config(out)
    with open(out) as f:
        assert " + " in json.load(f)["about"]["trace"]  # the file names both traces
    # A server preset keeps its arrangement with one device per trace: two behind one switch.
    assert spyre_dma.calibrate([t, t], preset="dgx-a100-gen4", max_replays=4).config["topology"]["devices"] == 2
    with pytest.raises(ValueError, match="empty list"):
        spyre_dma.calibrate([])
    # Fit on rank 0, predict rank 1: every copy of rank 1 is held out.
    held = spyre_dma.calibrate([t, t], max_replays=4, fit_ranks=[0])
    assert len(held.fit.ops) == len(held.holdout.ops) == len(alone.fit.ops)
    with pytest.raises(ValueError, match="fit rank 2"):
        spyre_dma.calibrate([t, t], max_replays=4, fit_ranks=[2])


def test_model_configuration_and_presets():
    names = [p["name"] for p in spyre_dma.presets()]
    assert "gen4x16" in names
    assert spyre_dma.model_config(preset="gen4x16")["link"]["generation"] == 4
    with pytest.raises(spyre_dma.ConfigError, match="gen9x99"):
        spyre_dma.model_config(preset="gen9x99")
    with pytest.raises(ValueError, match="give one"):
        spyre_dma.model_config(preset="gen4x16", config="x.json")


CORPUS = os.path.join(os.path.dirname(DATA), "..", "testbench", "fuzz", "corpus")


def test_bandwidth_tool_imports():
    t, report = spyre_dma.import_nvbandwidth(os.path.join(CORPUS, "nvbandwidth", "two_gpus_v08.json"),
                                             link="PCIe Gen5 x16")
    assert report["imported"] > 0 and report["points"] > 0 and report["buffer_bytes_assumed"]
    assert t.header["source"].startswith("nvbandwidth:") and t.header["link"] == "PCIe Gen5 x16"
    assert {op["kind"] for op in t.ops} <= {"h2d", "d2h", "d2d"}
    assert t.check() == ""
    t, report = spyre_dma.import_rocm_bandwidth_test(os.path.join(CORPUS, "rocm_bandwidth", "rbt_unidir_tables.log"))
    assert report["imported"] > 0 and t.header["source"].startswith("rocm-bandwidth-test:")
    t, report = spyre_dma.import_hip_bus_bandwidth(os.path.join(CORPUS, "rocm_bandwidth", "hip_pinned_summary.log"))
    assert report["imported"] > 0 and all(op["host"] == "registered" for op in t.ops)
    with pytest.raises(spyre_dma.TraceError) as e:
        spyre_dma.import_nvbandwidth(os.path.join(CORPUS, "nvbandwidth", "bad_cell.json"))
    assert e.value.field.startswith("nvbandwidth.testcases[")


def test_nvbandwidth_concurrent_testcases_replay_on_their_devices():
    # The bidirectional testcase and the host latency become groups on the two GPUs' devices;
    # replayed on a simulated server of two, compare reports them apart from the one-way copies.
    t, report = spyre_dma.import_nvbandwidth(os.path.join(CORPUS, "nvbandwidth", "two_gpus_v08.json"),
                                             buffer_bytes=1 << 20)
    assert report["bidirectional"] == 1 and report["latency"] == 1 and report["gpus"] == 2
    assert report["groups"] == 2 and report["latency_points"] == 2
    assert t.header["devices"] == 2 and len(t.header["extra"]["groups"]) == 4
    assert {op.get("device", 0) for op in t.ops} == {0, 1}
    assert list(t.to_frame().columns[:3]) == ["id", "device", "stream"]
    r = spyre_dma.replay(t, "sim", fidelity="burst")
    assert r.data_ok, r.data_error
    c = spyre_dma.compare(t, r)
    directions = {g["direction"] for g in c.groups}
    assert "h2d registered (d2h beside)" in directions and "all concurrent" in directions
    assert len(c.to_dict()["latency"]["ops"]) == 2
