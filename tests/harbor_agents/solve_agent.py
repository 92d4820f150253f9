"""Model-free Harbor 0.22.0 agents of afbench's own that solve a seeded share of the demo's
tasks, for the tests of a paired comparison run through `snakemake execute`: no network, no
model. A task is solved when sha256(f"{SEED}:{task}") read as a number falls below SHARE of its
range (`solves`), so each agent solves the same tasks on every run and machine, and the two
agents' choices are independent of each other.

To solve a task the agent writes the oracle's answer: the demo's reference solution is the
workspace's Lean file with every `sorry` proof replaced by `rfl` (harbor/export.py of the demo
release), which the demo's grader accepts; any other task is left as it is (as `nop` leaves
it), which the grader rejects. The task is the one Harbor names the trial after (its folder:
`<task>__<id>`, the agent's logs folder's parent). Each trial reports COST_USD through Harbor's
agent context (`agent_result.cost_usd`), as a model agent reports its spend.

    PYTHONPATH=tests/harbor_agents harbor run -p TASK -a solve_agent:StrongAgent ... -e docker

`StrongAgent` solves 80% of the tasks, `WeakAgent` 20%. `StrongAgentRateLimitedOnce` is
StrongAgent whose first attempt at demo_s01_t001 (the trial of a job named `…-attempt-1`) raises
Harbor's ApiRateLimitError, a provider's limit that leaves no valid reward: an infrastructure
error, which a later attempt gets past.
"""

from __future__ import annotations

import hashlib

from harbor.agents.base import BaseAgent
from harbor.environments.base import BaseEnvironment
from harbor.models.agent.context import AgentContext

WORKSPACE_FILE = "/workspace/Task.lean"
# the demo's oracle answer: each obligation's `  sorry` line becomes `  rfl`
SOLVE = f"sed -i 's/^  sorry$/  rfl/' {WORKSPACE_FILE}"


def solves(seed: str, share: float, task: str) -> bool:
    """Whether an agent of this seed and share solves `task`."""
    draw = int.from_bytes(hashlib.sha256(f"{seed}:{task}".encode()).digest(), "big")
    return draw < share * (1 << 256)


class SolveAgent(BaseAgent):
    SUPPORTS_WINDOWS: bool = False
    SEED = "solve"
    SHARE = 0.5
    COST_USD = 2.0

    @staticmethod
    def name() -> str:
        return "afbench-test-solve"

    def version(self) -> str:
        return "1.0.0"

    def task(self) -> str:
        return self.logs_dir.parent.name.split("__")[0]

    async def setup(self, environment: BaseEnvironment) -> None:
        pass

    async def run(
        self, instruction: str, environment: BaseEnvironment, context: AgentContext
    ) -> None:
        if solves(self.SEED, self.SHARE, self.task()):
            done = await environment.exec(command=SOLVE)
            if done.return_code != 0:
                raise RuntimeError(f"writing the answer failed: {done.stderr or done.stdout}")
        context.cost_usd = self.COST_USD


class StrongAgent(SolveAgent):
    SEED = "strong"
    SHARE = 0.8

    @staticmethod
    def name() -> str:
        return "afbench-test-strong"


class WeakAgent(SolveAgent):
    SEED = "weak"
    SHARE = 0.2

    @staticmethod
    def name() -> str:
        return "afbench-test-weak"


class StrongAgentRateLimitedOnce(StrongAgent):
    LIMITED_TASK = "demo_s01_t001"

    @staticmethod
    def name() -> str:
        return "afbench-test-strong-rate-limited-once"

    async def run(
        self, instruction: str, environment: BaseEnvironment, context: AgentContext
    ) -> None:
        job = self.logs_dir.parent.parent.name  # <jobs>/<job>/<trial>/agent
        if self.task() == self.LIMITED_TASK and job.endswith("-attempt-1"):
            from harbor.agents.installed.base import ApiRateLimitError

            context.cost_usd = self.COST_USD
            raise ApiRateLimitError(f"afbench test agent: rate limited on purpose in {job}")
        await super().run(instruction, environment, context)
