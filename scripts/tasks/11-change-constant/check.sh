python3 -c 'import limits; assert limits.RATE_LIMIT == 120 and limits.allowed(100) and not limits.allowed(120)'
