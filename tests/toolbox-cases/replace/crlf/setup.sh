printf "a\r\nb\r\n" > w.txt
