# Passes when the unchanged tests pass.
cmp -s "$(dirname "$0")/files/hamming_test.py" hamming_test.py && timeout 60 python3 -m unittest -q hamming_test
