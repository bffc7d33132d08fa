"""CDC consolidation: landed Kafka records to change and delete histories, batches and the latest view.

Plain PySpark, no Dagster (the wiring is in snowplow_assets/defs/). The semantics are in order.py; the
README section "CDC consolidation" describes the whole.
"""
