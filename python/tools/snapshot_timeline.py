#!/usr/bin/env python3
"""Draws the active-memory timeline of a memory snapshot as an SVG picture.

The snapshot is the pickle that ``rmm.memory._dump_snapshot`` (or PyTorch's) writes. As the
"Active Memory Timeline" of pytorch.org/memory_viz, each allocation is a band stacked on those
made before it and still alive, from its ``alloc`` event to its ``free_completed``; the x axis
counts events, the y axis is bytes. The page at pytorch.org/memory_viz shows the same
interactively, with each allocation's stack; this draws a still picture for documents.

    python snapshot_timeline.py SNAPSHOT.pickle OUT.svg [--device N]
"""

import argparse
import pickle

COLOURS = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7"]
WIDTH, HEIGHT, LEFT, BOTTOM, TOP = 720, 300, 70, 40, 30


def human(n):
    for unit in ["B", "KiB", "MiB", "GiB", "TiB"]:
        if n < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024


def bands(trace):
    """Each allocation's polygon: (step, bottom) points below, (step, top) above."""
    live, shapes = [], {}  # live: [addr, size] in the order they were made
    for step, entry in enumerate(trace):
        action, addr, size = entry["action"], entry["addr"], entry["size"]
        if action == "alloc":
            live.append([addr, size])
        elif action == "free_completed":
            live = [b for b in live if b[0] != addr]
        else:
            continue
        offset = 0
        for a, s in live:
            shapes.setdefault(a, []).append((step, offset, offset + s))
            offset += s
    return shapes, len(trace)


def draw(trace, title):
    shapes, steps = bands(trace)
    peak = max((top for pts in shapes.values() for _, _, top in pts), default=1)
    plot_w, plot_h = WIDTH - LEFT - 10, HEIGHT - BOTTOM - TOP
    x = lambda step: LEFT + plot_w * step / max(steps, 1)
    y = lambda b: TOP + plot_h * (1 - b / peak)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
           f'font-family="sans-serif" font-size="12">',
           f'<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>',
           f'<text x="{LEFT}" y="18">{title}</text>']
    for i, pts in enumerate(shapes.values()):
        pts = pts + [(pts[-1][0] + 1, pts[-1][1], pts[-1][2])]
        upper = " ".join(f"{x(s):.1f},{y(t):.1f}" for s, _, t in pts)
        lower = " ".join(f"{x(s):.1f},{y(b):.1f}" for s, b, _ in reversed(pts))
        out.append(f'<polygon points="{upper} {lower}" fill="{COLOURS[i % len(COLOURS)]}" '
                   'stroke="white" stroke-width="0.3"/>')
    out.append(f'<line x1="{LEFT}" y1="{TOP + plot_h}" x2="{LEFT + plot_w}" y2="{TOP + plot_h}" stroke="black"/>')
    out.append(f'<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{TOP + plot_h}" stroke="black"/>')
    out.append(f'<text x="{LEFT - 5}" y="{TOP + 4}" text-anchor="end">{human(peak)}</text>')
    out.append(f'<text x="{LEFT - 5}" y="{TOP + plot_h}" text-anchor="end">0</text>')
    out.append(f'<text x="{LEFT + plot_w / 2}" y="{HEIGHT - 10}" text-anchor="middle">'
               f'events ({steps}), each allocation a band while it is live</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("snapshot")
    parser.add_argument("out")
    parser.add_argument("--device", type=int, default=0)
    args = parser.parse_args()
    with open(args.snapshot, "rb") as f:
        snapshot = pickle.load(f)
    trace = snapshot["device_traces"][args.device]
    allocs = sum(e["action"] == "alloc" for e in trace)
    with open(args.out, "w") as f:
        f.write(draw(trace, f"Active memory timeline, device {args.device}: {allocs} allocations"))


if __name__ == "__main__":
    main()
