sed -i 's/a - b/a + b/' calc/ops.py
