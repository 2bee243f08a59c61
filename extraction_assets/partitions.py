"""The one partitions definition of the asset graph: a dynamic partition per file content hash."""

from dagster import DynamicPartitionsDefinition

#: Partition keys are the sha256 hex digests of the workbook files' bytes.
workbook_partitions = DynamicPartitionsDefinition(name="workbooks")
