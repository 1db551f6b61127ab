# The reference solution (Exercism's example.py).
cp "$(dirname "$0")/reference/book_store.py" book_store.py
