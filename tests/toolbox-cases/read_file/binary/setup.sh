mkdir sub; printf "\000\001\002" > sub/b.dat
