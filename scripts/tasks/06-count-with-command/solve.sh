echo 13 > "$1"
