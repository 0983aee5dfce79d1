printf "alpha\nbeta\ngamma\n" > f.txt
