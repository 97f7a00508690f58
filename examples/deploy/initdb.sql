-- Run once by the postgres image when it creates the database (compose.yaml mounts it
-- in /docker-entrypoint-initdb.d), as the database's owner, lwtool_owner: the
-- least-privilege roles of docs/postgres.md ("Roles and grants"). `lwtool migrate`
-- runs as lwtool_owner; workers run as lwtool_app, which may read and write rows only.
CREATE ROLE lwtool_app LOGIN PASSWORD 'lwtool_app';
GRANT CONNECT ON DATABASE lwtool TO lwtool_app;
CREATE SCHEMA lwtool AUTHORIZATION lwtool_owner;
GRANT USAGE ON SCHEMA lwtool TO lwtool_app;
ALTER DEFAULT PRIVILEGES FOR ROLE lwtool_owner IN SCHEMA lwtool
  GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO lwtool_app;
