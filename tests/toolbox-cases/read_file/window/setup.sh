printf "one\ntwo\nthree\nfour\n" > a.txt
