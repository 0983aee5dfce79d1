mkdir d; echo 12 > f; ln -s f lf; ln -s d ld; ln -s nowhere broken
