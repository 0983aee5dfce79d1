printf "x\r\ny\r\n" > w.txt
