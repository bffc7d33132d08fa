import dagster as dg


def metadata_table(columns: list[tuple[str, str]], rows: list[dict[str, object]]) -> dg.TableMetadataValue:
    """A table for a materialisation's metadata: `columns` as (name, Dagster column type), `rows` keyed by name."""
    return dg.MetadataValue.table(
        records=[dg.TableRecord(row) for row in rows],
        schema=dg.TableSchema([dg.TableColumn(name, kind) for name, kind in columns]),
    )
