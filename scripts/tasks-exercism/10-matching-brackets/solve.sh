# The reference solution (Exercism's example.py).
cp "$(dirname "$0")/reference/matching_brackets.py" matching_brackets.py
