"""The pure parts of the node images: OCI archive layout, layer tars, cache keys, slimming."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import shutil
import subprocess
import tarfile
from pathlib import Path
from typing import Any

import pytest

from tests.services import image_layers, oci_archive
from tests.services.oci_archive import ImageConfig

NAME = "ghcr.io/cdcflow/example:1.2.3"
CONFIG = ImageConfig(
    entrypoint=("cdcflow",),
    cmd=("--help",),
    env={"PATH": "/usr/bin", "HOME": "/home/cdcflow"},
    user="1000",
    labels={"io.cdcflow.source-digest": "abc"},
)


def _tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def _layers(tmp_path: Path) -> list[Path]:
    first = _tree(tmp_path / "first", {"usr/bin/tool": "#!/bin/sh\n", "etc/motd": "hi\n"})
    second = _tree(tmp_path / "second", {"opt/app/main.py": "print('hi')\n"})
    out = [tmp_path / "first.tar", tmp_path / "second.tar"]
    oci_archive.write_layer(first, out[0], mtime=0)
    oci_archive.write_layer(second, out[1], mtime=0)
    return out


def _members(archive: Path) -> dict[str, bytes]:
    with tarfile.open(archive) as tar:
        return {
            member.name: tar.extractfile(member).read()  # type: ignore[union-attr]
            for member in tar
            if member.isreg()
        }


def _blob(members: dict[str, bytes], digest: str) -> bytes:
    return members["blobs/sha256/" + digest.removeprefix("sha256:")]


def _json(data: bytes) -> Any:
    return json.loads(data)


def test_archive_blobs_are_named_by_their_sha256(tmp_path: Path) -> None:
    out = tmp_path / "image.tar"
    oci_archive.write_oci_archive(name=NAME, layers=_layers(tmp_path), config=CONFIG, out=out)
    members = _members(out)
    assert _json(members["oci-layout"]) == {"imageLayoutVersion": "1.0.0"}
    blobs = {name: data for name, data in members.items() if name.startswith("blobs/")}
    assert len(blobs) == 4  # manifest, config, two layers
    for name, data in blobs.items():
        assert name == "blobs/sha256/" + hashlib.sha256(data).hexdigest()


def test_index_names_the_image_for_containerd_and_oci(tmp_path: Path) -> None:
    out = tmp_path / "image.tar"
    archive = oci_archive.write_oci_archive(
        name=NAME, layers=_layers(tmp_path), config=CONFIG, out=out
    )
    index = _json(_members(out)["index.json"])
    [manifest] = index["manifests"]
    assert manifest["annotations"] == {
        "io.containerd.image.name": NAME,
        "org.opencontainers.image.ref.name": NAME,
    }
    assert manifest["platform"] == {"architecture": "amd64", "os": "linux"}
    assert manifest["mediaType"] == oci_archive.MEDIA_MANIFEST
    assert manifest["digest"] == archive.digest
    assert archive == oci_archive.ImageArchive(name=NAME, path=out, digest=archive.digest)


def test_manifest_and_config_describe_the_layers(tmp_path: Path) -> None:
    layers = _layers(tmp_path)
    out = tmp_path / "image.tar"
    archive = oci_archive.write_oci_archive(name=NAME, layers=layers, config=CONFIG, out=out)
    members = _members(out)
    manifest_blob = _blob(members, archive.digest)
    manifest = _json(manifest_blob)
    config_blob = _blob(members, manifest["config"]["digest"])
    assert manifest["config"]["size"] == len(config_blob)
    layer_digests = ["sha256:" + hashlib.sha256(path.read_bytes()).hexdigest() for path in layers]
    assert [layer["digest"] for layer in manifest["layers"]] == layer_digests
    assert [layer["size"] for layer in manifest["layers"]] == [p.stat().st_size for p in layers]
    assert {layer["mediaType"] for layer in manifest["layers"]} == {oci_archive.MEDIA_LAYER}
    config = _json(config_blob)
    assert config["rootfs"] == {"type": "layers", "diff_ids": layer_digests}
    assert len(config["history"]) == len(layers)
    assert config["config"] == {
        "Entrypoint": ["cdcflow"],
        "Cmd": ["--help"],
        "Env": ["PATH=/usr/bin", "HOME=/home/cdcflow"],
        "User": "1000",
        "WorkingDir": "/",
        "Labels": {"io.cdcflow.source-digest": "abc"},
    }


def test_the_same_inputs_give_the_same_archive(tmp_path: Path) -> None:
    layers = _layers(tmp_path)
    first = oci_archive.write_oci_archive(
        name=NAME, layers=layers, config=CONFIG, out=tmp_path / "a.tar"
    )
    second = oci_archive.write_oci_archive(
        name=NAME, layers=layers, config=CONFIG, out=tmp_path / "b.tar"
    )
    assert first.digest == second.digest
    assert (tmp_path / "a.tar").read_bytes() == (tmp_path / "b.tar").read_bytes()
    other = dataclasses.replace(CONFIG, user="185")
    third = oci_archive.write_oci_archive(
        name=NAME, layers=layers, config=other, out=tmp_path / "c.tar"
    )
    assert third.digest != first.digest


def test_a_layer_used_twice_is_stored_once(tmp_path: Path) -> None:
    layer = _layers(tmp_path)[0]
    out = tmp_path / "image.tar"
    oci_archive.write_oci_archive(name=NAME, layers=[layer, layer], config=CONFIG, out=out)
    members = _members(out)
    assert len([name for name in members if name.startswith("blobs/")]) == 3


def test_layer_tar_is_ordered_relative_and_stamped(tmp_path: Path) -> None:
    root = _tree(tmp_path / "root", {"b/two": "2", "a/one": "1", "a/z/deep": "3"})
    (root / "a" / "link").symlink_to("one")
    (root / "a" / "hard").hardlink_to(root / "a" / "one")
    layer = oci_archive.write_layer(root, tmp_path / "layer.tar", mtime=7)
    assert layer.digest == "sha256:" + hashlib.sha256(layer.path.read_bytes()).hexdigest()
    assert layer.size == layer.path.stat().st_size
    with tarfile.open(layer.path) as tar:
        members = tar.getmembers()
    names = [member.name for member in members]
    assert names == ["a", "b", "a/hard", "a/link", "a/one", "a/z", "a/z/deep", "b/two"]
    assert {member.mtime for member in members} == {7}
    assert {(member.uname, member.gname) for member in members} == {("", "")}
    by_name = {member.name: member for member in members}
    assert by_name["a/link"].issym() and by_name["a/link"].linkname == "one"
    assert by_name["a/one"].islnk() and by_name["a/one"].linkname == "a/hard"


def test_layer_digest_is_read_from_its_record(tmp_path: Path) -> None:
    layer = oci_archive.write_layer(_tree(tmp_path / "root", {"f": "x"}), tmp_path / "l.tar")
    assert oci_archive.layer_file(layer.path) == layer
    (tmp_path / "l.tar.json").unlink()
    assert oci_archive.layer_file(layer.path) == layer  # hashed when the record is gone


def test_source_digest_follows_the_packaged_sources_only(tmp_path: Path) -> None:
    files = {
        "pyproject.toml": "[project]\n",
        "README.md": "hi\n",
        "capture/engine.py": "x = 1\n",
        "operator/cli/main.py": "y = 2\n",
        "sparkapps/sink.py": "z = 3\n",
        "tests/test_x.py": "",
    }
    source = _tree(tmp_path / "src", files)
    before = image_layers.source_digest(source)
    _tree(source, {"tests/test_x.py": "changed", "capture/__pycache__/engine.cpython-311.pyc": ""})
    _tree(source, {"capture/stale.pyc": "", "cdcflow.egg-info/PKG-INFO": ""})
    assert image_layers.source_digest(source) == before
    _tree(source, {"capture/engine.py": "x = 2\n"})
    changed = image_layers.source_digest(source)
    assert changed != before
    (source / "sparkapps" / "new.py").write_text("")
    assert image_layers.source_digest(source) != changed


def test_dependency_key_follows_pyproject_and_extras(tmp_path: Path) -> None:
    source = _tree(tmp_path / "src", {"pyproject.toml": "[project]\nname = 'a'\n"})
    key = image_layers.deps_key(source, ("capture", "operator"))
    assert image_layers.deps_key(source, ("operator", "capture")) == key
    assert image_layers.deps_key(source, ("spark",)) != key
    _tree(source, {"pyproject.toml": "[project]\nname = 'b'\n"})
    assert image_layers.deps_key(source, ("capture", "operator")) != key


def test_rootfs_key_follows_the_recipe() -> None:
    base = image_layers.BASE_ROOTFS
    key = image_layers.rootfs_key(base)
    assert image_layers.rootfs_key(dataclasses.replace(base)) == key
    more = dataclasses.replace(base, packages=(*base.packages, "procps"))
    assert image_layers.rootfs_key(more) != key
    assert image_layers.rootfs_key(dataclasses.replace(base, suite="trixie")) != key
    assert image_layers.rootfs_key(image_layers.JAVA_ROOTFS) != key


def test_launcher_runs_the_console_script_with_debians_python() -> None:
    script = image_layers.launcher("cdcflow.operator.cli.main:main")
    assert script.startswith("#!/usr/bin/python3\n")
    assert "from cdcflow.operator.cli.main import main\n" in script
    compile(script, "cdcflow", "exec")


def test_thin_archive_leaves_out_present_blobs(tmp_path: Path) -> None:
    out = tmp_path / "image.tar"
    layers = _layers(tmp_path)
    oci_archive.write_oci_archive(name=NAME, layers=layers, config=CONFIG, out=out)
    dropped = oci_archive.layer_file(layers[0]).digest
    oci_archive.thin_archive(out, tmp_path / "thin.tar", present={dropped, "sha256:" + "0" * 64})
    full, thin = _members(out), _members(tmp_path / "thin.tar")
    assert set(full) - set(thin) == {"blobs/sha256/" + dropped.removeprefix("sha256:")}
    assert all(thin[name] == full[name] for name in thin)


def test_slim_keeps_copyright_notices_and_blanks_machine_names(tmp_path: Path) -> None:
    root = _tree(
        tmp_path / "root",
        {
            "var/lib/apt/lists/deb.debian.org_Packages": "x",
            "var/lib/apt/lists/partial/.keep": "",
            "var/cache/apt/pkgcache.bin": "x",
            "var/cache/apt/archives/python3.deb": "x",
            "var/log/apt/term.log": "x",
            "usr/share/doc/python3/copyright": "GPL",
            "usr/share/doc/python3/changelog.gz": "x",
            "usr/share/man/man1/python3.1.gz": "x",
            "usr/share/locale/de/LC_MESSAGES/apt.mo": "x",
            "usr/share/locale/locale.alias": "x",
            "etc/hostname": "buildhost\n",
            "etc/resolv.conf": "nameserver 10.0.0.1\n",
            "dev/null": "",
            "usr/bin/python3": "elf",
        },
    )
    image_layers.slim(root)
    left = sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if not p.is_dir())
    assert left == [
        "etc/hostname",
        "etc/resolv.conf",
        "usr/bin/python3",
        "usr/share/doc/python3/copyright",
        "usr/share/locale/locale.alias",
        "var/lib/apt/lists/partial/.keep",
    ]
    assert (root / "etc/hostname").read_text() == ""
    assert (root / "var/log/apt").is_dir()


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_spark_entrypoint_is_valid_bash() -> None:
    result = subprocess.run(
        ["bash", "-n"], input=image_layers.ENTRYPOINT, text=True, capture_output=True, check=False
    )
    assert result.returncode == 0, result.stderr
