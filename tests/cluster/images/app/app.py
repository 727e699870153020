#!/usr/bin/env python3
"""The demo app of examples/staged-deploy-real: one program, three commands, PostgreSQL through psql.

    app migrate        records schema $APP_VERSION in the database (fails if it is there already: a
                       migration that runs twice is a bug the test must see)
    app serve          HTTP on $PORT (8080): /ready answers 200 only while the database holds schema
                       $APP_VERSION (the readiness probe), POST /warmup records a warm-up, /healthz is 200
    app warmup URL     POSTs to URL (the web Service) and prints the answer

The database is found through libpq's variables (PGHOST, PGUSER, PGPASSWORD, PGDATABASE); the manifests
set PGHOST from the kubelet's Service variables ($(DB_SERVICE_HOST)). Every line goes to stdout, which is
the container's log.
"""

from __future__ import annotations

import http.server
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request

MIGRATION = """\
CREATE TABLE IF NOT EXISTS schema_migrations (
  version text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now());
CREATE TABLE IF NOT EXISTS warmups (
  version text NOT NULL, client text NOT NULL, at timestamptz NOT NULL DEFAULT now());
INSERT INTO schema_migrations (version) VALUES (:'version');
SELECT string_agg(version, ',' ORDER BY applied_at) FROM schema_migrations;
"""
READY = "SELECT count(*) FROM schema_migrations WHERE version = :'version';"
WARMUP = "INSERT INTO warmups (version, client) VALUES (:'version', :'client') RETURNING 'recorded';"


def say(line: str) -> None:
    print(line, flush=True)


def version() -> str:
    value = os.environ.get("APP_VERSION", "")
    if not value:
        say("error: APP_VERSION is not set")
        sys.exit(2)
    return value


def psql(sql: str, **variables: str) -> subprocess.CompletedProcess[str]:
    """Runs ``sql`` with psql; ``variables`` are psql variables (:'name' in the SQL, quoted by psql)."""
    argv = ["psql", "-X", "-q", "-t", "-A", "-v", "ON_ERROR_STOP=1"]
    for name, value in variables.items():
        argv += ["-v", f"{name}={value}"]
    env = {**os.environ, "PGCONNECT_TIMEOUT": os.environ.get("PGCONNECT_TIMEOUT", "5")}
    return subprocess.run(argv, input=sql, capture_output=True, text=True, env=env, check=False)


def migrate() -> int:
    v = version()
    say(f"migration to schema {v}: connecting to {os.environ.get('PGHOST', 'localhost')}")
    done = psql(MIGRATION, version=v)
    # The database's Service may answer "connection refused" for a moment after the database is Ready
    # (kube-proxy has not written its rules yet): a real migration tool retries the connection.
    for _ in range(60):
        if "Connection refused" not in done.stderr:
            break
        time.sleep(1)
        done = psql(MIGRATION, version=v)
    for line in done.stderr.splitlines():
        say(f"migration to schema {v}: {line}")
    if done.returncode != 0:
        say(f"migration to schema {v}: failed (psql exit code {done.returncode})")
        return done.returncode
    say(f"migration to schema {v}: applied; schemas now {done.stdout.strip()}")
    return 0


class Handler(http.server.BaseHTTPRequestHandler):
    ready: bool | None = None  # the last readiness answer, to log only its changes

    def answer(self, code: int, body: str) -> None:
        data = (body + "\n").encode()
        self.send_response(code)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.path == "/healthz":
            self.answer(200, "ok")
        elif self.path == "/ready":
            v = version()
            done = psql(READY, version=v)
            ok = done.returncode == 0 and done.stdout.strip() == "1"
            why = f"schema {v} present" if ok else f"schema {v} missing {done.stderr.strip()}".strip()
            if ok != Handler.ready:
                say(f"{'ready' if ok else 'not ready'}: {why}")
                Handler.ready = ok
            self.answer(200 if ok else 503, why)
        else:
            self.answer(404, "not found")

    def do_POST(self) -> None:
        if self.path != "/warmup":
            self.answer(404, "not found")
            return
        v, client = version(), self.client_address[0]
        done = psql(WARMUP, version=v, client=client)
        if done.returncode != 0:
            say(f"warm-up request from {client}: failed: {done.stderr.strip()}")
            self.answer(500, "warm-up failed")
            return
        say(f"warm-up request from {client}: recorded for schema {v}")
        self.answer(200, f"warmed schema {v}")

    def log_message(self, format: str, *args: object) -> None:
        pass  # one line per probe would drown the log; the handlers say what matters


def serve() -> int:
    # PID 1 of its container: without a handler SIGTERM is ignored and every stop waits out the grace period.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    port = int(os.environ.get("PORT", "8080"))
    server = http.server.ThreadingHTTPServer(("", port), Handler)
    say(f"serving schema {version()} on port {port}")
    server.serve_forever()
    return 0


def warmup(url: str) -> int:
    # The Service may route a moment after the pod became ready (kube-proxy's sync): a few tries.
    for attempt in range(1, 11):
        try:
            with urllib.request.urlopen(urllib.request.Request(url, method="POST"), timeout=5) as answer:
                say(f"warm-up: {url}: {answer.status} {answer.read().decode().strip()}")
                return 0
        except urllib.error.HTTPError as e:
            say(f"warm-up: {url}: {e.code} {e.read().decode().strip()}")
            return 1
        except OSError as e:
            say(f"warm-up: {url}: attempt {attempt}: {e}")
            time.sleep(0.5)
    return 1


def main(argv: list[str]) -> int:
    if argv[:1] == ["migrate"] and len(argv) == 1:
        return migrate()
    if argv[:1] == ["serve"] and len(argv) == 1:
        return serve()
    if argv[:1] == ["warmup"] and len(argv) == 2:
        return warmup(argv[1])
    say("usage: app migrate | app serve | app warmup URL")
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
