echo 1 > old.txt; echo 2 > new1.txt; echo 3 > new2.txt; touch -d "2020-01-01" old.txt; touch -d "-2 hours" new1.txt; touch -d "-1 hours" new2.txt
