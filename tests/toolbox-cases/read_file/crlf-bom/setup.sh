printf "\357\273\277a\r\nb\r\n" > w.txt
