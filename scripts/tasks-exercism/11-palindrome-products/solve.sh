# The reference solution (Exercism's example.py).
cp "$(dirname "$0")/reference/palindrome_products.py" palindrome_products.py
