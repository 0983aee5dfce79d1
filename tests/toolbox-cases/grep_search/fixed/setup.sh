printf "a.b(\naxb(\nA.B(\n" > f.txt
