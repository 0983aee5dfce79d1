echo "a()" > f.js
