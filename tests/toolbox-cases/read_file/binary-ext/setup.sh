echo text > z.zip
