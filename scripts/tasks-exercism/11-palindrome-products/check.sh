# Passes when the unchanged tests pass.
cmp -s "$(dirname "$0")/files/palindrome_products_test.py" palindrome_products_test.py && timeout 60 python3 -m unittest -q palindrome_products_test
