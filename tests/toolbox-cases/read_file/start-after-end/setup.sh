echo x > a.txt
