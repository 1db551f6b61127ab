# The reference solution (Exercism's example.py).
cp "$(dirname "$0")/reference/eliuds_eggs.py" eliuds_eggs.py
