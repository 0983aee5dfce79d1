printf "x\n// rest of code ...\n" > f.js
