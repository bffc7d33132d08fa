import dagster as dg

from snowplow_assets.defs.checks.shred_checks import SHRED_CHECK_SPECS


def test_code_location_holds_the_shred_graph(definitions):
    repository = definitions.get_repository_def()
    keys = {node.key.to_user_string() for node in repository.asset_graph.asset_nodes}
    assert {"enriched_batch", "atomic_events", "shredded_types"} <= keys
    for key in ("enriched_batch", "atomic_events", "shredded_types"):
        partitions = repository.asset_graph.get(dg.AssetKey(key)).partitions_def
        assert isinstance(partitions, dg.DynamicPartitionsDefinition) and partitions.name == "enriched_runs"
    assert "enriched_run_folders" in {s.name for s in repository.sensor_defs}
    assert "shred_enriched_run" in {j.name for j in repository.get_all_jobs()}


def test_shred_checks_are_blocking_errors(definitions):
    checks = {
        (k.asset_key.to_user_string(), k.name) for k in definitions.get_repository_def().asset_graph.asset_check_keys
    }
    assert {
        ("atomic_events", "unique_event_ids"),
        ("atomic_events", "lines_accounted_for"),
        ("shredded_types", "entities_have_events"),
        ("shredded_types", "renamed_events_have_duplicate_context"),
    } <= checks
    assert all(spec.blocking for spec in SHRED_CHECK_SPECS)


def test_runs_execute_in_one_process(definitions):
    job = definitions.resolve_job_def("shred_enriched_run")
    assert job.executor_def is dg.in_process_executor
