printf "\377\376h\000i\000\n\000" > u.txt
