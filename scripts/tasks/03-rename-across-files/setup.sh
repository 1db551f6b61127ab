mkdir -p shop
cat > shop/prices.py <<'PY'
def compute_total(items):
    return sum(price * qty for price, qty in items)
PY
cat > shop/cart.py <<'PY'
from prices import compute_total


def checkout(items):
    return round(compute_total(items), 2)
PY
cat > shop/report.py <<'PY'
from prices import compute_total


def summary(items):
    return "total: %.2f" % compute_total(items)
PY
