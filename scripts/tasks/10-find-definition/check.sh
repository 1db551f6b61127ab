grep -q 'lib/db/pool.py' "$1"
