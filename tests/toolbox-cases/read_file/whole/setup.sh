printf "one\ntwo\nthree\n" > a.txt
