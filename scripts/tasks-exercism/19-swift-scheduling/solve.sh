# The reference solution (Exercism's example.py).
cp "$(dirname "$0")/reference/swift_scheduling.py" swift_scheduling.py
