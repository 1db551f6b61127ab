git diff --quiet HEAD -- calc/test_ops.py && (cd calc && python3 -m unittest -q test_ops 2>/dev/null)
