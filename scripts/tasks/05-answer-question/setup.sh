mkdir -p server
cat > server/settings.py <<'PY'
import os

DEFAULT_TIMEOUT = 30
MAX_UPLOAD_MB = 25


def timeout():
    return int(os.environ.get("APP_TIMEOUT", DEFAULT_TIMEOUT))
PY
cat > server/app.py <<'PY'
from settings import MAX_UPLOAD_MB, timeout


def handle(request):
    if request.size_mb > MAX_UPLOAD_MB:
        return 413
    return 200
PY
