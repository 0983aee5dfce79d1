mkdir -p build src; echo b > build/x.txt; echo s > src/s.c; echo m > src/r.md; printf "\0bin" > src/z.bin; echo g > GEMINI.md
