touch f
