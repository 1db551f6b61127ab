# Passes when the unchanged tests pass.
cmp -s "$(dirname "$0")/files/two_bucket_test.py" two_bucket_test.py && timeout 60 python3 -m unittest -q two_bucket_test
