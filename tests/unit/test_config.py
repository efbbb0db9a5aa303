"""``ol.config`` is strict (issue 18 item 8): unknown names list the valid ones, values of the
wrong type are refused, and ``OFFLOAD_*`` variables are parsed strictly, naming the variable."""

from __future__ import annotations

from pathlib import Path

import pytest

from offload.config import SETTINGS, Config, config

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("name", ["fast_math", "boundscheck", "simulator"])
def test_an_unknown_name_is_an_attribute_error_listing_the_settings(name):
    cfg = Config()
    with pytest.raises(AttributeError) as info:
        setattr(cfg, name, True)
    message = str(info.value)
    assert repr(name) in message
    assert all(s in message for s in SETTINGS)
    with pytest.raises(AttributeError, match="the settings are"):
        getattr(cfg, name)


def test_a_typo_suggests_the_nearest_setting():
    with pytest.raises(AttributeError, match="did you mean 'fastmath'"):
        Config().fast_math = True


@pytest.mark.parametrize(
    ("name", "value", "error"),
    [
        ("bounds_check", "no", TypeError),
        ("fastmath", 1, TypeError),
        ("verify", None, TypeError),
        ("memory", "gpu", ValueError),
        ("memory", 1, TypeError),
        ("cache_dir", 3, TypeError),
        ("pipeline", ["fold"], TypeError),
        ("disabled_passes", 7, TypeError),
        ("dump", [1, 2], TypeError),
    ],
)
def test_a_value_of_the_wrong_type_is_refused_naming_the_setting(name, value, error):
    cfg = Config()
    before = getattr(cfg, name)
    with pytest.raises(error, match=f"config.{name}"):
        setattr(cfg, name, value)
    assert getattr(cfg, name) == before


def test_accepted_values_are_normalised():
    cfg = Config()
    cfg.cache_dir = "/tmp/x"
    cfg.disabled_passes = ["select", "divmod"]
    cfg.dump = "ir, source"
    assert cfg.cache_dir == Path("/tmp/x")
    assert cfg.disabled_passes == frozenset({"select", "divmod"})
    assert cfg.dump == frozenset({"ir", "source"})
    cfg.bounds_check = True
    assert cfg.compile_options().bounds_check


@pytest.mark.parametrize(
    ("env", "field", "want"),
    [
        ({"OFFLOAD_FASTMATH": "YES"}, "fastmath", True),
        ({"OFFLOAD_FASTMATH": " off "}, "fastmath", False),
        ({"OFFLOAD_FASTMATH": ""}, "fastmath", False),
        ({"OFFLOAD_BOUNDS_CHECK": "1"}, "bounds_check", True),
        ({"OFFLOAD_MEMORY": "Device"}, "memory", "device"),
        ({"OFFLOAD_DISABLE_PASSES": "select,divmod"}, "disabled_passes", {"select", "divmod"}),
        ({"NUMBA_ENABLE_CUDASIM": "1"}, "gpu_simulator", True),
        ({"NUMBA_ENABLE_CUDASIM": "1", "OFFLOAD_GPU_SIMULATOR": "0"}, "gpu_simulator", False),
        ({"OFFLOAD_PIPELINE": ""}, "pipeline", None),
    ],
)
def test_environment_spellings_are_parsed(env, field, want):
    assert getattr(Config.from_env(env), field) == want


@pytest.mark.parametrize(
    ("var", "text"),
    [
        ("OFFLOAD_FASTMATH", "maybe"),
        ("OFFLOAD_BOUNDS_CHECK", "2"),
        ("OFFLOAD_VERIFY", "enabled"),
        ("OFFLOAD_MEMORY", "managed"),
    ],
)
def test_an_environment_value_not_accepted_is_a_value_error_naming_the_variable(var, text):
    with pytest.raises(ValueError, match=var) as info:
        Config.from_env({var: text})
    assert repr(text) in str(info.value)
    if var != "OFFLOAD_MEMORY":
        assert "1, true, yes, on / 0, false, no, off" in str(info.value)


def test_every_setting_has_a_field_and_every_field_a_setting():
    from dataclasses import fields

    assert [f.name for f in fields(Config)] == list(SETTINGS)
    assert repr(config).startswith("Config(cache_dir=")
