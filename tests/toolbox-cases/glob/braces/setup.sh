mkdir src; touch src/a.c src/a.h src/a.o; touch -d 2020-01-01 src/*
