from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field

MAX_ATTEMPTS = 4
BASE_DELAY = 0.5
MAX_DELAY = 30.0
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})


class RetryError(Exception):
    """Every attempt failed; the last status or error is kept."""

    def __init__(self, url: str, attempts: int, last: str) -> None:
        super().__init__(f"{url}: gave up after {attempts} attempts ({last})")
        self.url = url
        self.attempts = attempts
        self.last = last


@dataclass
class Response:
    status: int
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Attempt:
    number: int
    delay: float
    status: int | None = None
    error: str | None = None


def parse_retry_after(value: str | None) -> float | None:
    """Seconds from a Retry-After header given in seconds; None when absent or a date."""
    if value is None:
        return None
    try:
        seconds = float(value.strip())
    except ValueError:
        return None
    return max(0.0, seconds)


def backoff_delay(attempt: int, jitter: Callable[[], float] = random.random) -> float:
    """Exponential backoff with full jitter, capped at MAX_DELAY."""
    ceiling = min(MAX_DELAY, BASE_DELAY * 2 ** (attempt - 1))
    return ceiling * jitter()


def fetch_all(fetcher: Fetcher, urls: list[str]) -> dict[str, Response | RetryError]:
    """Each URL in turn; a URL that fails for good does not stop the others."""
    results: dict[str, Response | RetryError] = {}
    for url in urls:
        try:
            results[url] = fetcher.fetch(url)
        except RetryError as error:
            results[url] = error
    return results


@dataclass
class Fetcher:
    send: Callable[[str], Response]
    sleep: Callable[[float], None] = time.sleep
    attempts: list[Attempt] = field(default_factory=list)

    def fetch(self, url: str) -> Response:
        last = "no attempt"
        for number in range(1, MAX_ATTEMPTS + 1):
            try:
                response = self.send(url)
            except OSError as error:
                last = f"{type(error).__name__}: {error}"
                self._wait(number, None, error=last)
                continue
            if response.status not in RETRY_STATUSES:
                return response
            last = f"status {response.status}"
            hint = parse_retry_after(response.headers.get("retry-after"))
            self._wait(number, hint, status=response.status)
        raise RetryError(url, MAX_ATTEMPTS, last)

    def _wait(self, number: int, hint: float | None, status: int | None = None,
              error: str | None = None) -> None:
        delay = min(MAX_DELAY, hint) if hint is not None else backoff_delay(number)
        self.attempts.append(Attempt(number, delay, status, error))
        if number < MAX_ATTEMPTS:
            self.sleep(delay)

    def total_delay(self) -> float:
        return sum(attempt.delay for attempt in self.attempts)
