printf "a\nval = 1\nskip val\n" > m.py; echo val > m.js
