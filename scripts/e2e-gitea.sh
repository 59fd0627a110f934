#!/usr/bin/env bash
# End-to-end tests against a real self-hosted git server: Gitea, built from
# its Go module once into a cache folder, started on 127.0.0.1 with SQLite
# and push-to-create, a user and a token made with its CLI, then
#   go test -run TestGitea ./cmd/memfsd
# (first run on an empty host, write/turn/push, two daemons diverging, a
# wrong token, 100 agents). Needs only the Go module proxy.
#   scripts/e2e-gitea.sh                 # build (first time ~6 min) and run
#   GITEA_CACHE=/somewhere scripts/e2e-gitea.sh
set -euo pipefail
cd "$(dirname "$0")/.."
GITEA_VERSION=${GITEA_VERSION:-v1.27.3}
CACHE=${GITEA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/memfsd-gitea}
BIN="$CACHE/gitea-$GITEA_VERSION"
mkdir -p "$CACHE"

# 1. Build once. `go install` refuses the module (it has replace
# directives), so build it in a copy of its own folder.
if [ ! -x "$BIN" ]; then
  echo "building Gitea $GITEA_VERSION into $BIN (first time only)"
  start=$(date +%s)
  src=$(go mod download -json "code.gitea.io/gitea@$GITEA_VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  [ -d "$src" ] || { echo "could not download code.gitea.io/gitea@$GITEA_VERSION" >&2; exit 1; }
  rm -rf "$CACHE/src" && cp -r "$src" "$CACHE/src" && chmod -R u+w "$CACHE/src"
  (cd "$CACHE/src" && go build -tags 'sqlite sqlite_unlock_notify' -o "$BIN.tmp" .)
  mv "$BIN.tmp" "$BIN"
  echo "built in $(( $(date +%s) - start )) s"
fi
src="$CACHE/src"

# 2. A fresh instance: work path with the module's options/ and templates/
# (built without bindata it needs them), SQLite, push-to-create, root allowed
# (CI runs as root).
WORK=$(mktemp -d)
PORT=${GITEA_PORT:-$(( 20000 + RANDOM % 20000 ))}
cleanup() { [ -n "${GITEA_PID:-}" ] && kill "$GITEA_PID" 2>/dev/null; wait 2>/dev/null; rm -rf "$WORK"; }
trap cleanup EXIT
cp -r "$src/options" "$src/templates" "$WORK/"
mkdir -p "$WORK/custom/conf" "$WORK/data" "$WORK/repos" "$WORK/log"
INI="$WORK/custom/conf/app.ini"
cat > "$INI" <<INI
APP_NAME = memfsd-e2e
RUN_MODE = prod
RUN_USER = $(id -un)
WORK_PATH = $WORK
I_AM_BEING_UNSAFE_RUNNING_AS_ROOT = true

[database]
DB_TYPE = sqlite3
PATH = $WORK/data/gitea.db

[server]
PROTOCOL = http
HTTP_ADDR = 127.0.0.1
HTTP_PORT = $PORT
ROOT_URL = http://127.0.0.1:$PORT/
DISABLE_SSH = true
START_SSH_SERVER = false
OFFLINE_MODE = true
LFS_START_SERVER = false
APP_DATA_PATH = $WORK/data

[repository]
ROOT = $WORK/repos
ENABLE_PUSH_CREATE_USER = true
DEFAULT_PUSH_CREATE_PRIVATE = true
DEFAULT_BRANCH = main

[security]
INSTALL_LOCK = true
SECRET_KEY = memfsd-e2e-secret-key-not-for-production

[service]
DISABLE_REGISTRATION = true
REQUIRE_SIGNIN_VIEW = true

[indexer]
ISSUE_INDEXER_TYPE = db
REPO_INDEXER_ENABLED = false

[log]
MODE = file
LEVEL = Warn
ROOT_PATH = $WORK/log

[cron]
ENABLED = false

[mailer]
ENABLED = false
INI
G() { GITEA_WORK_DIR="$WORK" "$BIN" --config "$INI" --work-path "$WORK" "$@"; }
G migrate >/dev/null
PASS="memfsd-e2e-$(date +%s)-pw"
G admin user create --admin --username memfsd --password "$PASS" --email memfsd@example.com --must-change-password=false >/dev/null
TOKEN=$(G admin user generate-access-token --username memfsd --token-name e2e --scopes write:repository --raw)
# A simple command, not the G function: $! must be gitea's own pid (a
# function runs in a subshell, and killing that left gitea running).
GITEA_WORK_DIR="$WORK" "$BIN" --config "$INI" --work-path "$WORK" web >"$WORK/log/web.out" 2>&1 &
GITEA_PID=$!
for _ in $(seq 1 120); do
  if (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; then break; fi
  kill -0 "$GITEA_PID" 2>/dev/null || { echo "gitea web stopped:" >&2; cat "$WORK/log/web.out" >&2; exit 1; }
  sleep 0.5
done
echo "Gitea $GITEA_VERSION on http://127.0.0.1:$PORT (user memfsd)"

# 3. The scenarios.
start=$(date +%s)
set +e
MEMFSD_GITEA_URL="http://127.0.0.1:$PORT" MEMFSD_GITEA_USER=memfsd MEMFSD_GITEA_TOKEN="$TOKEN" \
  go test -count=1 -race -run 'TestGitea' -v -timeout 20m ./cmd/memfsd/ >"$WORK/test.out" 2>&1
status=$?
set -e
grep -E '^(=== RUN|[[:space:]]*--- |PASS|FAIL|ok)|gitea_test' "$WORK/test.out" || cat "$WORK/test.out"
[ "$status" = 0 ] || tail -50 "$WORK/test.out"
echo "Gitea scenarios ran in $(( $(date +%s) - start )) s"
exit "$status"
