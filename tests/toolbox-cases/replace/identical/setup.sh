echo x > f.txt
