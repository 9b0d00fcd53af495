#!/usr/bin/env bash
# Start a throwaway PostgreSQL for the test suite and print its SQLAlchemy URL on stdout.
#   url=$(.ci/postgres.sh start [DIR])   # start (installs Debian's postgresql when missing); DIR: a fresh temp dir
#   .ci/postgres.sh stop DIR             # stop the cluster living in DIR
# Trust authentication on 127.0.0.1 only; the data directory is a temp dir owned by the postgres user.
set -euo pipefail

log() { echo "postgres.sh: $*" >&2; }

pg_bin() {
  local dir
  for dir in /usr/lib/postgresql/*/bin; do
    [ -x "$dir/initdb" ] && { echo "$dir"; return 0; }
  done
  return 1
}

if [ "${1:-}" = "stop" ]; then
  bin=$(pg_bin)
  [ -n "${2:-}" ] && runuser -u postgres -- "$bin/pg_ctl" -D "$2/data" -m fast stop >/dev/null 2>&1 || true
  exit 0
fi

if ! bin=$(pg_bin); then
  log "installing postgresql from Debian packages"
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null) >&2
  bin=$(pg_bin)
fi

as_pg() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

dir=${2:-$(mktemp -d /tmp/kss-pg.XXXXXX)}
mkdir -p "$dir"
[ "$(id -u)" = 0 ] && chown postgres: "$dir"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
as_pg "$bin/initdb" -D "$dir/data" -U postgres --auth=trust -E UTF8 >/dev/null
as_pg "$bin/pg_ctl" -D "$dir/data" -l "$dir/log" -w \
  -o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c fsync=off -c synchronous_commit=off" start >/dev/null
as_pg "$bin/createdb" -h 127.0.0.1 -p "$port" -U postgres kss_test
log "PostgreSQL on 127.0.0.1:$port (data in $dir; stop with: .ci/postgres.sh stop $dir)"
echo "postgresql+psycopg://postgres@127.0.0.1:$port/kss_test"
