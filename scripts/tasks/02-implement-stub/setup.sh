cat > text.py <<'PY'
def is_palindrome(s):
    """True when s reads the same forwards and backwards, ignoring case and spaces."""
    raise NotImplementedError
PY
