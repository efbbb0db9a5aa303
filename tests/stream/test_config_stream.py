"""The two ol.config fields of streaming, read from the environment."""

from __future__ import annotations

import pytest

from offload.config import Config

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("text", "limit"),
    [("4294967296", 1 << 32), ("512M", 512 << 20), ("4G", 4 << 30), ("1.5k", 1536)],
)
def test_the_device_memory_limit_takes_bytes_with_a_binary_unit(text, limit):
    assert Config.from_env({"OFFLOAD_DEVICE_MEMORY_LIMIT": text}).device_memory_limit == limit


def test_no_limit_and_an_automatic_progress_bar_by_default():
    cfg = Config.from_env({})
    assert cfg.device_memory_limit is None and cfg.progress is None


def test_progress_forced_off_or_on_and_a_bad_limit_is_refused():
    assert Config.from_env({"OFFLOAD_PROGRESS": "0"}).progress is False
    assert Config.from_env({"OFFLOAD_PROGRESS": "yes"}).progress is True
    with pytest.raises(ValueError, match="OFFLOAD_DEVICE_MEMORY_LIMIT"):
        Config.from_env({"OFFLOAD_DEVICE_MEMORY_LIMIT": "lots"})
