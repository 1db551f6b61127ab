# The reference solution (Exercism's example.py).
cp "$(dirname "$0")/reference/queen_attack.py" queen_attack.py
