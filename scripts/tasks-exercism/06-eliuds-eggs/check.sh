# Passes when the unchanged tests pass.
cmp -s "$(dirname "$0")/files/eliuds_eggs_test.py" eliuds_eggs_test.py && timeout 60 python3 -m unittest -q eliuds_eggs_test
