# The reference solution (Exercism's example.py).
cp "$(dirname "$0")/reference/run_length_encoding.py" run_length_encoding.py
