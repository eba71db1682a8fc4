#!/bin/bash
# pgbench's TPC-B-like script against PostgreSQL directly and through `krait proxy` (recording
# the three balance tables), 8 and 32 clients, 15 s each, twice, alternating; prints tps and
# p99 latency per run, then checks the last proxy history (41k transactions after an initial
# state of 3M column writes in one transaction), with its time and peak memory. Needs pgbench, a PostgreSQL at
# 127.0.0.1:5432 (user postgres, trust) and a release build (cargo build --release).
# Usage: crates/bench/scripts/pgbench_proxy.sh
#   UPSTREAM_HOST=%2Fvar%2Frun%2Fpostgresql crates/bench/scripts/pgbench_proxy.sh
# forwards through PostgreSQL's Unix-domain socket instead (the client still speaks TCP).
set -e
UPSTREAM_HOST="${UPSTREAM_HOST:-127.0.0.1}"
KRAIT="$(cd "$(dirname "$0")/../../.." && pwd)/target/release/krait"
DB=kpb; PORT=6597
psql -h 127.0.0.1 -U postgres -q -c "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB" postgres 2>/dev/null
pgbench -i -s 10 -q -h 127.0.0.1 -U postgres $DB >/dev/null 2>&1
p99() { cat /tmp/pgblog/pgbench_log.* | awk '{print $3}' | sort -n | awk '{a[NR]=$1} END {print a[int(NR*0.99)]/1000}'; rm -rf /tmp/pgblog; }
run() { # $1 port $2 clients
  rm -rf /tmp/pgblog; mkdir -p /tmp/pgblog
  (cd /tmp/pgblog && pgbench -n -c $2 -j 2 -T 15 -l -h 127.0.0.1 -p $1 -U postgres $DB 2>&1 | grep -E "^tps" | awk '{printf "%s ", $3}')
  echo "p99_ms $(p99)"
}
for c in 8 32; do
  for round in 1 2; do
    echo -n "clients $c direct  tps "; run 5432 $c
    rm -rf /tmp/kpbh
    "$KRAIT" proxy --listen 127.0.0.1:$PORT --upstream "postgres://postgres@$UPSTREAM_HOST:5432/$DB" --out /tmp/kpbh --table pgbench_accounts:aid --table pgbench_tellers:tid --table pgbench_branches:bid > /tmp/kpb.out 2>&1 &
    for i in $(seq 1 120); do (echo > /dev/tcp/127.0.0.1/$PORT) 2>/dev/null && break; sleep 0.5; done
    echo -n "clients $c proxy   tps "; run $PORT $c
    kill -TERM %1; wait %1 2>/dev/null || true
  done
done
/usr/bin/time -f "check: %e s, peak RSS %M KB" "$KRAIT" check /tmp/kpbh --timings 2>&1 | grep -v "^warning" | tail -4
