sed -i 's/\.tar"/.tar.gz"/' backup.sh
