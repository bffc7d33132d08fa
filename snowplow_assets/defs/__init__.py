"""Dagster wiring only: partitions, resources, assets, checks, sensors, jobs. Logic lives in the domain packages."""
