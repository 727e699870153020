#!/bin/sh
# A disposable PostgreSQL server: a new cluster in the container's own file system on first start, a
# password for network clients ($POSTGRES_PASSWORD, scram-sha-256), no fsync (test data), no JIT (the
# image leaves LLVM out).
set -eu
data=/var/lib/postgresql/data
if [ ! -s "$data/PG_VERSION" ]; then
  : "${POSTGRES_PASSWORD:?POSTGRES_PASSWORD is required}"
  pwfile=$(mktemp)
  printf '%s\n' "$POSTGRES_PASSWORD" > "$pwfile"
  initdb --pgdata="$data" --username=postgres --pwfile="$pwfile" --auth-local=trust \
    --auth-host=scram-sha-256 --encoding=UTF8 --locale=C --no-sync >/dev/null
  rm -f "$pwfile"
  echo "host all all all scram-sha-256" >> "$data/pg_hba.conf"
  echo "postgres-start: initialised a new cluster in $data"
fi
exec postgres -D "$data" -c listen_addresses='*' -c unix_socket_directories=/tmp \
  -c jit=off -c fsync=off -c synchronous_commit=off -c full_page_writes=off
