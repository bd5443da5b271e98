#!/usr/bin/env bash
# The knowledge graph end to end over HTTP: a real `nexusbrain serve` on a scratch database.
#
# Usage: scripts/graph_demo.sh            start `nexusbrain serve` on a scratch database
#        scripts/graph_demo.sh URL DB     use a running server whose (empty) database is DB
# Needs curl, jq and python3; uses .venv/bin/nexusbrain if present.
#
# Each step prints what the server answered and checks it; the script exits non-zero on the
# first answer that is not what the issue asks for.
set -euo pipefail

cd "$(dirname "$0")/.."
SCRATCH=$(mktemp -d)
if [ $# -eq 2 ]; then
  URL=$1 DB=$2
  trap 'rm -rf "$SCRATCH"' EXIT
else
  NEXUSBRAIN=${NEXUSBRAIN:-$( [ -x .venv/bin/nexusbrain ] && echo .venv/bin/nexusbrain || echo nexusbrain )}
  PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  URL="http://127.0.0.1:$PORT" DB="$SCRATCH/demo.db"
  "$NEXUSBRAIN" --db "$DB" serve --port "$PORT" --log-level warning &
  SERVER=$!
  trap 'kill "$SERVER" 2>/dev/null; wait "$SERVER" 2>/dev/null || true; rm -rf "$SCRATCH"' EXIT
  for _ in $(seq 100); do curl -fs "$URL/health" >/dev/null && break; sleep 0.1; done
fi

ingest() { curl -fsS "$URL/ingest" -H 'content-type: application/json' -d "$1"; }
check() { if [ "$1" != "$2" ]; then echo "FAILED: expected $2, got $1" >&2; exit 1; fi; echo "  ok: $3"; }
rows() {  # relationship rows, as a separate reader of the database file sees them
  python3 -c 'import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute("SELECT count(*) FROM relationships").fetchone()[0])' "$DB"
}

FIRST='{"relationships": [{"from": "alice", "type": "manages", "to": "bob", "valid_at": "2020-01-01", "invalid_at": "2023-01-01"}]}'
SECOND='{"relationships": [{"from": "alice", "type": "manages", "to": "bob", "valid_at": "2021-01-01", "invalid_at": "2025-01-01"}]}'

echo "1. ingest alice manages bob, valid 2020-01-01..2023-01-01"
ONE=$(ingest "$FIRST")
echo "$ONE" | jq -c '.relationships[0] | {id, status}'
OLD=$(echo "$ONE" | jq '.relationships[0].id')
check "$(echo "$ONE" | jq -r '.relationships[0].status')" created "created"
check "$(rows)" 1 "one relationship row"

echo "2. the identical ingest again"
TWO=$(ingest "$FIRST")
echo "$TWO" | jq -c '.relationships[0] | {id, status}'
check "$(echo "$TWO" | jq -r '.relationships[0].status')" duplicate "duplicate"
check "$(echo "$TWO" | jq '.relationships[0].id')" "$OLD" "the same id"
check "$(rows)" 1 "0 writes: still one row"

echo "3. a changed window, 2021-01-01..2025-01-01"
THREE=$(ingest "$SECOND")
echo "$THREE" | jq -c '.relationships[0] | {id, status, supersedes, retired}'
NEW=$(echo "$THREE" | jq '.relationships[0].id')
check "$(echo "$THREE" | jq -r '.relationships[0].status')" created "created"
[ "$NEW" != "$OLD" ] || { echo "FAILED: the new version reused id $OLD" >&2; exit 1; }
echo "  ok: a new id ($NEW, was $OLD)"

echo "4. history from either id"
H_OLD=$(curl -fsS "$URL/graph/relationships/$OLD/history")
H_NEW=$(curl -fsS "$URL/graph/relationships/$NEW/history")
echo "$H_OLD" | jq -c '.versions[] | {id, current, created_at, superseded_at, reason}'
check "$(echo "$H_OLD" | jq -c '.versions')" "$(echo "$H_NEW" | jq -c '.versions')" "the same versions from either id"
check "$(echo "$H_OLD" | jq -c '[.versions[].id]')" "[$OLD,$NEW]" "versions [old, new]"
check "$(echo "$H_OLD" | jq '.current.id')" "$NEW" "current = new"
check "$(echo "$H_OLD" | jq '.versions[0].current')" false "the old version is not current"
check "$(echo "$H_OLD" | jq -r '.versions[0].superseded_at')" "$(echo "$H_OLD" | jq -r '.versions[1].created_at')" "old.superseded_at == new.created_at"

echo "5. /graph/relations?from=alice"
REL=$(curl -fsS "$URL/graph/relations?from=alice")
echo "$REL" | jq -c '.relationships[] | {id, from, type, to, valid_at, invalid_at}'
check "$(echo "$REL" | jq -c '[.relationships[].id]')" "[$NEW]" "only the current edge"

echo "6. /graph/traverse?from=alice&depth=2"
TRAV=$(curl -fsS "$URL/graph/traverse?from=alice&depth=2")
echo "$TRAV" | jq -c '.hops[] | {depth, path}'
check "$(echo "$TRAV" | jq -c '[.hops[].path]')" "[[$NEW]]" "a single current hop"

echo "7. /graph/relationships/999999/history"
STATUS=$(curl -s -o "$SCRATCH/404.json" -w '%{http_code}' "$URL/graph/relationships/999999/history")
jq -c . "$SCRATCH/404.json"
check "$STATUS" 404 "404"
check "$(jq -r '.error.code' "$SCRATCH/404.json")" not_found "the standard error shape"

echo "all 7 steps answered as expected"
