[ "$(python3 greet.py 2>/dev/null)" = "Hello, world!" ]
