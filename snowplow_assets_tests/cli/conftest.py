import pytest
from dagster._core.definitions.reconstruct import ReconstructableJob


@pytest.fixture(autouse=True)
def _fresh_definitions():
    """In-process CLI runs load the code location once per process, with resources built from the settings
    of that moment; Dagster keeps the last loaded definition. A real CLI call is a new process; here each
    test gets its own settings, so forget the previous test's definitions."""
    ReconstructableJob.get_repository_definition.cache_clear()
    ReconstructableJob.get_definition.cache_clear()
    yield
