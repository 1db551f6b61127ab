[ "$(sh backup.sh 2026-01-02)" = "backup-2026-01-02.tar.gz" ]
