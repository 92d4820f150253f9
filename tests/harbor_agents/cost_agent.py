"""A model-free Harbor 0.22.0 agent of afbench's own that reports a cost, for the tests of what
afbench does with the money a trial spent: no network, no model, nothing written to the task's
environment (it scores like `nop`). It reports a fixed cost in USD through Harbor's own agent
context, which Harbor records in the trial's result.json as `agent_result.cost_usd` and sums
into the job's result.json as `stats.cost_usd`.

Select it with Harbor's import-path form of the agent flag, with this folder on the module path
of the Python that runs Harbor:

    PYTHONPATH=tests/harbor_agents harbor run -p TASK -a cost_agent:CostAgent ... -e docker

The cost is AFBENCH_TEST_AGENT_COST_USD (a finite number >= 0) from the agent's environment
(`--ae AFBENCH_TEST_AGENT_COST_USD=2.5`) or from Harbor's own, else DEFAULT_COST_USD. A value
that is not such a number fails the trial (Harbor records the exception), never a silent 0.
"""

from __future__ import annotations

import math

from harbor.agents.base import BaseAgent
from harbor.environments.base import BaseEnvironment
from harbor.models.agent.context import AgentContext

COST_VARIABLE = "AFBENCH_TEST_AGENT_COST_USD"
DEFAULT_COST_USD = 1.25


class CostAgent(BaseAgent):
    SUPPORTS_WINDOWS: bool = True

    @staticmethod
    def name() -> str:
        return "afbench-test-cost"

    def version(self) -> str:
        return "1.0.0"

    def cost_usd(self) -> float:
        text = self._get_env(COST_VARIABLE)
        if text is None:
            return DEFAULT_COST_USD
        try:
            cost = float(text)
        except ValueError:
            cost = math.nan
        if not math.isfinite(cost) or cost < 0:
            raise ValueError(f"{COST_VARIABLE}={text!r} is not a finite number >= 0 (USD)")
        return cost

    async def setup(self, environment: BaseEnvironment) -> None:
        pass

    async def run(
        self, instruction: str, environment: BaseEnvironment, context: AgentContext
    ) -> None:
        context.cost_usd = self.cost_usd()
