"""python/tools/snapshot_timeline.py: a snapshot's active-memory timeline as an SVG picture."""
import pathlib
import pickle
import subprocess
import sys
import xml.etree.ElementTree as ET

TOOL = pathlib.Path(__file__).resolve().parents[1] / "tools" / "snapshot_timeline.py"
SVG = "{http://www.w3.org/2000/svg}"


def _snapshot(path, trace):
    path.write_bytes(pickle.dumps({"segments": [], "device_traces": [trace], "allocator_settings": {}}))


def test_each_allocation_is_one_band_stacked_on_those_alive_before_it(tmp_path):
    mib = 1 << 20
    trace = [
        {"action": "alloc", "addr": 0x1000, "size": 4 * mib},
        {"action": "alloc", "addr": 0x2000, "size": 2 * mib},
        {"action": "free_requested", "addr": 0x1000, "size": 4 * mib},
        {"action": "free_completed", "addr": 0x1000, "size": 4 * mib},
        {"action": "alloc", "addr": 0x3000, "size": 1 * mib},
    ]
    _snapshot(tmp_path / "s.pickle", trace)
    subprocess.run([sys.executable, str(TOOL), str(tmp_path / "s.pickle"), str(tmp_path / "t.svg")], check=True)
    root = ET.parse(tmp_path / "t.svg").getroot()
    bands = root.findall(f"{SVG}polygon")
    assert len(bands) == 3
    texts = [t.text for t in root.findall(f"{SVG}text")]
    assert "3 allocations" in texts[0]
    assert "6.0 MiB" in texts  # the peak: both first blocks alive at once


def test_an_empty_trace_draws_axes_only(tmp_path):
    _snapshot(tmp_path / "s.pickle", [])
    subprocess.run([sys.executable, str(TOOL), str(tmp_path / "s.pickle"), str(tmp_path / "t.svg")], check=True)
    root = ET.parse(tmp_path / "t.svg").getroot()
    assert root.findall(f"{SVG}polygon") == []
