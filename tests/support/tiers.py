"""The test tiers and the most seconds one test of each may take, fixtures included
(pytest-timeout): a hung test fails on its own instead of eating CI's 90 minutes. A test that
needs longer says so with its own ``@pytest.mark.timeout(...)``, which wins."""

TIERS = ("unit", "app", "live")
TIMEOUT_S = {"unit": 60, "app": 120, "live": 900}
