"""Exit 0 when the env server in this container answers ``GET /health`` with 200 (Docker's HEALTHCHECK)."""

import os
import sys
import urllib.request

try:
    with urllib.request.urlopen(f"http://127.0.0.1:{os.environ.get('PORT', '8000')}/health", timeout=5) as answer:
        sys.exit(0 if answer.status == 200 else 1)
except OSError as error:
    print(f"unhealthy: {error}", file=sys.stderr)
    sys.exit(1)
