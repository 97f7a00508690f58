"""The capability firewall's pure parts, used from validate to the sandbox: host
patterns of `permissions.network` (hosts) and the secrets a run is granted, with the
redaction that keeps their values out of everything lwtool writes (secrets)."""
