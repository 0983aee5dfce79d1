mkdir d; echo x > d/b.txt; echo x > a.txt; echo y > c.txt
