printf "def f():\n    if x:\n        return 1\n" > f.py
