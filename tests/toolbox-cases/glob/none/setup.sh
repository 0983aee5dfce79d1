touch a.txt
