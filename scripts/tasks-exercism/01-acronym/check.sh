# Passes when the unchanged tests pass.
cmp -s "$(dirname "$0")/files/acronym_test.py" acronym_test.py && timeout 60 python3 -m unittest -q acronym_test
