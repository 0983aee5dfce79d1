mkdir build; echo out > build/o.txt
