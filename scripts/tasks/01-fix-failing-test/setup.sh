mkdir -p calc
cat > calc/ops.py <<'PY'
def add(a, b):
    return a - b


def mul(a, b):
    return a * b
PY
cat > calc/test_ops.py <<'PY'
import unittest

from ops import add, mul


class OpsTest(unittest.TestCase):
    def test_add(self):
        self.assertEqual(add(2, 3), 5)

    def test_mul(self):
        self.assertEqual(mul(2, 3), 6)


if __name__ == "__main__":
    unittest.main()
PY
