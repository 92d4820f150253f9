"""The budget audit shared by the official import and local runs: every record over budget,
nothing capped, nothing removed."""

from __future__ import annotations

# No cost afbench reads (an official results row, a cost-ledger entry, a Harbor trial) is ever
# above this: a larger one is a broken input, and summing a few near 1e308 gives infinity,
# which no JSON artifact can hold.
MAX_USD = 1.0e12
USD_RULE = "USD, a finite number from 0 to 1e12"

AUDIT_NOTE = (
    "A complete list of records whose reported cost exceeds the budget. It is not a "
    "certificate of budget compliance: reported costs are taken as given, never "
    "recomputed, capped or removed."
)


def budget_audit(records: list[dict], budget_usd: float, label: str) -> dict:
    """records: dicts with task_id and cost_usd (None when unknown)."""
    over = [
        {
            "source": label,
            "task_id": r["task_id"],
            "cost_usd": r["cost_usd"],
            "excess_usd": round(r["cost_usd"] - budget_usd, 6),
        }
        for r in records
        if r["cost_usd"] is not None and r["cost_usd"] > budget_usd
    ]
    return {
        "budget_usd": budget_usd,
        "records_checked": len(records),
        "cost_unknown": sum(1 for r in records if r["cost_usd"] is None),
        "over_budget_count": len(over),
        "over_budget": over,
        "note": AUDIT_NOTE,
    }
