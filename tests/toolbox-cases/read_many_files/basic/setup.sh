mkdir docs node_modules; echo one > a.txt; echo two > B.txt; echo doc > docs/d.md; echo nm > node_modules/n.txt; echo secret > .env
