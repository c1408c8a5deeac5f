"""Compare two oracle trace files: RMM 26.10's (the oracle) and ours.

    python3 tests/oracle/compare.py RMM.jsonl OURS.jsonl [--name NAME] [--max-shown N]
        [--per-scenario K] [--known FILE]

Each file holds one JSON object a line: {"scenario": str, "status": "ok"|"skipped",
"reason": str, "trace": [[label, value], ...]} (other keys are shown, not compared). The Python
runner and the C++ side write the same format.

For each divergence it prints the scenario, the first label where the traces differ, RMM's value
and ours; then one summary line:

    oracle NAME: N scenarios, A agree, D diverge, K documented, S skipped

A divergence is "documented" where its first differing (scenario, label) matches an entry of the
known-differences file (default: known_differences.json beside this script; --known '' reads
none): a JSON list of {"scenario": glob, "label": glob or null (any label), "doc":
"docs/differences.md#anchor", "why": str}. It is printed as DOCUMENTED with its doc link and does
not count as a divergence. A scenario skipped on either side counts as skipped; one found in only
one file diverges. The exit status is 1 where anything diverges (documented ones aside), 2 on
unreadable input, else 0.
"""

import argparse
import fnmatch
import json
import os
import re
import sys

#: The known-differences file read by default.
KNOWN_DEFAULT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "known_differences.json")
#: Where every entry's "doc" must point: a row of this file, by anchor.
DOC_PREFIX = "docs/differences.md#"


#: The source location RMM's RMM_EXPECTS/RMM_FAIL put into messages ("RMM failure at:
#: /path/file.hpp:123: "; the C++ side writes it as "RMM failure at <loc>: "): where RMM was
#: built, not what went wrong. Cut from messages on both sides before comparing.
_RMM_LOCATION = re.compile(r"RMM failure at:? ?(<loc>|\S+:\d+): ")


def _without_locations(value):
    """``value`` with the source locations cut from every exception message in it."""
    if isinstance(value, dict):
        return {k: (_RMM_LOCATION.sub("", v) if k == "message" and isinstance(v, str)
                    else _without_locations(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [_without_locations(v) for v in value]
    return value


def load(path):
    """The file's records by scenario name, in file order (messages without RMM's source
    locations)."""
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
            rec["trace"] = _without_locations(rec.get("trace") or [])
            out[name] = rec
    return out


def load_known(path):
    """The known-differences entries of ``path`` (a JSON list), checked; [] for no path."""
    if not path:
        return []
    with open(path) as f:
        try:
            entries = json.load(f)
        except ValueError as e:
            raise ValueError(f"{path}: not JSON ({e})") from None
    if not isinstance(entries, list):
        raise ValueError(f"{path}: not a list of entries")
    for n, e in enumerate(entries):
        where = f"{path}: entry {n}"
        if not isinstance(e, dict):
            raise ValueError(f"{where}: not an object")
        for key in ("scenario", "doc", "why"):
            if not isinstance(e.get(key), str) or not e[key]:
                raise ValueError(f"{where}: needs a non-empty string {key!r}")
        if e.get("label") is not None and not isinstance(e["label"], str):
            raise ValueError(f"{where}: 'label' is a glob string or null")
        if not e["doc"].startswith(DOC_PREFIX) or len(e["doc"]) == len(DOC_PREFIX):
            raise ValueError(f"{where}: 'doc' must be {DOC_PREFIX}<anchor>")
    return entries


def known_entry(known, scenario, label):
    """The first entry of ``known`` matching ``scenario`` and the differing ``label`` (either
    side's, where the two traces hold different labels there), or None."""
    labels = [part.strip() for part in label.split(" | ")]
    for e in known:
        if not fnmatch.fnmatchcase(scenario, e["scenario"]):
            continue
        if e.get("label") is None or any(fnmatch.fnmatchcase(x, e["label"]) for x in labels):
            return e
    return None


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


def compare(rmm, ours, per_scenario=1, known=()):
    """(agree, diverge, documented, skipped, divergences, notes) for two loaded files; each
    divergence lists up to ``per_scenario`` differing trace entries, as (scenario, where, RMM's
    value, ours, extra, entry) where ``entry`` is the known difference it matches (or None)."""
    names = list(rmm) + [n for n in ours if n not in rmm]
    agree, skipped, divergences = 0, 0, []
    one_sided = {}  # (who, reason) -> scenario names skipped on that side only
    for name in names:
        a, b = rmm.get(name), ours.get(name)
        if a is None or b is None:
            side = "ours" if b is None else "RMM's"
            divergences.append((name, "<scenario>", "present" if a else "missing",
                                "present" if b else "missing", f"missing from {side} file", None))
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
        entry = known_entry(known, name, diffs[0][1])
        for n, (i, label, va, vb) in enumerate(diffs):
            divergences.append((name, f"#{i} {label}", va, vb, extra if n == 0 else "", entry))
    notes = []
    for (who, why), group in one_sided.items():
        if len(group) == 1:
            notes.append(f"note {group[0]}: skipped for {who} only: {why}")
        else:
            notes.append(f"note {len(group)} scenarios ({group[0]}, ...) skipped for {who} only: "
                         f"{why}")
    diverge = len({d[0] for d in divergences if d[5] is None})
    documented = len({d[0] for d in divergences if d[5] is not None})
    return agree, diverge, documented, skipped, divergences, notes


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("rmm")
    ap.add_argument("ours")
    ap.add_argument("--name", help="the summary's name (default: ours's file name)")
    ap.add_argument("--max-shown", type=int, default=0, help="print at most N divergences (0: all)")
    ap.add_argument("--per-scenario", type=int, default=1,
                    help="differing trace entries shown per scenario (default 1: the first)")
    ap.add_argument("--known", default=KNOWN_DEFAULT,
                    help="the known-differences file (default: known_differences.json beside "
                         "this script; '' for none)")
    args = ap.parse_args(argv)
    name = args.name or args.ours.rsplit("/", 1)[-1].removesuffix(".jsonl")
    try:
        rmm, ours = load(args.rmm), load(args.ours)
        known = load_known(args.known)
    except (OSError, ValueError) as e:
        print(f"oracle {name}: cannot compare: {e}")
        return 2
    agree, diverge, documented, skipped, divergences, notes = compare(
        rmm, ours, args.per_scenario, known)
    for n, (scn, where, va, vb, extra, entry) in enumerate(divergences):
        if args.max_shown and n >= args.max_shown:
            print(f"... {len(divergences) - n} more divergences not shown")
            break
        if entry is not None:
            print(f"DOCUMENTED {scn} at {where} ({entry['doc']}: {entry['why']})")
        else:
            print(f"DIVERGE {scn} at {where}")
        print(f"    rmm:  {show(va)}")
        print(f"    ours: {show(vb)}")
        if extra:
            print(f"    ({extra})")
    for note in notes:
        print(note)
    total = len(set(rmm) | set(ours))
    print(f"oracle {name}: {total} scenarios, {agree} agree, {diverge} diverge, "
          f"{documented} documented, {skipped} skipped")
    return 1 if diverge else 0


if __name__ == "__main__":
    sys.exit(main())
