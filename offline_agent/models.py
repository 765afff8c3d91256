"""Turns a model name or a .gguf path into a verified local file, with no network at run time.

The registry (models/models.toml) says which PyPI packages hold each model and the sha256 of the whole GGUF.
Models split into part packages are joined once into `home_dir()/models/` and checked before they replace
anything; a sidecar `<file>.verified.json` records the size and mtime of the file that passed, so later runs
trust it without re-reading a gigabyte, and a truncated or edited file no longer matches and is rebuilt.
Single-file models are used where pip put them. Digests of local files are cached in
`home_dir()/sha256-cache.json`, keyed by absolute path, size and mtime_ns.

Limits: package files are found through importlib.metadata in the running interpreter's environment only;
`install_model` is the one function that reaches a network (pip, against the package index).
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import platformdirs

from offline_agent import incoming, jsonio
from offline_agent.errors import ConfigError, ModelError
from offline_agent.resources import data_path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no advisory locks, assembly is then unguarded
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "ModelPart",
    "ModelSpec",
    "Progress",
    "ResolvedModel",
    "default_model_name",
    "home_dir",
    "install_model",
    "load_registry",
    "model_status",
    "resolve_model",
    "verify_model",
]

ROLES = ("default", "middle", "test", "base")
GGUF_MAGIC = b"GGUF"
_CHUNK = 4 * 1024 * 1024
_SHA256 = re.compile(r"[0-9a-f]{64}")

#: Called as progress(label, bytes_done, bytes_total) while a file is assembled or hashed.
Progress = Callable[[str, int, int], None]


@dataclass(frozen=True)
class ModelPart:
    """One file inside one installed distribution, as its RECORD names it."""

    package: str
    path: str


@dataclass(frozen=True)
class ModelSpec:
    """One registry entry: where the GGUF comes from, how to check it, and how to run it."""

    name: str
    description: str
    role: str
    requirements: tuple[str, ...]
    pip_flags: tuple[str, ...]
    parts: tuple[ModelPart, ...]
    single_file: bool
    file_name: str
    size: int
    sha256: str
    quantization: str
    chat_format: str
    n_ctx: int
    n_ctx_train: int
    license: str
    origin: str
    note: str

    @property
    def install_command(self) -> str:
        return f"offline-agent models install {self.name}"

    def requirement_for(self, package: str) -> str:
        """The requirement string that installs `package`, or the bare name if the registry lacks one."""
        wanted = _normalize(package)
        return next((r for r in self.requirements if _normalize(_requirement_name(r)) == wanted), package)


@dataclass(frozen=True)
class ResolvedModel:
    """A GGUF file on disk whose sha256 has been checked (registry models) or computed (local files)."""

    name: str
    path: Path
    sha256: str
    spec: ModelSpec | None


# ---------------------------------------------------------------- registry


def load_registry(path: Path | None = None) -> dict[str, ModelSpec]:
    """Read the model registry; a malformed one raises ConfigError naming the entry and field."""
    return _read_registry(path)[1]


def default_model_name(registry: Path | None = None) -> str:
    """The model to use when none is named: $OFFLINE_AGENT_MODEL, else the registry's `default`."""
    return os.environ.get("OFFLINE_AGENT_MODEL") or _read_registry(registry)[0]


def _read_registry(path: Path | None) -> tuple[str, dict[str, ModelSpec]]:
    path = path or data_path("models/models.toml")
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"model registry not found: {path}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    entries = raw.get("models")
    if not isinstance(entries, dict) or not entries:
        raise ConfigError(f"{path}: no [models.<name>] tables")
    specs = {}
    for name, entry in entries.items():
        if not isinstance(entry, dict):
            raise ConfigError(f"{path}: model {name!r} must be a table")
        specs[name] = _parse_spec(name, entry, f"{path}: model {name!r}")
    default = raw.get("default")
    if default not in specs:
        raise ConfigError(f"{path}: `default` is {default!r}; choose from {sorted(specs)}")
    return default, specs


def _parse_spec(name: str, entry: dict[str, Any], where: str) -> ModelSpec:
    def get(key: str, kind: type, default: Any = None) -> Any:
        value = entry.get(key, default)
        if value is None:
            raise ConfigError(f"{where}: field {key!r} is missing")
        # bool is an int subclass; a size of `true` is a typo, not a number
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise ConfigError(f"{where}: field {key!r} must be {kind.__name__}, got {value!r}")
        return value

    def strings(key: str, default: Any = None) -> tuple[str, ...]:
        value = get(key, list, default)
        if not all(isinstance(item, str) and item for item in value):
            raise ConfigError(f"{where}: field {key!r} must be a list of strings")
        return tuple(value)

    def part(value: Any, key: str) -> ModelPart:
        ok = isinstance(value, dict) and set(value) == {"package", "path"}
        ok = ok and all(isinstance(v, str) and v for v in value.values())
        if not ok or value["path"].startswith("/") or ".." in value["path"].split("/"):
            raise ConfigError(f"{where}: field {key!r} needs {{package = ..., path = <relative path>}} items")
        return ModelPart(value["package"], value["path"])

    known = {f for f in ModelSpec.__dataclass_fields__ if f not in ("name", "parts", "single_file")}
    unknown = set(entry) - known - {"parts", "file"}
    if unknown:
        known_all = sorted(known | {"parts", "file"})
        raise ConfigError(f"{where}: unknown field {sorted(unknown)[0]!r}; known: {known_all}")
    if ("parts" in entry) == ("file" in entry):
        raise ConfigError(f"{where}: field 'parts' or 'file' is needed, exactly one of them")
    if "file" in entry:
        parts = (part(entry["file"], "file"),)
    else:
        parts = tuple(part(p, "parts") for p in get("parts", list))
        if not parts:
            raise ConfigError(f"{where}: field 'parts' is empty")

    role = get("role", str)
    if role not in ROLES:
        raise ConfigError(f"{where}: field 'role' is {role!r}; choose from {list(ROLES)}")
    sha256 = get("sha256", str)
    if not _SHA256.fullmatch(sha256):
        raise ConfigError(f"{where}: field 'sha256' must be 64 lowercase hex digits")
    file_name = get("file_name", str)
    if Path(file_name).name != file_name or file_name in ("", ".", ".."):
        raise ConfigError(f"{where}: field 'file_name' must be a plain file name, got {file_name!r}")
    numbers = {key: get(key, int) for key in ("size", "n_ctx", "n_ctx_train")}
    for key, value in numbers.items():
        if value <= 0:
            raise ConfigError(f"{where}: field {key!r} must be positive, got {value}")
    requirements = strings("requirements")
    listed = {_normalize(_requirement_name(r)) for r in requirements}
    for p in parts:
        if _normalize(p.package) not in listed:
            raise ConfigError(f"{where}: field 'requirements' lacks package {p.package!r} named in its parts")

    return ModelSpec(
        name=name,
        description=get("description", str),
        role=role,
        requirements=requirements,
        pip_flags=strings("pip_flags", []),
        parts=parts,
        single_file="file" in entry,
        file_name=file_name,
        size=numbers["size"],
        sha256=sha256,
        quantization=get("quantization", str),
        chat_format=get("chat_format", str),
        n_ctx=numbers["n_ctx"],
        n_ctx_train=numbers["n_ctx_train"],
        license=get("license", str),
        origin=get("origin", str),
        note=get("note", str, ""),
    )


def _requirement_name(requirement: str) -> str:
    match = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", requirement.strip())
    return match.group(0) if match else requirement


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


# ---------------------------------------------------------------- public operations


def home_dir() -> Path:
    """Where models are assembled and digests cached: $OFFLINE_AGENT_HOME, else the user cache folder."""
    env = os.environ.get("OFFLINE_AGENT_HOME")
    return Path(env).expanduser() if env else Path(platformdirs.user_cache_dir("offline-agent"))


def resolve_model(
    name_or_path: str | None = None, *, registry: Path | None = None, progress: Progress | None = None
) -> ResolvedModel:
    """Return a checked local GGUF for a registry name or a path; None means the default model.

    A registry name wins over a file of the same name. A local file whose digest equals a registry entry's
    gets that entry's spec (chat format, context size). `registry` overrides the shipped models.toml.
    """
    specs = load_registry(registry)
    name = name_or_path or default_model_name(registry)
    if name in specs:
        return _resolve_spec(specs[name], progress)
    if _looks_like_path(name):
        path = _check_gguf(Path(name).expanduser())
        digest = _cached_digest(path, progress)
        return _local_model(path, digest, specs)
    raise _unknown_model(name, specs)


def _unknown_model(name: str, specs: dict[str, ModelSpec]) -> ConfigError:
    return ConfigError(f"unknown model {name!r}; choose from {sorted(specs)}, or give the path of a .gguf file")


def verify_model(name_or_path: str, *, registry: Path | None = None, progress: Progress | None = None) -> ResolvedModel:
    """Re-hash a model fully, ignoring every cache; raise ModelError on a mismatch, refresh the caches.

    A path passes only when its sha256 is a registry model's; a file named or sized like a registry model but
    with another digest (a truncated copy) is a mismatch, and any other file cannot be verified (ModelError).
    """
    specs = load_registry(registry)
    spec = specs.get(name_or_path)
    if spec is None:
        if not _looks_like_path(name_or_path):
            raise _unknown_model(name_or_path, specs)
        path = _check_gguf(Path(name_or_path).expanduser())
        digest = _hash_file(path, progress, f"verifying {path.name}")
        _store_digest(path, digest)
        resolved = _local_model(path, digest, specs)
        if resolved.spec is None:
            raise _unverified(path, digest, specs)
        return resolved
    if spec.single_file:
        path = _part_paths(spec)[0]
        digest = _hash_file(path, progress, f"verifying {spec.name}")
        _store_digest(path, digest)
        _check_digest(spec, path, digest)
        return ResolvedModel(spec.name, path, digest, spec)
    target = _target(spec)
    if not target.exists():
        return _resolve_spec(spec, progress)  # assembling hashes every byte anyway
    with _locked(target):
        digest = _hash_file(target, progress, f"verifying {spec.name}")
        if digest != spec.sha256:
            _sidecar(target).unlink(missing_ok=True)  # so the next resolve rebuilds it
            raise ModelError(
                f"{target} has sha256 {digest}, expected {spec.sha256}; "
                f"rebuild it with: offline-agent models path {spec.name}"
            )
        _write_sidecar(target, spec)
    return ResolvedModel(spec.name, target, digest, spec)


def _unverified(path: Path, digest: str, specs: dict[str, ModelSpec]) -> ModelError:
    """The error for a local file whose sha256 is no registry model's: a damaged copy of the model it is named
    or sized like, or a file the registry cannot vouch for at all (never "ok")."""
    size = path.stat().st_size
    spec = next((s for s in specs.values() if s.file_name == path.name), None) or next(
        (s for s in specs.values() if s.size == size), None
    )
    if spec is None:
        return ModelError(
            f"cannot verify {path}: no registry model has its file name, size or sha256 (its sha256 is {digest})"
        )
    return ModelError(
        f"{path} is not a good copy of {spec.name!r}: {size} bytes with sha256 {digest}, expected {spec.size} bytes "
        f"with sha256 {spec.sha256}; use `offline-agent models path {spec.name}` for the checked file"
    )


def install_model(
    name: str,
    *,
    quiet: bool = False,
    force: bool = False,
    registry: Path | None = None,
    progress: Progress | None = None,
) -> ResolvedModel:
    """pip-install the packages that hold a registry model, then assemble and verify it.

    pip's output goes to stderr unless `quiet`; `force` adds --force-reinstall (for damaged packages).
    """
    specs = load_registry(registry)
    if name not in specs:
        raise ConfigError(f"unknown model {name!r}; choose from {sorted(specs)}")
    spec = specs[name]
    command = [sys.executable, "-m", "pip", "install", *(["-q"] if quiet else [])]
    command += [*(["--force-reinstall"] if force else []), *spec.pip_flags, *spec.requirements]
    last, last_error = "", ""
    try:
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    except OSError as exc:
        raise ModelError(f"cannot run pip ({exc.strerror}); run it yourself: {shlex.join(command)}") from None
    assert proc.stdout is not None
    with proc:
        for line in proc.stdout:
            # pip may end with "[notice] a new pip is available" after the line that explains the failure
            if line.strip() and not line.startswith("[notice]"):
                last = line.strip()
            if line.startswith("ERROR:"):
                last_error = line.strip()
            if not quiet:
                sys.stderr.write(line)
    if proc.returncode != 0:
        reason = last_error or last or f"exit code {proc.returncode}"
        raise ModelError(f"pip install for {name!r} failed: {reason}")
    # importlib.metadata caches directory listings; the new distributions must be seen now
    importlib.invalidate_caches()
    return _resolve_spec(spec, progress)


def model_status(name: str, *, registry: Path | None = None) -> str:
    """Return "ready" (usable now), "installed" (packages present, not assembled) or "not installed"."""
    specs = load_registry(registry)
    if name not in specs:
        raise ConfigError(f"unknown model {name!r}; choose from {sorted(specs)}")
    spec = specs[name]
    if not spec.single_file and _is_verified(_target(spec), spec):
        return "ready"
    located = [_locate_part(p.package, p.path) for p in spec.parts]
    if all(path is not None and path.is_file() for path in located):
        return "ready" if spec.single_file else "installed"
    return "not installed"


# ---------------------------------------------------------------- registry models


def _locate_part(distribution: str, relpath: str) -> Path | None:
    """The installed file `relpath` of `distribution`, or None if that distribution is not installed.

    The one place that touches installed packages, so tests can point it at a plain folder.
    """
    try:
        dist = metadata.distribution(distribution)
    except metadata.PackageNotFoundError:
        return None
    return Path(str(dist.locate_file(relpath)))


def _part_paths(spec: ModelSpec) -> list[Path]:
    paths = []
    for part in spec.parts:
        path = _locate_part(part.package, part.path)
        if path is None:
            raise ModelError(
                f"model {spec.name!r} is not installed (package {part.package} not found); run: {spec.install_command}"
            )
        if not path.is_file():
            raise ModelError(
                f"model {spec.name!r}: {part.path} is missing from package {part.package}; reinstall it: "
                f"{sys.executable} -m pip install --force-reinstall "
                f"{shlex.join([*spec.pip_flags, spec.requirement_for(part.package)])}"
            )
        paths.append(path)
    total = sum(path.stat().st_size for path in paths)
    if total != spec.size:
        raise ModelError(
            f"model {spec.name!r}: installed files add up to {total} bytes, expected {spec.size}; "
            f"reinstall them: {spec.install_command} --force"
        )
    return paths


def _resolve_spec(spec: ModelSpec, progress: Progress | None) -> ResolvedModel:
    if spec.single_file:
        path = _part_paths(spec)[0]
        digest = _cached_digest(path, progress)
        _check_digest(spec, path, digest)
        return ResolvedModel(spec.name, path, digest, spec)
    target = _target(spec)
    if not _is_verified(target, spec):
        parts = _part_paths(spec)  # before locking: an uninstalled model should fail fast
        try:
            with _locked(target):
                # another process may have assembled it while this one waited for the lock
                if not _is_verified(target, spec):
                    _assemble(spec, parts, target, progress)
        except OSError as exc:
            raise ModelError(
                f"cannot assemble {spec.name!r} in {target.parent}: {exc.strerror or exc}; "
                "free some space or set OFFLINE_AGENT_HOME to another folder"
            ) from None
    return ResolvedModel(spec.name, target, spec.sha256, spec)


def _target(spec: ModelSpec) -> Path:
    return home_dir() / "models" / spec.file_name


def _sidecar(target: Path) -> Path:
    return target.with_name(target.name + ".verified.json")


def _is_verified(target: Path, spec: ModelSpec) -> bool:
    try:
        stat = target.stat()
        record = jsonio.loads(_sidecar(target).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return (
        isinstance(record, dict)
        and record.get("sha256") == spec.sha256
        and record.get("size") == stat.st_size == spec.size
        and record.get("mtime_ns") == stat.st_mtime_ns
    )


def _write_sidecar(target: Path, spec: ModelSpec) -> None:
    stat = target.stat()
    record = {
        "name": spec.name,
        "sha256": spec.sha256,
        "size": stat.st_size,
        "mtime_ns": stat.st_mtime_ns,
        "verified_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    _write_atomic(_sidecar(target), json.dumps(record, indent=2) + "\n")


def _assemble(spec: ModelSpec, parts: list[Path], target: Path, progress: Progress | None) -> None:
    folder = target.parent
    for stale in folder.glob(f".{target.name}.*.tmp"):  # left by a killed run; we hold the lock
        stale.unlink(missing_ok=True)
    free = shutil.disk_usage(folder).free
    if free < spec.size:
        raise ModelError(
            f"assembling {spec.name!r} needs {spec.size // 10**6} MB free in {folder}, "
            f"only {free // 10**6} MB left; free some space or set OFFLINE_AGENT_HOME to another folder"
        )
    _sidecar(target).unlink(missing_ok=True)
    fd, tmp_name = tempfile.mkstemp(dir=folder, prefix=f".{target.name}.", suffix=".tmp")
    tmp = Path(tmp_name)
    try:
        digest, done = hashlib.sha256(), 0
        with os.fdopen(fd, "wb") as out:
            for part in parts:
                with part.open("rb") as src:
                    while chunk := src.read(_CHUNK):
                        out.write(chunk)
                        digest.update(chunk)
                        done += len(chunk)
                        if progress:
                            progress(f"assembling {spec.name}", done, spec.size)
            out.flush()
            os.fsync(out.fileno())
        if digest.hexdigest() != spec.sha256:
            raise ModelError(
                f"assembled {spec.name!r} has sha256 {digest.hexdigest()}, expected {spec.sha256}; "
                f"its packages are damaged or not the registered versions: {spec.install_command} --force"
            )
        # mkstemp makes files private (0600); a model file is not secret, and a shared cache needs it readable
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
        _fsync_dir(folder)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _write_sidecar(target, spec)


def _check_digest(spec: ModelSpec, path: Path, digest: str) -> None:
    if digest != spec.sha256:
        raise ModelError(
            f"{path} has sha256 {digest}, expected {spec.sha256} for {spec.name!r}; "
            f"reinstall it: {spec.install_command} --force"
        )


# ---------------------------------------------------------------- local files and digests


def _looks_like_path(name: str) -> bool:
    separators = [os.sep] + ([os.altsep] if os.altsep else [])
    return name.lower().endswith(".gguf") or any(s in name for s in separators) or Path(name).is_file()


def _check_gguf(path: Path) -> Path:
    if not path.exists():
        raise ModelError(f"model file not found: {path}")
    what = incoming.not_a_file(path)
    if what is not None:  # /dev/zero was called a folder; a FIFO would wait for a writer
        raise ModelError(f"not a GGUF file (it is {what}): {path}")
    try:
        with path.open("rb") as fh:
            magic = fh.read(4)
    except OSError as exc:
        raise ModelError(f"cannot read model file {path}: {exc.strerror or exc}") from None
    if magic != GGUF_MAGIC:
        raise ModelError(f"not a GGUF file (it does not start with the bytes 'GGUF'): {path}")
    return path.resolve()


def _local_model(path: Path, digest: str, specs: dict[str, ModelSpec]) -> ResolvedModel:
    spec = next((s for s in specs.values() if s.sha256 == digest), None)
    return ResolvedModel(spec.name if spec else path.name, path, digest, spec)


def _hash_file(path: Path, progress: Progress | None, label: str) -> str:
    digest, done, total = hashlib.sha256(), 0, path.stat().st_size
    with path.open("rb") as fh:
        while chunk := fh.read(_CHUNK):
            digest.update(chunk)
            done += len(chunk)
            if progress:
                progress(label, done, total)
    return digest.hexdigest()


def _digest_cache() -> Path:
    return home_dir() / "sha256-cache.json"


def _cached_digest(path: Path, progress: Progress | None) -> str:
    path = path.resolve()
    stat = path.stat()
    try:
        entry = jsonio.loads(_digest_cache().read_text(encoding="utf-8")).get(str(path))
    except (OSError, ValueError, AttributeError):
        entry = None
    if isinstance(entry, dict) and (entry.get("size"), entry.get("mtime_ns")) == (
        stat.st_size,
        stat.st_mtime_ns,
    ):
        return str(entry["sha256"])
    digest = _hash_file(path, progress, f"hashing {path.name}")
    after = path.stat()
    # a file that changed while it was read must not be cached under either version's key
    if (after.st_size, after.st_mtime_ns) == (stat.st_size, stat.st_mtime_ns):
        _store_digest(path, digest, stat)
    return digest


def _store_digest(path: Path, digest: str, stat: os.stat_result | None = None) -> None:
    path = path.resolve()
    stat = stat or path.stat()
    cache_file = _digest_cache()
    try:
        with _locked(cache_file):
            try:
                cache = jsonio.loads(cache_file.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                cache = {}
            if not isinstance(cache, dict):
                cache = {}
            cache = {key: value for key, value in cache.items() if Path(key).exists()}
            cache[str(path)] = {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "sha256": digest}
            _write_atomic(cache_file, json.dumps(cache, indent=1, sort_keys=True) + "\n")
    except OSError:
        pass  # an unwritable cache only costs a re-hash next time


# ---------------------------------------------------------------- files


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Hold an exclusive advisory lock on `<path>.lock` (no-op where fcntl is missing)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if fcntl is None:  # pragma: no cover
        yield
        return
    with path.with_name(path.name + ".lock").open("a") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def _write_atomic(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _fsync_dir(folder: Path) -> None:
    """Make a rename durable; directories cannot be opened this way on Windows, where it is skipped."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:  # pragma: no cover
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover
        pass
    finally:
        os.close(fd)
