"""`ReadLimits`: `--limit NAME=VALUE` read into the bounds, bad ones refused in one line, and the bounds kept with
an index (its ingest options) and read back for `--update`."""

from __future__ import annotations

import pytest

from offline_agent.errors import ConfigError
from offline_agent.retrieval import IngestOptions, ReadLimits


def test_limits_are_read_from_name_value_options() -> None:
    limits = ReadLimits().with_options(["part-bytes=128MB", "depth=5000", "inflated_bytes=2g", "attributes=50"])
    assert limits == ReadLimits(inflated_bytes=2 << 30, part_bytes=128 << 20, depth=5000, attributes=50)
    assert limits.message_bytes == ReadLimits().message_bytes


@pytest.mark.parametrize(
    ("option", "said"),
    [
        ("pages=3", "NAME one of inflated-bytes, part-bytes, message-bytes, depth, attributes"),
        ("depth", "expected NAME=VALUE"),
        ("depth=1k", "'1k' is not a number"),
        ("part-bytes=lots", "'lots' is not a size"),
        ("depth=0", "limit depth must be a whole number >= 1"),
    ],
)
def test_a_bad_limit_is_refused_with_what_is_valid(option: str, said: str) -> None:
    with pytest.raises(ConfigError, match=said):
        ReadLimits().with_options([option])


def test_limits_are_kept_with_the_ingest_options_and_read_back() -> None:
    options = IngestOptions(limits=ReadLimits(depth=7))
    saved = options.to_dict()
    assert saved["limits"]["depth"] == 7
    assert IngestOptions(**saved).limits == ReadLimits(depth=7)
    assert IngestOptions(**{k: v for k, v in saved.items() if k != "limits"}).limits == ReadLimits()  # an old index
    assert options.fields.limits == ReadLimits(depth=7)  # what the readers are given
