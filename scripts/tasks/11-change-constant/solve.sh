sed -i 's/RATE_LIMIT = 60/RATE_LIMIT = 120/' limits.py
