"""Which lake an instance serves, for instances that recorded none: those used before 2026-11-28."""

import re

import dagster as dg
import pytest
from click.testing import CliRunner

from snowplow_assets.cli import main
from snowplow_assets.defs.manifests.instance_lake import InstanceOfAnotherLake, claim_instance_for_lake
from snowplow_assets.lake import Lake
from snowplow_assets.settings import Settings

RUN = "run=2026-03-01-10-00-00"


def materialised(instance: dg.DagsterInstance, key: str, path: str) -> None:
    instance.report_runless_asset_event(
        dg.AssetMaterialization(asset_key=key, partition=RUN, metadata={"path": dg.MetadataValue.path(path)})
    )


@pytest.mark.parametrize(
    ("key", "folder"),
    [("atomic_events", lambda lake: f"{lake.shredded_good(RUN)}/atomic-events"), ("cdc_history", None)],
)
def test_an_instance_without_a_recorded_lake_serves_the_lake_its_history_names(tmp_path, key, folder):
    old, other = Lake(str(tmp_path / "old")), Lake("s3://bucket/other")
    path = folder(old) if folder else old.cdc_history("landing=2026-03-01-10-00-00")
    with dg.DagsterInstance.ephemeral() as instance:
        materialised(instance, key, path)
        with pytest.raises(
            InstanceOfAnotherLake, match=re.escape(f"the lake {old.root}, and SNOWPLOW_LAKE is {other.root}")
        ):
            claim_instance_for_lake(instance, other.root)
        claim_instance_for_lake(instance, old.root)  # the old lake itself is recorded
        materialised(instance, key, path.replace(old.root, other.root))
        with pytest.raises(InstanceOfAnotherLake, match=re.escape(f"the lake {old.root},")):
            claim_instance_for_lake(instance, other.root)


def test_an_instance_without_history_is_claimed_by_the_first_lake(tmp_path):
    first, second = str(tmp_path / "first"), str(tmp_path / "second")
    with dg.DagsterInstance.ephemeral() as instance:
        materialised(instance, "web_page_views", f"{second}/web/page_views")  # a path no shred nor ingestion wrote
        claim_instance_for_lake(instance, first)
        with pytest.raises(InstanceOfAnotherLake, match=re.escape(f"the lake {first}, and SNOWPLOW_LAKE is {second}")):
            claim_instance_for_lake(instance, second)


def test_a_root_in_history_is_read_as_snowplow_lake_is_now():
    """An s3:// lake set as `s3://bucket//lake` recorded paths with the empty segment (until 2026-11-28)."""
    with dg.DagsterInstance.ephemeral() as instance:
        materialised(instance, "atomic_events", f"s3://bucket//lake/shredded/good/{RUN}/atomic-events")
        claim_instance_for_lake(instance, "s3://bucket/lake")


def test_a_lake_moved_with_a_link_left_in_its_place_is_told_by_its_old_name(tmp_path, monkeypatch):
    """`mv lake /big/lake && ln -s /big/lake lake`: the old name now resolves to the new place, and the
    refusal's own `lake-moved --from` command failed as well."""
    old, new = tmp_path / "lake", tmp_path / "big" / "lake"
    old.mkdir()
    home = tmp_path / "dagster_home"
    home.mkdir()
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    monkeypatch.setenv("SNOWPLOW_LAKE", str(old))
    with dg.DagsterInstance.get() as instance:
        claim_instance_for_lake(instance, Settings().lake)
    new.parent.mkdir()
    old.rename(new)
    old.symlink_to(new)
    with dg.DagsterInstance.get() as instance:
        with pytest.raises(InstanceOfAnotherLake, match=re.escape(f"lake-moved --from {old}`")):
            claim_instance_for_lake(instance, Settings().lake)
    moved = CliRunner().invoke(main, ["manifest", "lake-moved", "--from", str(old)])
    assert moved.exit_code == 0, moved.output
    with dg.DagsterInstance.get() as instance:
        claim_instance_for_lake(instance, Settings().lake)
