touch f.txt
