# Passes when the unchanged tests pass.
cmp -s "$(dirname "$0")/files/armstrong_numbers_test.py" armstrong_numbers_test.py && timeout 60 python3 -m unittest -q armstrong_numbers_test
