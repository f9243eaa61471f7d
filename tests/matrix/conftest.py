"""Matrix test fixtures; they live in matrix_support (importable by the tests too)."""

import pytest
from matrix_support import ada, homeserver, start_system  # noqa: F401


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/matrix/" in str(item.fspath).replace("\\", "/"):
            item.add_marker(pytest.mark.matrix)
