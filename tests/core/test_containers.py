"""Docker compose projects as Harbor names them (afbench.core.containers)."""

from __future__ import annotations

from afbench.core.containers import compose_prefix


def test_compose_projects_are_named_as_harbor_names_them():
    assert compose_prefix("demo_s01_t001__AbC.dE") == "demo_s01_t001__abc-de__"
    assert compose_prefix("_x") == "0_x__"
