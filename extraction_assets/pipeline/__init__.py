"""One plain function per asset (Arrow tables in, Arrow tables out, no Dagster), the table
schemas of the DuckDB view contract and the data-quality checks run on stage outputs."""
