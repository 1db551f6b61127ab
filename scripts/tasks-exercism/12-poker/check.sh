# Passes when the unchanged tests pass.
cmp -s "$(dirname "$0")/files/poker_test.py" poker_test.py && timeout 60 python3 -m unittest -q poker_test
