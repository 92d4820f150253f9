"""A model-free Harbor 0.22.0 agent of afbench's own that spends money step by step, the way a
model agent does, for the tests of what afbench does while a trial runs: no network, no model,
nothing written to the task's environment (it scores like `nop`).

Each step "costs" AFBENCH_TEST_SPEND_STEP_USD and takes AFBENCH_TEST_SPEND_STEP_S seconds;
after each one the agent writes its trajectory so far in Harbor's own format (ATIF, as
Harbor's terminus-2 agent does after every episode) to `<trial>/agent/trajectory.json`, each
step with its `metrics.cost_usd` and the running total in `final_metrics.total_cost_usd`. That
is the running cost afbench can see. After AFBENCH_TEST_SPEND_STEPS steps it stops and reports
the total through Harbor's agent context (`agent_result.cost_usd`). Set
AFBENCH_TEST_SPEND_HIDDEN=1 to write no trajectory: then the cost shows only at the end, as
with Harbor's installed agents (claude-code, codex, ...). Set AFBENCH_TEST_SPEND_UNTIL to a
file's path to have the agent, after its steps, wait until that file exists (an hour at most):
a test then decides when the agent ends, whatever the machine's speed; and
AFBENCH_TEST_SPEND_STARTED to a file's path it creates as its run begins, for a test to know
that the agent is running. Set AFBENCH_TEST_SPEND_TICKETS to a folder to have the agent, after
its steps, wait until it takes a ticket, a file in that folder that it removes (an hour at most):
each file lets one agent end, whichever takes it first, so a test ends trials that run side by
side one at a time.

    PYTHONPATH=tests/harbor_agents harbor run -p TASK -a spend_agent:SpendAgent ... -e docker
"""

from __future__ import annotations

import asyncio
import json
import math
import os
from datetime import UTC, datetime

from harbor.agents.base import BaseAgent
from harbor.environments.base import BaseEnvironment
from harbor.models.agent.context import AgentContext

SETTINGS = {
    "AFBENCH_TEST_SPEND_STEP_USD": 10.0,
    "AFBENCH_TEST_SPEND_STEP_S": 1.0,
    "AFBENCH_TEST_SPEND_STEPS": 5.0,
}


def take_ticket(folder: str) -> bool:
    """Removes one file of `folder`, if there is one that no other agent removes first."""
    try:
        names = sorted(os.listdir(folder))
    except FileNotFoundError:
        return False
    for name in names:
        try:
            os.unlink(os.path.join(folder, name))
        except FileNotFoundError:  # another agent took it
            continue
        return True
    return False


class SpendAgent(BaseAgent):
    SUPPORTS_WINDOWS: bool = True

    @staticmethod
    def name() -> str:
        return "afbench-test-spend"

    def version(self) -> str:
        return "1.0.0"

    def setting(self, name: str) -> float:
        text = self._get_env(name)
        if text is None:
            return SETTINGS[name]
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not math.isfinite(value) or value < 0:
            raise ValueError(f"{name}={text!r} is not a finite number >= 0")
        return value

    def write_trajectory(self, steps: list[dict], total: float) -> None:
        document = {
            "schema_version": "ATIF-v1.7",
            "session_id": "afbench-test-spend",
            "agent": {"name": self.name(), "version": self.version()},
            "steps": steps,
            "final_metrics": {"total_cost_usd": total, "total_steps": len(steps)},
        }
        path = self.logs_dir / "trajectory.json"
        staging = path.with_name(".trajectory.json.part")
        staging.write_text(json.dumps(document, indent=2))
        os.replace(staging, path)

    async def setup(self, environment: BaseEnvironment) -> None:
        pass

    async def run(
        self, instruction: str, environment: BaseEnvironment, context: AgentContext
    ) -> None:
        step_usd = self.setting("AFBENCH_TEST_SPEND_STEP_USD")
        step_s = self.setting("AFBENCH_TEST_SPEND_STEP_S")
        count = int(self.setting("AFBENCH_TEST_SPEND_STEPS"))
        hidden = self._get_env("AFBENCH_TEST_SPEND_HIDDEN") == "1"
        steps: list[dict] = []
        total = 0.0
        if started := self._get_env("AFBENCH_TEST_SPEND_STARTED"):
            open(started, "a").close()
        for number in range(1, count + 1):
            await asyncio.sleep(step_s)
            total += step_usd
            context.cost_usd = total  # what Harbor records if the trial ends here
            steps.append(
                {
                    "step_id": number,
                    "timestamp": datetime.now(UTC).isoformat(),
                    "source": "agent",
                    "message": f"step {number}",
                    "metrics": {"cost_usd": step_usd},
                }
            )
            if not hidden:
                self.write_trajectory(steps, total)
        until = self._get_env("AFBENCH_TEST_SPEND_UNTIL")
        tickets = self._get_env("AFBENCH_TEST_SPEND_TICKETS")
        for _ in range(36_000):
            if (not until or os.path.exists(until)) and (not tickets or take_ticket(tickets)):
                break
            await asyncio.sleep(0.1)
