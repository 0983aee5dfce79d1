mkdir e
