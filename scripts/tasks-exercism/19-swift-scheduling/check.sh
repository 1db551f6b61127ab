# Passes when the unchanged tests pass.
cmp -s "$(dirname "$0")/files/swift_scheduling_test.py" swift_scheduling_test.py && timeout 60 python3 -m unittest -q swift_scheduling_test
