# The reference solution (Exercism's example.py).
cp "$(dirname "$0")/reference/secret_handshake.py" secret_handshake.py
