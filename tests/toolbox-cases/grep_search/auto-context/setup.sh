for i in 1 2 3 4 5 6 7 8; do echo "line $i"; done > f.txt; echo needle >> f.txt; for i in 10 11; do echo "line $i"; done >> f.txt
