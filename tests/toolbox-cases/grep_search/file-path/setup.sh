printf "a\nb\n" > f.txt
