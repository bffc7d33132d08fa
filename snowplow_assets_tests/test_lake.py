from datetime import datetime, timedelta, timezone

import pytest

from snowplow_assets.lake import (
    event_manifest_folder_created,
    event_manifest_folder_name,
    validate_cdc_landing_folder,
    validate_cdc_model_name,
    validate_event_manifest_folder,
    validate_run_folder,
)
from snowplow_assets.storage.base import retired_copy_of


@pytest.mark.parametrize(
    ("validate", "name"),
    [
        (validate_run_folder, "run=2026-03-01-10-00-00"),
        (validate_event_manifest_folder, "run=2026-03-01-10-00-00.0123456789abcdef"),
        (validate_event_manifest_folder, "run=2026-03-01-10-00-00.20260310T120005Z.0123456789abcdef"),
        (validate_cdc_landing_folder, "orders.2026-03-01"),
        (validate_cdc_model_name, "orders"),
    ],
)
@pytest.mark.parametrize("ending", ["\n", "\r", "\u2028", "/..", "/"])
def test_a_valid_name_with_anything_after_it_is_rejected(validate, name, ending):
    assert validate(name) == name
    with pytest.raises(ValueError, match="not a"):
        validate(name + ending)


@pytest.mark.parametrize("name", ["2026-03-01.replaced-1", "orders.replaced-0f3a", "a.b.replaced-ff"])
def test_a_landing_is_not_named_as_an_old_copy_a_swap_leaves(name):
    """Such a landing's history folder is what replace_tree deletes as the leftover of landing `x`'s swap."""
    assert retired_copy_of(name) is not None
    with pytest.raises(ValueError, match="not ending in .replaced-<hex digits>"):
        validate_cdc_landing_folder(name)
    assert validate_cdc_landing_folder(name + "x") == name + "x"  # not hex: no copy's name


@pytest.mark.parametrize(
    ("validate", "name"),
    [
        (validate_run_folder, "run=٢٠٢٦-01-01-00-00-00"),  # Arabic-Indic digits
        (validate_run_folder, "run=2026-01-01-00-00-０１"),  # full-width digits
        (validate_event_manifest_folder, "run=٢٠٢٦-01-01-00-00-00.0123456789abcdef"),
    ],
)
def test_run_folder_names_take_ascii_digits_only(validate, name):
    """Python's \\d matches any Unicode digit; such a name is no run folder and names no date."""
    with pytest.raises(ValueError, match="not a"):
        validate(name)


def test_an_entry_folder_is_named_with_the_utc_second_it_was_made():
    made = datetime(2026, 3, 10, 13, 0, 5, 999999, tzinfo=timezone(timedelta(hours=1)))
    name = event_manifest_folder_name("run=2026-03-01-10-00-00", made, "0123456789abcdef")
    assert name == "run=2026-03-01-10-00-00.20260310T120005Z.0123456789abcdef"
    assert event_manifest_folder_created(name) == made.replace(microsecond=0)


@pytest.mark.parametrize(
    "name",
    [
        "run=2026-03-01-10-00-00.0123456789abcdef",  # made before 2026-11-27
        "run=2026-03-01-10-00-00.20260230T120005Z.0123456789abcdef",  # no date
        "run=2026-03-01-10-00-00.20260310T120005Z",
        "notes.txt",
    ],
)
def test_a_name_without_a_time_of_making_has_none(name):
    assert event_manifest_folder_created(name) is None
