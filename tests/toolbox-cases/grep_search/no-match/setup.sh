echo x > a.c
