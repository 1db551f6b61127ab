cat > backup.sh <<'SH'
#!/bin/sh
# Prints the name of the backup file for the given date (YYYY-MM-DD).
echo "backup-$1.tar"
SH
chmod +x backup.sh
