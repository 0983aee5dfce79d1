truncate -s 21M big
