# Passes when the unchanged tests pass.
cmp -s "$(dirname "$0")/files/space_age_test.py" space_age_test.py && timeout 60 python3 -m unittest -q space_age_test
