"""The command line and ingest: what a user runs, on top of the Dagster layer (:mod:`..defs`)."""
