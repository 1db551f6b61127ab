# The reference solution (Exercism's example.py).
cp "$(dirname "$0")/reference/armstrong_numbers.py" armstrong_numbers.py
