printf "x1\nx2\nx3\n" > a.txt
