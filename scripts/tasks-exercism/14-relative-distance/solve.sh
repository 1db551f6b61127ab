# The reference solution (Exercism's example.py).
cp "$(dirname "$0")/reference/relative_distance.py" relative_distance.py
