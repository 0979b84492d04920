import pytest

from personal_memory.config import load, validate
from personal_memory.errors import ConfigError


def test_defaults_when_missing(tmp_path):
    c = load(tmp_path / "none.toml")
    assert c.folders == [] and c.settle_ms == 300 and c.rescan_interval == 600


def test_parse_folders(tmp_path):
    f = tmp_path / "config.toml"
    f.write_text('settle_ms = 500\nrescan_interval = 0\n[[folders]]\npath = "~/notes"\n'
                 '[[folders]]\npath = "/srv/wiki"\ncollection = "wiki"\nnamespace = "work"\n')
    c = load(f)
    assert c.settle_ms == 500 and c.rescan_interval == 0
    assert [(x.collection, x.namespace) for x in c.folders] == [("notes", "notes"),
                                                                 ("wiki", "work")]
    assert c.folders[0].root.is_absolute()


@pytest.mark.parametrize("raw, fragment", [
    ({"settle": 1}, "unknown setting 'settle'"),
    ({"settle_ms": "fast"}, "settle_ms"),
    ({"rescan_interval": -1}, "rescan_interval"),
    ({"rescan_interval": float("nan")}, "rescan_interval: nan is not a number of seconds"),
    ({"rescan_interval": float("inf")}, "rescan_interval: inf"),
    ({"folders": {"path": "x"}}, "folders: expected a list"),
    ({"folders": [{"collection": "x"}]}, "folders[0].path"),
    ({"folders": [{"path": "x", "colection": "y"}]}, "unknown key 'colection'"),
    ({"folders": [{"path": "a", "collection": "c"}, {"path": "b", "collection": "c"}]},
     "used twice"),
])
def test_bad_fields_are_named(raw, fragment):
    with pytest.raises(ConfigError) as err:
        validate(raw, "config.toml")
    assert fragment in str(err.value) and str(err.value).startswith("config.toml")


def test_bad_toml(tmp_path):
    f = tmp_path / "c.toml"
    f.write_text("folders = [\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load(f)


def test_embedder_setting_is_validated_and_names_the_variable():
    from personal_memory import settings
    assert settings.resolve(environ={"MEMORY_EMBEDDER": "none"}).embedder == "none"
    assert settings.resolve(environ={}, embedder="e5").embedder == "e5"
    with pytest.raises(ConfigError, match="MEMORY_EMBEDDER: 'bert' is not one of auto"):
        settings.resolve(environ={"MEMORY_EMBEDDER": "bert"})


@pytest.mark.parametrize("flags, fragment", [
    (["--rescan-interval", "nan"], "--rescan-interval: nan is not a number of seconds"),
    (["--rescan-interval", "-1"], "--rescan-interval: -1.0"),
    (["--settle-ms", "-5"], "--settle-ms: -5 is not a whole number"),
])
def test_watch_flags_get_the_config_files_checks(tmp_path, flags, fragment):
    """A flag out of range once ran a daemon that never rescanned (nan) or spun."""
    from support import run_memory
    (tmp_path / "notes").mkdir()
    done = run_memory("--db", tmp_path / "m.db", "watch", tmp_path / "notes", *flags,
                      timeout=30)
    assert done.returncode == 2 and f"memory: error: {fragment}" in done.stderr
