import pytest

from snowplow_assets.lake import (
    validate_cdc_landing_folder,
    validate_cdc_model_name,
    validate_event_manifest_folder,
    validate_run_folder,
)


@pytest.mark.parametrize(
    ("validate", "name"),
    [
        (validate_run_folder, "run=2026-03-01-10-00-00"),
        (validate_event_manifest_folder, "run=2026-03-01-10-00-00.0123456789abcdef"),
        (validate_cdc_landing_folder, "orders.2026-03-01"),
        (validate_cdc_model_name, "orders"),
    ],
)
@pytest.mark.parametrize("ending", ["\n", "\r", "\u2028", "/..", "/"])
def test_a_valid_name_with_anything_after_it_is_rejected(validate, name, ending):
    assert validate(name) == name
    with pytest.raises(ValueError, match="not a"):
        validate(name + ending)


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
