"""The PostgreSQL world's schema and its migrations (docs/postgres.md describes it).

Tables live in the schema `lwtool` of the database the URL names. `lwtool.meta` holds
the schema version. `lwtool migrate` runs the migrations in order, in one transaction
under an advisory lock (two processes starting at once migrate once); any other process
does too when it finds an older schema and may create objects, and otherwise says to
run `lwtool migrate` (a least-privilege role on a current schema writes no DDL). Every
migration only adds (columns with defaults, tables, indexes), so workers of the version
before keep working while a newer one migrates. A database whose version is newer than
this lwtool knows is refused, never written."""

from __future__ import annotations

from typing import Any

SCHEMA_VERSION = 7
MIGRATION_LOCK = 0x6C77746F6F6C  # pg_advisory_xact_lock key: "lwtool"

MIGRATIONS: dict[int, str] = {
    1: """
CREATE SCHEMA IF NOT EXISTS lwtool;
CREATE TABLE lwtool.versions (
  version_id text PRIMARY KEY,
  lwir text NOT NULL
);
CREATE TABLE lwtool.runs (
  run_id text PRIMARY KEY,
  version_id text NOT NULL REFERENCES lwtool.versions (version_id),
  status text NOT NULL,
  created_at double precision NOT NULL,
  updated_at double precision NOT NULL,
  input text NOT NULL,
  options text NOT NULL,
  last_seq bigint NOT NULL DEFAULT 0,
  last_hash text NOT NULL DEFAULT ''
);
CREATE INDEX runs_by_created ON lwtool.runs (created_at, run_id);
CREATE TABLE lwtool.events (
  run_id text NOT NULL REFERENCES lwtool.runs (run_id),
  seq bigint NOT NULL,
  type text NOT NULL,
  step_path text,
  payload text NOT NULL,
  at double precision NOT NULL,
  hash text NOT NULL,
  PRIMARY KEY (run_id, seq)
);
CREATE TABLE lwtool.artifacts (
  ref text PRIMARY KEY,
  size bigint NOT NULL
);
CREATE TABLE lwtool.artifact_chunks (
  ref text NOT NULL REFERENCES lwtool.artifacts (ref),
  n integer NOT NULL,
  data bytea NOT NULL,
  PRIMARY KEY (ref, n)
);
""",
    2: """
CREATE TABLE lwtool.queue (
  run_id text PRIMARY KEY,
  version_id text NOT NULL REFERENCES lwtool.versions (version_id),
  input text NOT NULL,
  options text NOT NULL,
  state text NOT NULL,
  worker text,
  lease_until double precision,
  claimed_at double precision,
  enqueued_at double precision NOT NULL,
  claims integer NOT NULL DEFAULT 0
);
CREATE INDEX queue_runnable ON lwtool.queue (state, enqueued_at);
""",
    3: """
CREATE TABLE lwtool.branches (
  run_id text NOT NULL REFERENCES lwtool.runs (run_id),
  prefix text NOT NULL,
  parallel text NOT NULL,
  item text NOT NULL,
  history boolean NOT NULL,
  state text NOT NULL,
  worker text,
  lease_until double precision,
  claimed_at double precision,
  enqueued_at double precision NOT NULL,
  claims integer NOT NULL DEFAULT 0,
  result text,
  PRIMARY KEY (run_id, prefix)
);
CREATE INDEX branches_runnable ON lwtool.branches (state, enqueued_at);
CREATE UNIQUE INDEX events_one_completion ON lwtool.events (run_id, step_path)
  WHERE type = 'StepCompleted';
""",
    4: """
CREATE TABLE lwtool.model_use (
  model text NOT NULL,
  at double precision NOT NULL,
  starts integer NOT NULL,
  tokens bigint NOT NULL
);
CREATE INDEX model_use_by_model ON lwtool.model_use (model, at);
""",
    # what a queued run or branch needs of the worker that claims it: the tools its
    # tool.call steps name, as a JSON array (NULL: nothing asked, any worker)
    5: """
ALTER TABLE lwtool.queue ADD COLUMN needs text;
ALTER TABLE lwtool.branches ADD COLUMN needs text;
""",
    # queues (a run and its branches go to the workers of the run's queue), a queue's
    # limit across every worker, and the workers that are (or were) up
    6: """
ALTER TABLE lwtool.queue ADD COLUMN queue text NOT NULL DEFAULT 'default';
ALTER TABLE lwtool.branches ADD COLUMN queue text NOT NULL DEFAULT 'default';
CREATE INDEX queue_by_queue ON lwtool.queue (queue, state);
CREATE TABLE lwtool.queues (
  name text PRIMARY KEY,
  max_concurrent integer
);
CREATE TABLE lwtool.workers (
  name text PRIMARY KEY,
  host text NOT NULL,
  pid integer NOT NULL,
  queues text NOT NULL,
  serves text,
  started_at double precision NOT NULL,
  seen_at double precision NOT NULL,
  runs integer NOT NULL DEFAULT 0,
  branches integer NOT NULL DEFAULT 0
);
""",
    7: """
CREATE TABLE lwtool.version_meta (
  version_id text PRIMARY KEY REFERENCES lwtool.versions (version_id),
  meta text NOT NULL
);
""",
}


class OutdatedSchema(RuntimeError):
    """The database holds an older schema and this role may not bring it up to date."""


def schema_version(conn: Any) -> int:
    """The schema version the database holds (0: none yet), read without writing."""
    import psycopg

    try:
        with conn.transaction():
            row = conn.execute("SELECT value FROM lwtool.meta WHERE key = 'schema_version'"
                               ).fetchone()
    except (psycopg.errors.UndefinedTable, psycopg.errors.InvalidSchemaName):
        return 0
    return int(row[0]) if row else 0


def ensure_schema(conn: Any) -> int:
    """What every process does on connecting: nothing on a current schema (so a role
    that may not create objects works), else migrate; a role refused that gets
    OutdatedSchema, which says to run `lwtool migrate`. Returns the version found."""
    import psycopg

    found = schema_version(conn)
    if found == SCHEMA_VERSION:
        return found
    if found > SCHEMA_VERSION:
        raise RuntimeError(_newer(found))
    try:
        return migrate(conn)
    except psycopg.errors.InsufficientPrivilege:
        raise OutdatedSchema(
            f"the database holds lwtool schema {found or 'none'}, this lwtool needs "
            f"{SCHEMA_VERSION}, and this role may not create it: run `lwtool migrate "
            "--world URL` with a role that owns the schema (docs/postgres.md)") from None


def _newer(found: int) -> str:
    return (f"the database holds lwtool schema {found}, newer than this lwtool knows "
            f"({SCHEMA_VERSION}): upgrade lwtool")


def migrate(conn: Any) -> int:
    """Bring the database to SCHEMA_VERSION; returns the version found before. Raises
    RuntimeError for a database a newer lwtool migrated."""
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
        conn.execute("CREATE SCHEMA IF NOT EXISTS lwtool")
        conn.execute("CREATE TABLE IF NOT EXISTS lwtool.meta (key text PRIMARY KEY, "
                     "value text NOT NULL)")
        row = conn.execute("SELECT value FROM lwtool.meta WHERE key = 'schema_version'"
                           ).fetchone()
        found = int(row[0]) if row else 0
        if found > SCHEMA_VERSION:
            raise RuntimeError(_newer(found))
        for version in range(found + 1, SCHEMA_VERSION + 1):
            conn.execute(MIGRATIONS[version])
            conn.execute("INSERT INTO lwtool.meta VALUES ('schema_version', %s) ON CONFLICT "
                         "(key) DO UPDATE SET value = excluded.value", (str(version),))
    return found
