# The reference solution (Exercism's example.py).
cp "$(dirname "$0")/reference/space_age.py" space_age.py
