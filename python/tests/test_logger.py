"""rmm.pylibrmm.logger over the one process-wide logger."""

import warnings

import pytest

import rmm
from rmm.librmm._logger import level_enum
from rmm.pylibrmm import logger


@pytest.fixture
def restore_levels():
    level, flush = rmm.get_logging_level(), rmm.get_flush_level()
    yield
    rmm.set_logging_level(level)
    rmm.set_flush_level(flush)


def test_level_enum_members():
    assert [(m.name, int(m)) for m in level_enum] == [
        ("trace", 0),
        ("debug", 1),
        ("info", 2),
        ("warn", 3),
        ("error", 4),
        ("critical", 5),
        ("off", 6),
        ("n_levels", 7),
    ]
    assert rmm.level_enum is level_enum is logger.level_enum


def test_defaults():
    assert rmm.get_logging_level() == level_enum.info
    assert rmm.get_flush_level() == level_enum.off
    assert isinstance(rmm.get_logging_level(), level_enum)


def test_set_and_should_log(restore_levels):
    rmm.set_logging_level(level_enum.warn)
    assert rmm.get_logging_level() is level_enum.warn
    assert not rmm.should_log(level_enum.info)
    assert rmm.should_log(level_enum.warn)
    assert rmm.should_log(level_enum.critical)
    rmm.set_logging_level(level_enum.trace)
    assert rmm.should_log(level_enum.trace)


def test_flush_level(restore_levels):
    rmm.set_flush_level(level_enum.error)
    assert rmm.get_flush_level() is level_enum.error
    rmm.flush_logger()


def test_levels_not_logged_warn(restore_levels):
    rmm.set_logging_level(level_enum.error)
    with pytest.warns(UserWarning, match="level_enum.debug"):
        rmm.set_flush_level(level_enum.debug)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rmm.set_logging_level(level_enum.info)


@pytest.mark.parametrize("func", [rmm.should_log, rmm.set_logging_level, rmm.set_flush_level])
@pytest.mark.parametrize("bad", [2, "info", None])
def test_non_levels_are_type_errors(func, bad):
    with pytest.raises(TypeError):
        func(bad)
