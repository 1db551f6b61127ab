# The reference solution (Exercism's example.py).
cp "$(dirname "$0")/reference/poker.py" poker.py
