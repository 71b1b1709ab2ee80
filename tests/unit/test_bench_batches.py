"""The batch scenario's report: a batch that ends before any interactive request did is a
row that says so, not the end of the whole benchmark run."""

from __future__ import annotations

from bench.batches import NONE_DURING, BatchResults, markdown, summary


def _results(during: float | None) -> BatchResults:
    return BatchResults(requests=50, matching=50, batch_seconds=12.5, ttft_alone=0.060,
                        ttft_during=during, total_alone=0.400,
                        total_during=None if during is None else 1.2,
                        during=0 if during is None else 4)


def test_report_without_requests_during_the_batch_says_so_and_gives_no_ratio() -> None:
    results = _results(None)
    assert results.ttft_ratio is None
    table = markdown(results)
    assert "| interactive TTFT alone / during the batch | 60 ms / - (" + NONE_DURING in table
    assert "target" not in table
    assert summary(results) == "interactive first token: idle 60 ms; " + NONE_DURING


def test_report_with_requests_during_the_batch_gives_both_ratios() -> None:
    results = _results(0.090)
    assert results.ttft_ratio == 0.090 / 0.060
    table = markdown(results)
    assert ("| interactive TTFT alone / during the batch | 60 ms / 90 ms (1.50x; target "
            "<= 1.5x; 4 requests during the batch) |") in table
    assert "| interactive 64-token request alone / during the batch | 400 ms / 1200 ms " \
           "(3.00x) |" in table
    assert summary(results).endswith("ratio 1.50x (target <= 1.5x), 4 requests during the "
                                     "batch")
