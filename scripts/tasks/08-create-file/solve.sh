echo 1.4.2 > VERSION
