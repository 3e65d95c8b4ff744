"""`make test-clock` (tests/clock_matrix.py): a moment of the clock tests collects only the files
`clock_files()` finds (issue #63: collecting the whole suite cost each moment more than its tests),
so every test marked `clock` must be in one of them, or no moment would run it."""

import pytest

import clock_matrix


def test_every_clock_test_is_in_a_file_a_clock_moment_collects(request):
    marked = {item.path for item in request.session.items if item.get_closest_marker("clock")}
    if not marked:
        pytest.skip("no test marked clock is selected in this run")
    assert marked <= set(clock_matrix.clock_files())
