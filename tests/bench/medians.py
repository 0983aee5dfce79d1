#!/usr/bin/env python3
"""medians.py — the summary of a benchmark run in alternating rounds: DIR/KIND.R.json are
hyperfine's exports (KIND given, R = 1..ROUNDS). Each command's figure is the median over
rounds of its per-round medians; a --diff is the median of the per-round differences (so a
change of load falls on both sides), a --ratio the ratio of the two figures."""
import argparse
import json
import statistics as st

ap = argparse.ArgumentParser()
ap.add_argument("dir")
ap.add_argument("rounds", type=int)
ap.add_argument("kinds", nargs="+")
ap.add_argument("--floor", help="a command the others are shown as multiples of")
ap.add_argument("--title", default="command")
ap.add_argument("--diff", nargs=3, action="append", default=[], metavar=("TEXT", "A", "B"),
                help="print TEXT: A - B in ms")
ap.add_argument("--ratio", nargs=3, action="append", default=[], metavar=("TEXT", "A", "B"),
                help="print TEXT: A / B")
a = ap.parse_args()
med = {}
for r in range(1, a.rounds + 1):
    for kind in a.kinds:
        with open(f"{a.dir}/{kind}.{r}.json") as f:
            for x in json.load(f)["results"]:
                med.setdefault(x["command"], []).append(x["median"] * 1000)
m = {k: st.median(v) for k, v in med.items()}
floor = m[a.floor] if a.floor else None
print(f"{a.title:24} {'median ms':>10}" + (f" {'x floor':>8}" if floor else ""))
for k, v in m.items():
    print(f"{k:24} {v:10.3f}" + (f" {v / floor:8.2f}" if floor else ""))
for text, x, y in a.diff:
    print(f"{text}: {st.median(p - q for p, q in zip(med[x], med[y])):+.3f} ms")
for text, x, y in a.ratio:
    print(f"{text}: {m[x] / m[y]:.2f}x")
