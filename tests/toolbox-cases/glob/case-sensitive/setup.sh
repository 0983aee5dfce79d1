echo > a.txt; echo > B.TXT; touch -d 2020-01-01 a.txt B.TXT
