# Passes when the unchanged tests pass.
cmp -s "$(dirname "$0")/files/queen_attack_test.py" queen_attack_test.py && timeout 60 python3 -m unittest -q queen_attack_test
