"""Host tests of the oracle harness (tests/oracle): the comparator on made-up traces, and the
runner's paths that need no GPU — skipping with a reason, a crash or timeout in one scenario not
losing the others, exceptions and skips recorded."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
ORACLE = os.path.join(REPO, "tests", "oracle")
RUNNER = os.path.join(ORACLE, "python", "runner.py")
COMPARE = os.path.join(ORACLE, "compare.py")


def write_jsonl(path, records):
    with open(path, "w") as f:
        for r in records:
            f.write(json.dumps(r) + "\n")


def rec(name, trace, status="ok", reason=""):
    return {"scenario": name, "status": status, "reason": reason, "trace": trace}


def run_compare(tmp_path, rmm_records, ours_records, *extra):
    a, b = tmp_path / "rmm.jsonl", tmp_path / "ours.jsonl"
    write_jsonl(a, rmm_records)
    write_jsonl(b, ours_records)
    p = subprocess.run([sys.executable, COMPARE, str(a), str(b), *extra],
                       capture_output=True, text=True)
    return p.returncode, p.stdout


def test_compare_all_agree(tmp_path):
    recs = [rec("m/a", [["x", 1], ["y", {"raises": "MemoryError"}]]), rec("m/b", [])]
    rc, out = run_compare(tmp_path, recs, recs, "--name", "t")
    assert rc == 0
    assert out.strip().splitlines()[-1] == (
        "oracle t: 2 scenarios, 2 agree, 0 diverge, 0 documented, 0 skipped")
    assert "DIVERGE" not in out


def test_compare_reports_first_difference(tmp_path):
    rmm = [rec("m/a", [["x", 1], ["y", 2], ["z", 3]]), rec("m/b", [["k", "v"]])]
    ours = [rec("m/a", [["x", 1], ["y", 5], ["z", 4]]), rec("m/b", [["k", "v"]])]
    rc, out = run_compare(tmp_path, rmm, ours, "--name", "t")
    assert rc == 1
    lines = out.splitlines()
    assert lines[0] == "DIVERGE m/a at #1 y"
    assert lines[1].split() == ["rmm:", "2"]
    assert lines[2].split() == ["ours:", "5"]
    assert "z" not in out.split("oracle t:")[0].replace("DIVERGE", "")
    assert lines[-1] == "oracle t: 2 scenarios, 1 agree, 1 diverge, 0 documented, 0 skipped"


def test_compare_shorter_trace_and_label_mismatch(tmp_path):
    rmm = [rec("m/a", [["x", 1], ["crash", "worker exited with -11"]]), rec("m/b", [["p", 1]])]
    ours = [rec("m/a", [["x", 1]]), rec("m/b", [["q", 1]])]
    rc, out = run_compare(tmp_path, rmm, ours, "--name", "t")
    assert rc == 1
    assert "DIVERGE m/a at #1 crash" in out
    assert "<end of trace>" in out
    assert "DIVERGE m/b at #0 p | q" in out
    assert out.splitlines()[-1] == (
        "oracle t: 2 scenarios, 0 agree, 2 diverge, 0 documented, 0 skipped")


def test_compare_skipped_and_missing(tmp_path):
    rmm = [rec("m/a", [], "skipped", "no GPU"), rec("m/b", [["x", 1]], "skipped", "cupy"),
           rec("m/c", [["x", 1]]), rec("m/only_rmm", [])]
    ours = [rec("m/a", [], "skipped", "no GPU"), rec("m/b", [["x", 2]]), rec("m/c", [["x", 1]]),
            rec("m/only_ours", [])]
    rc, out = run_compare(tmp_path, rmm, ours, "--name", "t")
    assert rc == 1
    assert "note m/b: skipped for RMM only: cupy" in out
    assert "DIVERGE m/only_rmm at <scenario>" in out
    assert "DIVERGE m/only_ours at <scenario>" in out
    assert out.splitlines()[-1] == (
        "oracle t: 5 scenarios, 1 agree, 2 diverge, 0 documented, 2 skipped")


def test_compare_default_name_and_bad_input(tmp_path):
    recs = [rec("m/a", [])]
    a, b = tmp_path / "cpp-rmm.jsonl", tmp_path / "cpp-ours.jsonl"
    write_jsonl(a, recs)
    write_jsonl(b, recs)
    p = subprocess.run([sys.executable, COMPARE, str(a), str(b)], capture_output=True, text=True)
    assert p.returncode == 0
    assert p.stdout.strip() == (
        "oracle cpp-ours: 1 scenarios, 1 agree, 0 diverge, 0 documented, 0 skipped")
    b.write_text("not json\n")
    p = subprocess.run([sys.executable, COMPARE, str(a), str(b)], capture_output=True, text=True)
    assert p.returncode == 2
    assert "cannot compare" in p.stdout


def run_runner(tmp_path, *args, env_extra=None):
    out = tmp_path / "out.jsonl"
    env = dict(os.environ)
    env.update(env_extra or {})
    p = subprocess.run([sys.executable, RUNNER, "--out", str(out), *args], capture_output=True,
                       text=True, env=env, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    return {r["scenario"]: r for r in lines}, p.stdout


def test_runner_without_gpu_skips_gpu_scenarios_with_reason(tmp_path):
    res, out = run_runner(tmp_path, "--impl", "ours", "--only", "reinit/reinitialize/*", "--only",
                          "modules/names/rmm.mr", env_extra={"ORACLE_GPUS": "0"})
    gpu = [r for n, r in res.items() if n.startswith("reinit/")]
    assert len(gpu) > 10
    assert all(r["status"] == "skipped" and "no GPU" in r["reason"] for r in gpu)
    host = res["modules/names/rmm.mr"]
    assert host["status"] == "ok"
    labels = [e[0] for e in host["trace"]]
    assert labels == ["public", "private", "__all__", "is_package"]
    assert "PoolMemoryResource" in host["trace"][0][1]
    assert "skipped: no GPU" in out


def test_runner_without_rmm_skips_everything(tmp_path):
    fake = tmp_path / "site" / "rmm"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('this rmm is broken')\n")
    res, out = run_runner(tmp_path, "--impl", "rmm", "--only", "modules/names/*",
                          env_extra={"PYTHONPATH": str(tmp_path / "site")})
    assert res
    assert all(r["status"] == "skipped" and "cannot import rmm" in r["reason"]
               for r in res.values())
    assert "this rmm is broken" in next(iter(res.values()))["reason"]


def test_runner_refuses_the_wrong_implementation(tmp_path):
    res, _ = run_runner(tmp_path, "--impl", "rmm", "--only", "modules/names/rmm")
    assert res
    assert all(r["status"] == "skipped" and "is rmm-rs" in r["reason"] for r in res.values())


FAKE_SCENARIOS = textwrap.dedent('''
    import os, time
    from oracle_lib import scenario, register

    @scenario(needs_gpus=0)
    def a_ok(t):
        t.rec("int", 3)
        t.rec("tuple", (1, "x"))
        t.call("raises", int, "nope")
        t.call("raises_msg", int, "nope", msg=True)
        t.call("returns", lambda: {"k": [1, 2]})

    @scenario(needs_gpus=0)
    def b_crash(t):
        t.rec("before", 1)
        os.abort()

    @scenario(needs_gpus=0)
    def c_after_crash(t):
        t.rec("alive", True)

    @scenario(needs_gpus=0)
    def d_escapes(t):
        t.rec("x", 1)
        raise KeyError("boom")

    @scenario(needs_gpus=0)
    def e_skips(t):
        t.skip("no such library")

    @scenario(needs_gpus=0)
    def f_hangs(t):
        t.rec("sleeping", True)
        time.sleep(60)

    @scenario(needs_gpus=0)
    def g_last(t):
        t.rec("last", True)

    @scenario(needs_gpus=2)
    def h_two(t):
        t.rec("never", True)

    @scenario(needs_gpus=0, isolate=True)
    def i_alone(t):
        t.rec("pid_differs", True)
''')


def test_runner_isolates_crashes_timeouts_and_records_everything(tmp_path):
    pkg = tmp_path / "fake_scenarios"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "basic.py").write_text(FAKE_SCENARIOS)
    res, out = run_runner(tmp_path, "--impl", "ours", "--scenarios", str(pkg), "--timeout", "5",
                          env_extra={"ORACLE_GPUS": "0"})
    names = list(res)
    assert names == [f"basic/{n}" for n in ["a_ok", "b_crash", "c_after_crash", "d_escapes",
                                            "e_skips", "f_hangs", "g_last", "h_two", "i_alone"]]
    a = res["basic/a_ok"]
    assert a["status"] == "ok"
    assert a["trace"] == [["int", 3], ["tuple", [1, "x"]], ["raises", {"raises": "ValueError"}],
                          ["raises_msg", {"raises": "ValueError", "message":
                                          "invalid literal for int() with base 10: 'nope'"}],
                          ["returns", {"k": [1, 2]}]]
    b = res["basic/b_crash"]
    assert b["trace"][0] == ["before", 1]
    assert b["trace"][-1][0] == "crash"
    assert res["basic/c_after_crash"]["trace"] == [["alive", True]]
    d = res["basic/d_escapes"]
    assert d["trace"] == [["x", 1], ["escaped", {"raises": "KeyError"}]]
    assert "boom" in d["detail"]
    e = res["basic/e_skips"]
    assert (e["status"], e["reason"], e["trace"]) == ("skipped", "no such library", [])
    f = res["basic/f_hangs"]
    assert f["trace"] == [["sleeping", True], ["timeout", "no result within 5.0 s"]]
    assert res["basic/g_last"]["trace"] == [["last", True]]
    h = res["basic/h_two"]
    assert h["status"] == "skipped" and "no GPU" in h["reason"]
    assert res["basic/i_alone"]["trace"] == [["pid_differs", True]]
    assert "2 crashed or timed out" in out


def test_every_registered_scenario_has_a_unique_name():
    sys.path.insert(0, os.path.join(ORACLE, "python"))
    try:
        import runner

        reg = runner.load_scenarios()
    finally:
        sys.path.pop(0)
    assert len(reg) >= 300
    assert all(sc.name.count("/") >= 1 for sc in reg.values())
    assert {sc.needs_gpus for sc in reg.values()} <= {0, 1, 2}


@pytest.mark.parametrize("value,expected", [
    ((1, 2), [1, 2]),
    ({"a": (1,)}, {"a": [1]}),
    (b"\x01\x02", {"bytes": "0102", "len": 2}),
    (float("nan"), "nan"),
    (object(), {"type": "object"}),
])
def test_norm(value, expected):
    sys.path.insert(0, os.path.join(ORACLE, "python"))
    try:
        import oracle_lib
    finally:
        sys.path.pop(0)
    assert oracle_lib.norm(value) == expected


def test_runner_skips_what_needs_more_gpus(tmp_path):
    pkg = tmp_path / "fake_scenarios"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "basic.py").write_text(FAKE_SCENARIOS)
    res, _ = run_runner(tmp_path, "--impl", "ours", "--scenarios", str(pkg), "--only",
                        "basic/h_two", "--gpus", "2", env_extra={"ORACLE_GPUS": "1"})
    (h,) = res.values()
    assert h["status"] == "skipped"
    assert h["reason"] == "needs 2 GPUs; this run has 1 (found 1)"
    res, _ = run_runner(tmp_path, "--impl", "ours", "--scenarios", str(pkg), "--min-gpus", "2",
                        env_extra={"ORACLE_GPUS": "0"})
    assert list(res) == ["basic/h_two"]


def test_runner_reports_a_worker_dying_after_its_last_scenario(tmp_path):
    pkg = tmp_path / "fake_scenarios"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "atexit_crash.py").write_text(textwrap.dedent('''
        import atexit, os
        from oracle_lib import scenario

        @scenario(needs_gpus=0)
        def last(t):
            atexit.register(os._exit, 3)
            t.rec("done", True)
    '''))
    res, out = run_runner(tmp_path, "--impl", "ours", "--scenarios", str(pkg),
                          env_extra={"ORACLE_GPUS": "0"})
    assert res["atexit_crash/last"]["trace"] == [["done", True]]
    assert "the worker exited with 3 after its last scenario (atexit_crash/last)" in out


def test_compare_per_scenario_lists_every_difference_once_counted(tmp_path):
    rmm = [rec("m/a", [["x", 1], ["y", 2], ["z", 3], ["w", 0]])]
    ours = [rec("m/a", [["x", 1], ["y", 5], ["z", 4], ["w", 0]])]
    rc, out = run_compare(tmp_path, rmm, ours, "--name", "t", "--per-scenario", "5")
    assert rc == 1
    assert [ln for ln in out.splitlines() if ln.startswith("DIVERGE")] == [
        "DIVERGE m/a at #1 y", "DIVERGE m/a at #2 z"]
    assert out.splitlines()[-1] == "oracle t: 1 scenarios, 0 agree, 1 diverge, 0 documented, 0 skipped"


KNOWN = os.path.join(ORACLE, "known_differences.json")
DIFFERENCES = os.path.join(REPO, "docs", "differences.md")


def write_known(tmp_path, entries):
    path = tmp_path / "known.json"
    path.write_text(json.dumps(entries))
    return str(path)


def test_compare_documented_differences_do_not_fail(tmp_path):
    known = write_known(tmp_path, [
        {"scenario": "m/grow*", "label": "size*", "doc": "docs/differences.md#growth",
         "why": "saves memory"},
        {"scenario": "m/crash", "label": None, "doc": "docs/differences.md#crash", "why": "RMM crashes"},
    ])
    rmm = [rec("m/grow1", [["x", 1], ["size1", 2]]), rec("m/grow2", [["size0", 1], ["y", 2]]),
           rec("m/crash", [["crash", "worker exited with -8"]]), rec("m/other", [["size1", 1]]),
           rec("m/same", [["x", 1]])]
    ours = [rec("m/grow1", [["x", 1], ["size1", 3]]), rec("m/grow2", [["size0", 1], ["y", 3]]),
            rec("m/crash", [["add_zero", {"raises": "ValueError"}]]), rec("m/other", [["size1", 2]]),
            rec("m/same", [["x", 1]])]
    rc, out = run_compare(tmp_path, rmm, ours, "--name", "t", "--known", known)
    assert rc == 1  # m/grow2 (label y) and m/other (scenario) match no entry
    lines = out.splitlines()
    assert "DOCUMENTED m/grow1 at #1 size1 (docs/differences.md#growth: saves memory)" in lines
    assert "DOCUMENTED m/crash at #0 crash | add_zero (docs/differences.md#crash: RMM crashes)" in lines
    assert "DIVERGE m/grow2 at #1 y" in lines
    assert "DIVERGE m/other at #0 size1" in lines
    assert lines[-1] == "oracle t: 5 scenarios, 1 agree, 2 diverge, 2 documented, 0 skipped"
    # Only documented ones left: exit 0.
    rc, out = run_compare(tmp_path, rmm[:1] + rmm[2:3], ours[:1] + ours[2:3], "--name", "t",
                          "--known", known)
    assert rc == 0, out
    assert out.splitlines()[-1] == "oracle t: 2 scenarios, 0 agree, 0 diverge, 2 documented, 0 skipped"


def test_compare_documented_matches_only_the_first_difference(tmp_path):
    known = write_known(tmp_path, [{"scenario": "m/a", "label": "z", "doc": "docs/differences.md#z",
                                    "why": "w"}])
    rmm = [rec("m/a", [["y", 1], ["z", 1]])]
    ours = [rec("m/a", [["y", 2], ["z", 2]])]
    rc, out = run_compare(tmp_path, rmm, ours, "--name", "t", "--known", known, "--per-scenario", "5")
    assert rc == 1
    assert "DOCUMENTED" not in out
    assert out.splitlines()[-1] == "oracle t: 1 scenarios, 0 agree, 1 diverge, 0 documented, 0 skipped"


@pytest.mark.parametrize("entries", [
    {"scenario": "m/a"},
    [{"scenario": "m/a", "label": None, "doc": "README.md#x", "why": "w"}],
    [{"scenario": "m/a", "label": None, "doc": "docs/differences.md#", "why": "w"}],
    [{"scenario": "m/a", "label": None, "doc": "docs/differences.md#x", "why": ""}],
    [{"scenario": "m/a", "label": 3, "doc": "docs/differences.md#x", "why": "w"}],
])
def test_compare_refuses_a_bad_known_file(tmp_path, entries):
    recs = [rec("m/a", [])]
    rc, out = run_compare(tmp_path, recs, recs, "--known", write_known(tmp_path, entries))
    assert rc == 2
    assert "cannot compare" in out


def test_every_known_difference_points_at_a_row_of_the_table():
    """Each entry of the repository's known_differences.json names an anchor that is a row of the
    table "Differences from RMM 26.10", and says why."""
    import re

    with open(KNOWN) as f:
        entries = json.load(f)
    assert entries
    with open(DIFFERENCES) as f:
        rows = [ln for ln in f if ln.startswith("|")]
    anchors = {}
    for row in rows:
        for a in re.findall(r'<a id="([^"]+)"></a>', row):
            anchors[a] = row
    for e in entries:
        assert e["why"].strip(), e
        assert e["doc"].startswith("docs/differences.md#"), e
        anchor = e["doc"].split("#", 1)[1]
        assert anchor in anchors, f"{e['doc']} is no row of docs/differences.md"
        assert anchors[anchor].count("|") >= 5  # | Behaviour | RMM | rmm-rs | Why |
