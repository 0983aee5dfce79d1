head -c 2005 /dev/zero | tr "\0" x > long.txt
