"""A model-free Harbor agent of afbench's own whose every trial does what its script says, for
the tests of how afbench reads what Harbor records: an accepted, a rejected, an errored and a
retried trial, each made by real Harbor (0.22.0 and 0.26.0) in its own `docker` environment.
No network, no model.

The script is the agent kwarg `script`, `TASK=ACTION` pairs separated by commas, where the task
is the trial's task name (the start of its trial folder's name) and the action is one of

    nothing             touch nothing (scores like `nop`: reward 0)
    solve               run the task's own solution/solve.sh in the environment (reward 1)
    raise:NAME          raise the real exception class NAME, after touching nothing; Harbor
                        records it as the trial's exception_info and still runs the verifier
                        (reward 0 beside the exception)
    fail-once:NAME      the first time (no marker for the task in `state_dir` yet): write the
                        marker and raise NAME; every later time: solve. With `--max-retries 1
                        --retry-include NAME` Harbor retries the trial, deleting the first
                        attempt's folder.
    solve-then:NAME     of a multi-step task: solve at the first step, raise NAME at every later
                        one (the steps counted in `state_dir`); the later step's verifier still
                        finds the solved workspace (reward 1 beside the step's exception)

A task the script does not name gets `nothing`. NAME is one of provider_errors.EXCEPTIONS:
Harbor's own provider-error classes and litellm's BudgetExceededError, imported from where the
running Harbor keeps them, so the recorded exception_type is the real class's name.

    PYTHONPATH=tests/harbor_agents harbor run -p TASKS -a scripted_agent:ScriptedAgent \
        --ak 'script=demo_s01_t001=solve,demo_s01_t002=raise:ApiRateLimitError' -e docker
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

from harbor.agents.base import BaseAgent
from harbor.environments.base import BaseEnvironment
from harbor.models.agent.context import AgentContext
from provider_errors import EXCEPTIONS


def _exception(name: str, task: str) -> BaseException:
    """An instance of the real exception class `name`, with a message naming the task."""
    message = f"afbench scripted agent: {name} raised on purpose for task {task}"
    if name == "BudgetExceededError":
        from litellm.exceptions import BudgetExceededError

        return BudgetExceededError(current_cost=2.0, max_budget=1.0, message=message)
    from harbor.agents.installed import base

    if name not in EXCEPTIONS or not hasattr(base, name):
        raise ValueError(f"scripted agent: no exception class {name!r} (one of {EXCEPTIONS})")
    return getattr(base, name)(message)


def parse_script(text: str) -> dict[str, str]:
    script = {}
    for pair in filter(None, (p.strip() for p in text.split(","))):
        task, sep, action = pair.partition("=")
        kind, _, name = action.partition(":")
        if not sep or kind not in ("nothing", "solve", "raise", "fail-once", "solve-then"):
            raise ValueError(f"scripted agent: {pair!r} is not TASK=ACTION")
        if kind in ("raise", "fail-once", "solve-then") and name not in EXCEPTIONS:
            raise ValueError(f"scripted agent: {pair!r} names no exception of {EXCEPTIONS}")
        script[task] = action
    return script


class ScriptedAgent(BaseAgent):
    SUPPORTS_WINDOWS: bool = False

    def __init__(self, *args, script: str = "", state_dir: str | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self._script = parse_script(script)
        self._state_dir = Path(state_dir) if state_dir else None

    @staticmethod
    def name() -> str:
        return "afbench-test-scripted"

    def version(self) -> str:
        return "1.0.0"

    async def setup(self, environment: BaseEnvironment) -> None:
        pass

    def _trial_dir(self) -> Path:
        return Path(self.logs_dir).parent  # Harbor's <job>/<trial>/agent

    async def _solve(self, environment: BaseEnvironment) -> None:
        config = json.loads((self._trial_dir() / "config.json").read_text())
        solve = Path(config["task"]["path"]) / "solution" / "solve.sh"
        result = await environment.exec(command="bash -c " + shlex.quote(solve.read_text()))
        if result.return_code != 0:
            raise RuntimeError(f"solve.sh failed: {result.stderr}")

    async def run(
        self, instruction: str, environment: BaseEnvironment, context: AgentContext
    ) -> None:
        task = self._trial_dir().name.split("__")[0]
        kind, _, name = self._script.get(task, "nothing").partition(":")
        if kind == "solve":
            await self._solve(environment)
        elif kind == "raise":
            raise _exception(name, task)
        elif kind in ("fail-once", "solve-then"):
            if self._state_dir is None:
                raise ValueError(f"scripted agent: {kind} needs the kwarg state_dir")
            marker = self._state_dir / f"{task}.{kind}"
            first = not marker.exists()
            if first:
                marker.parent.mkdir(parents=True, exist_ok=True)
                marker.write_text(
                    f"{kind}: the first run {'raised' if kind == 'fail-once' else 'solved'}\n"
                )
            if first == (kind == "fail-once"):
                raise _exception(name, task)
            await self._solve(environment)
