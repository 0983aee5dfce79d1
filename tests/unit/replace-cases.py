#!/usr/bin/env python3
"""Writes replace-tool cases for the fidelity test: DIR/<n>.txt (file content) and
DIR/<n>.json (the replace parameters), covering gemini-cli's exact, flexible, regex and fuzzy
strategies, plus random near-miss edits. Prints the case count."""
import json
import random
import sys

out = sys.argv[1]
src = "def f(a, b):\n    if a:\n        return b\n    x = call(a, b)\n    return x\n\nclass K:\n    def m(self):\n        pass\n"
cases = [
    (src, "return b", "return -b", False),                       # exact
    (src, "return", "yield", True),                              # exact, several
    (src, "return", "yield", False),                             # ambiguous
    (src, "if a:\n  return b", "if b:\n  return a", False),      # flexible (indentation)
    (src, "x = call( a, b )", "x = call(b, a)", False),          # regex (token spacing)
    (src, "x=call(a,b)\nreturn x", "return call(a, b)", False),  # regex across lines
    (src, "    x = cal(a, b)\n    return x", "    return 0", False),  # fuzzy
    (src, "nothing like this at all", "y", False),               # no match
    ("a\n\tb\n\tc\n", "b\nc", "B\n  C", False),                  # flexible with tabs
    ("one two\n", "one  two", "three", False),                   # regex
]
r = random.Random(7)
words = ["alpha", "beta", "gamma", "delta", "(x)", "[y]", "{z}", "=", ":"]
for _ in range(30):
    lines = ["    " * r.randint(0, 2) + " ".join(r.choice(words) for _ in range(r.randint(1, 5))) for _ in range(12)]
    content = "\n".join(lines) + "\n"
    i = r.randint(0, 10)
    old = "\n".join(lines[i:i + r.randint(1, 2)])
    mut = r.choice(["strip", "space", "typo", "none"])
    if mut == "strip":
        old = "\n".join(l.strip() for l in old.split("\n"))
    elif mut == "space":
        old = old.replace(" ", "  ", 1)
    elif mut == "typo" and len(old) > 12:
        k = r.randint(0, len(old) - 1)
        old = old[:k] + "q" + old[k + 1:]
    cases.append((content, old, "NEW\n  LINE", r.random() < 0.3))
for n, (content, old, new, multi) in enumerate(cases):
    with open(f"{out}/{n}.txt", "w") as f:
        f.write(content)
    p = {"file_path": "f", "instruction": "i", "old_string": old, "new_string": new}
    if multi:
        p["allow_multiple"] = True
    with open(f"{out}/{n}.json", "w") as f:
        json.dump(p, f)
print(len(cases))
