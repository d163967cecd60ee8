#!/bin/sh
# The env image's entry command: `affectgym serve` with its settings from the environment.
#
#   AFFECTGYM_ENV_ID        env id to serve (required), e.g. affectgym/Sarcasm-v0
#   AFFECTGYM_SPLIT         scenario split (default: eval)
#   AFFECTGYM_ENV_KWARGS    extra env arguments as JSON (default: {})
#   AFFECTGYM_HOST          address to bind (default: 0.0.0.0, the container's network only)
#   PORT                    TCP port (default: 8000)
#   AFFECTGYM_MAX_SESSIONS  WebSocket sessions a worker plays at once (default: 64)
#   AFFECTGYM_IDLE_TIMEOUT_S   seconds a silent or unread session is kept (default: 600)
#   AFFECTGYM_WORKERS       uvicorn worker processes (default: 1)
#   AFFECTGYM_MAX_CONNECTIONS  connections a worker takes at once (default: 256)
set -eu
if [ -z "${AFFECTGYM_ENV_ID:-}" ]; then
    echo "serve.sh: set AFFECTGYM_ENV_ID to the env to serve (see \`affectgym list\`), e.g. affectgym/Sarcasm-v0" >&2
    exit 2
fi
exec affectgym serve "$AFFECTGYM_ENV_ID" \
    --split "${AFFECTGYM_SPLIT:-eval}" \
    --env-kwargs "${AFFECTGYM_ENV_KWARGS:-{\}}" \
    --host "${AFFECTGYM_HOST:-0.0.0.0}" \
    --port "${PORT:-8000}" \
    --max-sessions "${AFFECTGYM_MAX_SESSIONS:-64}" \
    --idle-timeout-s "${AFFECTGYM_IDLE_TIMEOUT_S:-600}" \
    --workers "${AFFECTGYM_WORKERS:-1}" \
    --max-connections "${AFFECTGYM_MAX_CONNECTIONS:-256}"
