#!/usr/bin/env python3
"""Writes random edit cases for the snippet test, one per seed from 1 to N: DIR/<seed>/old,
DIR/<seed>/new and DIR/<seed>/in.json (a write_file call turning old into new).
Deterministic per seed. Usage: snippet-case.py N DIR"""
import json
import os
import random
import sys


def case(seed, out):
    r = random.Random(seed)
    old = [f"line {r.randint(0, 8)}" for _ in range(r.randint(1, 40))]
    new = list(old)
    for _ in range(r.randint(1, 4)):
        op, k = r.choice("adc"), r.randint(0, len(new))
        if op == "a":
            new[k:k] = [f"new {r.randint(0, 99)}" for _ in range(r.randint(1, 3))]
        elif new and op == "d":
            del new[min(k, len(new) - 1)]
        elif new:
            new[min(k, len(new) - 1)] = f"chg {r.randint(0, 99)}"
    tail = r.choice(["\n", ""])
    old_text, new_text = "\n".join(old) + tail, "\n".join(new) + r.choice([tail, tail, "\n", ""])
    with open(f"{out}/old", "w") as f:
        f.write(old_text)
    with open(f"{out}/new", "w") as f:
        f.write(new_text)
    with open(f"{out}/in.json", "w") as f:
        json.dump({"file_path": "f", "content": new_text}, f)


n, top = int(sys.argv[1]), sys.argv[2]
for seed in range(1, n + 1):
    os.makedirs(f"{top}/{seed}", exist_ok=True)
    case(seed, f"{top}/{seed}")
