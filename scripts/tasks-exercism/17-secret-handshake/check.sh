# Passes when the unchanged tests pass.
cmp -s "$(dirname "$0")/files/secret_handshake_test.py" secret_handshake_test.py && timeout 60 python3 -m unittest -q secret_handshake_test
