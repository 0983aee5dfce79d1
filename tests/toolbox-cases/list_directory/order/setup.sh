mkdir adir Dir2 .git node_modules; for f in _x.txt .hidden 10.txt 9.txt a.txt B.txt é.txt Z.txt; do : > "$f"; done; echo 12345 > a.txt
