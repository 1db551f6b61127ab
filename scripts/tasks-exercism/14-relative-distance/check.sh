# Passes when the unchanged tests pass.
cmp -s "$(dirname "$0")/files/relative_distance_test.py" relative_distance_test.py && timeout 60 python3 -m unittest -q relative_distance_test
