cat > limits.py <<'PY'
# Requests allowed per minute for one client.
RATE_LIMIT = 60


def allowed(count):
    return count < RATE_LIMIT
PY
