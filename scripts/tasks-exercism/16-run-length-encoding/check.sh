# Passes when the unchanged tests pass.
cmp -s "$(dirname "$0")/files/run_length_encoding_test.py" run_length_encoding_test.py && timeout 60 python3 -m unittest -q run_length_encoding_test
