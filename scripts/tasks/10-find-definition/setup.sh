mkdir -p lib/net lib/db lib/util
printf 'def connect(url):\n    return url\n' > lib/net/client.py
printf 'def open_pool(size):\n    return [None] * size\n' > lib/db/pool.py
printf 'def slugify(s):\n    return s.lower().replace(" ", "-")\n' > lib/util/strings.py
