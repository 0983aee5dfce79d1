printf "one\ntwo\n" > a.txt
