# The reference solution (Exercism's example.py).
cp "$(dirname "$0")/reference/reverse_string.py" reverse_string.py
