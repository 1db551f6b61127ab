echo "# Notes" > README.md
