"""Compare two oracle trace files: RMM 26.10's (the oracle) and ours.

    python3 tests/oracle/compare.py RMM.jsonl OURS.jsonl [--name NAME] [--max-shown N]

Each file holds one JSON object a line: {"scenario": str, "status": "ok"|"skipped",
"reason": str, "trace": [[label, value], ...]} (other keys are shown, not compared). The Python
runner and the C++ side write the same format.

For each divergence it prints the scenario, the first label where the traces differ, RMM's value
and ours; then one summary line:

    oracle NAME: N scenarios, A agree, D diverge, S skipped

A scenario skipped on either side counts as skipped; one found in only one file diverges. The exit
status is 1 where anything diverges, 2 on unreadable input, else 0.
"""

import argparse
import json
import sys


def load(path):
    """The file's records by scenario name, in file order."""
    out = {}
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                rec = json.loads(line)
                name = rec["scenario"]
            except (ValueError, KeyError, TypeError) as e:
                raise ValueError(f"{path}:{n}: not a scenario record ({e})") from None
            rec.setdefault("status", "ok")
            rec.setdefault("reason", "")
            rec.setdefault("trace", [])
            out[name] = rec
    return out


def first_difference(a, b, start=0):
    """(index, label, a's value, b's value) at the first differing trace entry from ``start``,
    or None."""
    for i in range(start, max(len(a), len(b))):
        ea = a[i] if i < len(a) else None
        eb = b[i] if i < len(b) else None
        if ea != eb:
            label = (ea or eb)[0]
            if ea is not None and eb is not None and ea[0] != eb[0]:
                label = f"{ea[0]} | {eb[0]}"
            va = ["<end of trace>"] if ea is None else ea
            vb = ["<end of trace>"] if eb is None else eb
            return i, label, va[-1] if ea is not None else va[0], vb[-1] if eb is not None else vb[0]
    return None


def show(v, limit=400):
    s = v if isinstance(v, str) and v == "<end of trace>" else json.dumps(v, sort_keys=True)
    return s if len(s) <= limit else s[:limit] + "..."


def all_differences(a, b, limit):
    """Up to ``limit`` differing entries, as first_difference gives them."""
    out, i = [], 0
    while len(out) < limit:
        d = first_difference(a, b, i)
        if d is None:
            break
        out.append(d)
        i = d[0] + 1
    return out


def compare(rmm, ours, per_scenario=1):
    """(agree, diverge, skipped, divergences, notes) for two loaded files; each divergence lists
    up to ``per_scenario`` differing trace entries."""
    names = list(rmm) + [n for n in ours if n not in rmm]
    agree, skipped, divergences = 0, 0, []
    one_sided = {}  # (who, reason) -> scenario names skipped on that side only
    for name in names:
        a, b = rmm.get(name), ours.get(name)
        if a is None or b is None:
            side = "ours" if b is None else "RMM's"
            divergences.append((name, "<scenario>", "present" if a else "missing",
                                "present" if b else "missing", f"missing from {side} file"))
            continue
        if a["status"] == "skipped" or b["status"] == "skipped":
            skipped += 1
            if a["status"] != b["status"]:
                who = "RMM" if a["status"] == "skipped" else "ours"
                why = (a if who == "RMM" else b)["reason"]
                one_sided.setdefault((who, why), []).append(name)
            continue
        diffs = all_differences(a["trace"], b["trace"], max(1, per_scenario))
        if not diffs:
            agree += 1
            continue
        extra = "; ".join(
            f"{who} detail: {r['detail']}" for who, r in (("RMM", a), ("ours", b))
            if r.get("detail")
        )
        for n, (i, label, va, vb) in enumerate(diffs):
            divergences.append((name, f"#{i} {label}", va, vb, extra if n == 0 else ""))
    notes = []
    for (who, why), group in one_sided.items():
        if len(group) == 1:
            notes.append(f"note {group[0]}: skipped for {who} only: {why}")
        else:
            notes.append(f"note {len(group)} scenarios ({group[0]}, ...) skipped for {who} only: "
                         f"{why}")
    return agree, len({d[0] for d in divergences}), skipped, divergences, notes


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("rmm")
    ap.add_argument("ours")
    ap.add_argument("--name", help="the summary's name (default: ours's file name)")
    ap.add_argument("--max-shown", type=int, default=0, help="print at most N divergences (0: all)")
    ap.add_argument("--per-scenario", type=int, default=1,
                    help="differing trace entries shown per scenario (default 1: the first)")
    args = ap.parse_args(argv)
    name = args.name or args.ours.rsplit("/", 1)[-1].removesuffix(".jsonl")
    try:
        rmm, ours = load(args.rmm), load(args.ours)
    except (OSError, ValueError) as e:
        print(f"oracle {name}: cannot compare: {e}")
        return 2
    agree, diverge, skipped, divergences, notes = compare(rmm, ours, args.per_scenario)
    for n, (scn, where, va, vb, extra) in enumerate(divergences):
        if args.max_shown and n >= args.max_shown:
            print(f"... {len(divergences) - n} more divergences not shown")
            break
        print(f"DIVERGE {scn} at {where}")
        print(f"    rmm:  {show(va)}")
        print(f"    ours: {show(vb)}")
        if extra:
            print(f"    ({extra})")
    for note in notes:
        print(note)
    total = len(set(rmm) | set(ours))
    print(f"oracle {name}: {total} scenarios, {agree} agree, {diverge} diverge, {skipped} skipped")
    return 1 if diverge else 0


if __name__ == "__main__":
    sys.exit(main())
