"""Build hook: compiles the optional C modules of offline_agent/retrieval into the wheel.

`_kernel.c` (BM25 search) and `_text.c` (sentence splitting, chunking, the spacing of a page's text) only make
things faster; nothing needs them (offline_agent/retrieval/kernel.py loads them; search falls back to numpy, the
text work to Python). So a failed compile, or a machine without a C compiler or Python's headers, prints a
warning and the install goes on. An editable install (`pip install -e .`, what scripts/install.sh does) puts
each compiled module beside its source, where the package is imported from; run the install again after
changing a C file (a module built from other source is ignored: see kernel.py).
"""

from __future__ import annotations

import hashlib
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

FOLDER = Path("offline_agent") / "retrieval"
MODULES = {"_kernel": "the search kernel", "_text": "the text kernel"}  # name: what a warning calls it


def compile_module(root: Path, name: str, out_dir: Path) -> Path | None:
    """Compile FOLDER/<name>.c into out_dir; its path, or None (with a warning) when it cannot be built."""
    src = root / FOLDER / f"{name}.c"
    what = MODULES[name]
    ext = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    out = out_dir / f"{name}{ext}"
    ldshared = sysconfig.get_config_var("LDSHARED")
    include = sysconfig.get_paths().get("include")
    if not ldshared or not include or not (Path(include) / "Python.h").exists() or sys.platform == "win32":
        print(f"offline-agent: no C compiler setup or Python headers; {what} is not built", file=sys.stderr)
        return None
    digest = hashlib.sha256(src.read_bytes()).hexdigest()
    cmd = [
        *shlex.split(ldshared),
        "-O3",
        # Every function starts on a 64-byte line: where the term-at-a-time loop starts within a line decided
        # 1.16-1.19x of its speed here (the same instructions at another offset), so an edit to some other
        # function would move it.
        "-falign-functions=64",
        "-pthread",
        "-fPIC",
        f"-I{include}",
        f'-DSOURCE_SHA256="{digest}"',
        str(src),
        "-o",
        str(out),
        "-lm",
    ]
    try:
        result = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.SubprocessError) as exc:
        print(f"offline-agent: could not compile {what} ({exc}); Python does its work", file=sys.stderr)
        return None
    if result.returncode != 0:
        print(
            f"offline-agent: compiling {what} failed; Python does its work:\n{result.stderr[-2000:]}",
            file=sys.stderr,
        )
        return None
    return out


class KernelBuildHook(BuildHookInterface):
    """Adds the compiled modules to the wheel, or beside their sources for an editable install."""

    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        for name, what in MODULES.items():
            try:
                self._add(name, version, build_data)
            except Exception as exc:  # noqa: BLE001 - the modules are optional: nothing here may fail an install
                print(f"offline-agent: {what} was not built ({exc!r}); Python does its work", file=sys.stderr)

    def _add(self, name: str, version: str, build_data: dict[str, Any]) -> None:
        root = Path(self.root)
        if version == "editable":
            compile_module(root, name, root / FOLDER)
            return
        if not getattr(self, "_tmp", None):
            self._tmp = tempfile.mkdtemp(prefix="offline-agent-kernel-")
        built = compile_module(root, name, Path(self._tmp))
        if built is not None:
            build_data["force_include"][str(built)] = f"offline_agent/retrieval/{built.name}"
            build_data["pure_python"] = False
            build_data["infer_tag"] = True

    def finalize(self, version: str, build_data: dict[str, Any], artifact_path: str) -> None:
        tmp = getattr(self, "_tmp", None)
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
