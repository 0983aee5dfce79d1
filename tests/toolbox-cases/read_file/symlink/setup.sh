mkdir real; echo target > real/t.txt; ln -s real/t.txt link.txt
