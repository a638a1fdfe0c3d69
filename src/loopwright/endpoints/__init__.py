"""Endpoints: where a model lives (URL, key, headers, the shared HTTP client) and how calls to it
are retried, streamed and chained to fallbacks."""
