python3 -c '
import json
c = json.load(open("config.json"))
assert c == {"name": "service", "port": 9090, "debug": False, "workers": 2}, c
'
