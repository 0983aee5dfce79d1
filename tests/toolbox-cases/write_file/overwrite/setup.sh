for i in $(seq 1 12); do echo "l$i"; done > f.txt
