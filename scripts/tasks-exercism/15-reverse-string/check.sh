# Passes when the unchanged tests pass.
cmp -s "$(dirname "$0")/files/reverse_string_test.py" reverse_string_test.py && timeout 60 python3 -m unittest -q reverse_string_test
