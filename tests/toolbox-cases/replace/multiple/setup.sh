printf "x\nx\n" > f.txt
