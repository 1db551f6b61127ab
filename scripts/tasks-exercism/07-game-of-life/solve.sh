# The reference solution (Exercism's example.py).
cp "$(dirname "$0")/reference/game_of_life.py" game_of_life.py
