cat > requirements.txt <<'TXT'
requests==2.31.0
flask==3.0.0
TXT
