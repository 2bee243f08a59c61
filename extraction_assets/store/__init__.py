"""The data dir: the content-addressed store, Parquet tables, the DuckDB views over them
(:mod:`.warehouse`) and the lineage rows."""
