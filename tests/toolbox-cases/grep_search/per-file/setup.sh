mkdir build; printf "k1\nk2\n" > a.txt; printf "k3\n" > build/b.txt
