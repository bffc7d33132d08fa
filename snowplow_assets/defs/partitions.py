import dagster as dg

# One partition per enriched run folder, keyed by the folder name (run=YYYY-MM-DD-hh-mm-ss).
enriched_runs = dg.DynamicPartitionsDefinition(name="enriched_runs")

# One partition per CDC landing folder, keyed by the folder name (cdc/landing/<folder>/).
cdc_landings = dg.DynamicPartitionsDefinition(name="cdc_landings")
