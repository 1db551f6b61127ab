# The reference solution (Exercism's example.py).
cp "$(dirname "$0")/reference/two_bucket.py" two_bucket.py
