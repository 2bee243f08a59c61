"""The Dagster layer: the ``Definitions``, the six assets, the ``files`` catalog, resources,
sensors and partitions.

Assets only load their inputs, call :mod:`extraction_assets.pipeline` and write the outputs;
the extraction logic lives in :mod:`extraction_assets.core`."""
