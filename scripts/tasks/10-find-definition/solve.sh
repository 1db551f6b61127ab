echo lib/db/pool.py > "$1"
