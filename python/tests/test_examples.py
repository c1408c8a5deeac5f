"""The Python examples: each one compiles, and with a GPU (and the libraries it uses) the quick
starts run to the end and leave a snapshot that PyTorch's memory viewer reads."""

import pickle
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "python"


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.py")), ids=lambda p: p.name)
def test_every_example_compiles(path):
    compile(path.read_text(), str(path), "exec")


@pytest.mark.parametrize(
    "name, needs",
    [("quick_start.py", ["torch", "cupy"]), ("snapshot_training.py", ["torch"])],
)
def test_a_quick_start_runs_and_leaves_a_snapshot(gpu, tmp_path, name, needs):
    for module in needs:
        pytest.importorskip(module)
    snapshot = tmp_path / "snapshot.pickle"
    args = [sys.executable, str(EXAMPLES / name)]
    if name == "snapshot_training.py":
        args.append(str(snapshot))
    done = subprocess.run(args, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    with open(snapshot, "rb") as f:
        data = pickle.load(f)
    events = [e for trace in data["device_traces"] for e in trace]
    assert any(e["action"] == "alloc" for e in events), "the history recorded no allocation"
    torch_viz = pytest.importorskip("torch.cuda._memory_viz")
    assert "<html" in torch_viz.trace_plot(data).lower()
