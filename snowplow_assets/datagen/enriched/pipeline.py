"""Reference data: the app the tracker is set up for, and the tracker, collector and enricher versions."""

TRACKER_VERSIONS = ("js-3.17.0", "js-3.21.0", "js-3.23.1", "js-3.24.2")
COLLECTOR_VERSION = "ssc-2.10.0-kinesis"
ENRICH_VERSION = "snowplow-enrich-kinesis-3.9.0"
APP_ID = "acme-shop"
