# Passes when the unchanged tests pass.
cmp -s "$(dirname "$0")/files/book_store_test.py" book_store_test.py && timeout 60 python3 -m unittest -q book_store_test
