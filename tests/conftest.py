"""Test-wide settings: Hypothesis profiles sized for a 2-core CI machine."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    deadline=None,
    max_examples=30,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile("thorough", deadline=None, max_examples=500)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
os.environ.setdefault("OFFLOAD_VERIFY", "1")


@pytest.fixture(autouse=True)
def _fresh_replay_plans():
    """Each test schedules its trees afresh: a test that changes a planning constant
    (``plan.WIDE_CHUNK``, a scan's threshold) or spies on a stage must not get a schedule
    an earlier test recorded (``offload.replay``)."""
    from offload import driver

    driver.forget_plans()
