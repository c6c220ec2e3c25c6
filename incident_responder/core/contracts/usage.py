"""Every agent's run: the tokens it used, accounted from the parts."""

from __future__ import annotations

from incident_responder.core.contracts.base import Contract


class TokenUsage(Contract):
    """Tokens accounted from the parts (Bedrock's input count already includes cache reads and writes)."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def add(self, usage: dict | None) -> TokenUsage:
        if not usage:
            return self
        details = usage.get("input_token_details") or {}
        return TokenUsage(
            input_tokens=self.input_tokens + int(usage.get("input_tokens") or 0),
            output_tokens=self.output_tokens + int(usage.get("output_tokens") or 0),
            cache_read_tokens=self.cache_read_tokens + int(details.get("cache_read") or 0),
            cache_write_tokens=self.cache_write_tokens + int(details.get("cache_creation") or 0),
        )
