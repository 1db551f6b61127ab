mkdir -p logs
for i in $(seq 1 40); do
  if [ $((i % 3)) -eq 0 ]; then echo "2026-01-01 ERROR request $i failed"; else echo "2026-01-01 INFO request $i ok"; fi
done > logs/app.log
