echo hi > a.txt
