cat > config.json <<'JS'
{
  "name": "service",
  "port": 8080,
  "debug": true,
  "workers": 2
}
JS
