"""The imaging bench's check that each peer column runs the libvips it names.

Benchmarks/anchors/imaging.py reads, in the peer's own process, the version pyvips reports and the
libvips file mapped into it, and refuses to measure when either is not the column's. These tests
run the script as make bench does, with a stand-in pyvips that reports another libvips: the fault
found on a fresh machine (a pyvips built against Debian's 8.14 in the pyvips[binary] column).
"""
import importlib.util
import os
import subprocess
import sys
import sysconfig

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SCRIPT = os.path.join(ROOT, "Benchmarks", "anchors", "imaging.py")


def load_anchor():
    spec = importlib.util.spec_from_file_location("imaging_anchor", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def pinned_version():
    with open(os.path.join(ROOT, "scripts", "libvips.pin")) as lines:
        return next(line.split("=", 1)[1].strip() for line in lines if line.startswith("LIBVIPS_VERSION="))


def pyvips_reporting(tmp_path, version):
    """A folder with a pyvips that reports libvips `version` and maps no libvips: a peer on another engine."""
    package = tmp_path / "pyvips"
    package.mkdir()
    parts = [int(part) for part in version.split(".")]
    (package / "__init__.py").write_text("API_mode = True\n_parts = %r\ndef version(i):\n    return _parts[i]\n" % parts)
    return str(tmp_path)


def run_peer(path, *arguments):
    environment = dict(os.environ, PYTHONPATH=path)
    return subprocess.run([sys.executable, SCRIPT, *arguments], capture_output=True, text=True, env=environment)


def test_a_peer_on_another_libvips_fails_the_bench_with_its_reason(tmp_path):
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    peer = run_peer(pyvips_reporting(tmp_path, "8.14.1"), "measure", str(inputs), "0.1", "pyvips", "--column", "binary")
    assert peer.returncode == 3
    assert peer.stdout == ""  # nothing measured, no report for the bench to print
    assert "runs libvips 8.14.1" in peer.stderr
    assert "not libvips %s" % pinned_version() in peer.stderr
    assert "pyvips_binary.libs" in peer.stderr
    assert "remove %s" % sys.prefix in peer.stderr


def test_the_pinned_version_alone_is_not_the_wheels_engine(tmp_path):
    # Right number, wrong file: no libvips from the wheel's folder is mapped into the process.
    peer = run_peer(pyvips_reporting(tmp_path, pinned_version()), "engine", "--column", "binary")
    assert peer.returncode == 3
    assert "from no library file" in peer.stderr


def test_without_a_column_the_engine_is_reported_unchecked(tmp_path):
    peer = run_peer(pyvips_reporting(tmp_path, "8.14.1"), "engine")
    assert peer.returncode == 0
    assert '"version": "8.14.1"' in peer.stdout


def test_the_binary_column_names_the_pinned_library_in_the_wheels_folder():
    anchor = load_anchor()
    version, library = anchor.column_libvips("binary")
    assert version == pinned_version()
    assert library == os.path.realpath(os.path.join(sysconfig.get_paths()["purelib"], "pyvips_binary.libs",
                                                    anchor.pinned()["LIBVIPS_LIBRARY"]))
    anchor.check_engine({"version": version, "library": library}, "binary", (version, library))
    with pytest.raises(anchor.EngineMismatch, match="runs libvips 8.14.1 from /usr/lib"):
        anchor.check_engine({"version": "8.14.1", "library": "/usr/lib/libvips.so.42.16.1"}, "binary", (version, library))


def test_the_debian_column_names_debians_package():
    anchor = load_anchor()
    version, library = anchor.column_libvips("debian")
    packaged = subprocess.run(["dpkg-query", "-W", "-f=${Version}", "libvips42"], capture_output=True, text=True)
    assert version == packaged.stdout.split("-")[0]
    assert os.path.isfile(library) and os.path.basename(library).startswith("libvips.so.42.")


def test_the_mapped_library_is_read_from_the_maps_file(tmp_path):
    anchor = load_anchor()
    maps = tmp_path / "maps"
    maps.write_text(
        "7f00-7f01 r-xp 00000000 fd:01 1 /usr/lib/x86_64-linux-gnu/libglib-2.0.so.0.7400.6\n"
        "7f02-7f03 r-xp 00000000 00:00 0 \n"
        "7f04-7f05 r-xp 00000000 fd:01 2 %s\n" % os.path.realpath(__file__))
    assert anchor.mapped_libvips(str(maps)) is None
    with open(maps, "a") as more:
        more.write("7f06-7f07 r-xp 00000000 fd:01 3 /opt/x/pyvips_binary.libs/libvips-e42572c0.so.42\n")
    assert anchor.mapped_libvips(str(maps)) == "/opt/x/pyvips_binary.libs/libvips-e42572c0.so.42"
