"""The statistical shapes the analysis and the comparisons across revisions share: a
clustered (CR2) interval of a rate or of a paired difference (afbench.core.stats), and a plain
interval."""

from __future__ import annotations

from . import Field, Shape


def _clustered(name: str) -> Shape:
    return Shape(
        name,
        Field("mean", float),
        Field("se_clustered", float, null=True, doc="CR2; null: too few sources"),
        Field("df", float, null=True, doc="Bell-McCaffrey degrees of freedom"),
        Field("correlation", float, null=True, doc="intra-source correlation"),
        Field("se_cr0", float),
        Field("se_iid", float),
        Field("design_effect", float, null=True, doc="null: no variation at all"),
        Field("clusters", int, unit="sources"),
        Field("tasks", int, unit="tasks"),
        Field("confidence", float),
        Field("low", float),
        Field("high", float),
        Field("method", str),
    )


CLUSTERED_RATE = _clustered("clustered rate interval")
CLUSTERED_DIFFERENCE = _clustered("clustered difference interval")
INTERVAL = Shape("interval", Field("low", float), Field("high", float))
