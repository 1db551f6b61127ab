# Passes when the unchanged tests pass.
cmp -s "$(dirname "$0")/files/isogram_test.py" isogram_test.py && timeout 60 python3 -m unittest -q isogram_test
