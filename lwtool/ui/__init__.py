"""The web inspector: read-only pages over a data dir (`lwtool ui`)."""
