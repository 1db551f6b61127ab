# Passes when the unchanged tests pass.
cmp -s "$(dirname "$0")/files/matching_brackets_test.py" matching_brackets_test.py && timeout 60 python3 -m unittest -q matching_brackets_test
