"""RMM's own distributions installed beside ours are found at import: a shared ``rmm`` folder is
an ImportError naming both distributions, RMM elsewhere on ``sys.path`` (or its C++ library) a
warning."""

import sys

import pytest

from rmm import _conflicts


def _fake_distribution(site, name, version, files):
    """Writes the metadata pip leaves for an installed distribution (and its files) into site."""
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    (info / "RECORD").write_text("".join(f"{f},,\n" for f in files))
    for f in files:
        path = site / f
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("")


@pytest.fixture
def site(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "path", [str(tmp_path)] + sys.path)
    return tmp_path


def test_nothing_to_report_without_rmms_distributions(site, recwarn):
    _conflicts.check(str(site / "rmm"))
    assert not [w for w in recwarn if issubclass(w.category, _conflicts.RMMDistributionWarning)]


def test_rmm_cu13_in_our_folder_is_an_import_error(site):
    _fake_distribution(site, "rmm-cu13", "26.10.0", ["rmm/__init__.py", "rmm/pylibrmm/stream.abi3.so"])
    with pytest.raises(ImportError) as info:
        _conflicts.check(str(site / "rmm"))
    text = str(info.value)
    assert "rmm-cu13 26.10.0" in text and "rmm-rs" in text and "pip uninstall -y rmm-cu13 rmm-rs" in text


def test_rmm_cu12_elsewhere_on_the_path_is_a_warning(site, tmp_path_factory):
    _fake_distribution(site, "rmm-cu12", "25.10.0", ["rmm/__init__.py"])
    ours = tmp_path_factory.mktemp("ours") / "rmm"
    ours.mkdir()
    with pytest.warns(_conflicts.RMMDistributionWarning, match="rmm-cu12 25.10.0"):
        _conflicts.check(str(ours))


def test_librmm_is_a_warning_naming_what_cannot_use_us(site):
    _fake_distribution(site, "librmm-cu13", "26.10.0", ["librmm/__init__.py"])
    with pytest.warns(_conflicts.RMMDistributionWarning, match="librmm-cu13 26.10.0.*cuDF"):
        _conflicts.check(str(site / "rmm"))
