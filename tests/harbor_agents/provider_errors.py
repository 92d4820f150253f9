"""The five exceptions of a model provider's outage or limit that Harbor's error policy
(harbor/models/trial/error_policy.py, Harbor >= 0.25) says leave no valid reward, though Harbor
still grades the trial: four of Harbor's own classes (harbor.agents.installed.base) and litellm's
BudgetExceededError. No import of Harbor here, so afbench's own venv can read the list."""

EXCEPTIONS = (
    "ApiRateLimitError",
    "ApiInternalServerError",
    "NetworkConnectionError",
    "ApiUsageLimitError",
    "BudgetExceededError",
)
