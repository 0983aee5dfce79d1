touch "[id].txt" i.txt; touch -d 2020-01-01 "[id].txt" i.txt
