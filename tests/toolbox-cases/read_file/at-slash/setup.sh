mkdir sub; echo via-at > sub/a.txt
