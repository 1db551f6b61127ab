echo 25 > "$1"
