mkdir d
