"""Where numba's cache of statectl's compiled kernels goes (`statefmt.jit`), also when neither
the installed package nor HOME can be written."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

from statectl.statefmt import jit

READ_ONLY = "/proc/statectl-read-only"  # not even root can create anything below /proc


def test_numba_finds_its_own_place_when_the_package_or_home_is_writable(tmp_path, monkeypatch):
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    assert jit.choose_cache_dir(str(tmp_path / "pkg"), f"{READ_ONLY}/home/.cache/numba", str(tmp_path)) == ""
    assert jit.choose_cache_dir(f"{READ_ONLY}/pkg", str(tmp_path / "home"), str(tmp_path)) == ""
    monkeypatch.setenv("NUMBA_CACHE_DIR", f"{READ_ONLY}/set-by-the-user")
    assert jit.choose_cache_dir(f"{READ_ONLY}/pkg", f"{READ_ONLY}/home", str(tmp_path)) == ""


def test_scratch_space_holds_the_cache_when_neither_can_be_written(tmp_path, monkeypatch):
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    chosen = jit.choose_cache_dir(f"{READ_ONLY}/pkg", f"{READ_ONLY}/home/.cache/numba", str(tmp_path))
    assert chosen == str(tmp_path / "statectl-numba-cache") and os.path.isdir(chosen)
    assert jit.choose_cache_dir(f"{READ_ONLY}/pkg", f"{READ_ONLY}/home", f"{READ_ONLY}/tmp") is None


def test_kernels_compile_and_cache_with_a_read_only_home(tmp_path):
    """A kernel module in a folder that cannot be written, HOME that cannot be written: the
    kernel runs and its machine code lands in statectl's scratch space."""
    script = tmp_path / "kernel_user.py"
    script.write_text(textwrap.dedent(f"""
        import numba
        from statectl.statefmt import jit

        @jit.njit("{READ_ONLY}/pkg/kernels.py")
        def add(a, b):
            return a + b

        print(add(2, 3), numba.config.CACHE_DIR)
    """))
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "XDG_CACHE_HOME")}
    env.update(HOME=f"{READ_ONLY}/home", TMPDIR=str(tmp_path), SPARK_LOCAL_DIRS="")
    done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    cache = tmp_path / "statectl-numba-cache"
    assert done.stdout.strip() == f"5 {cache}"
    assert any(name.endswith(".nbi") for _, _, names in os.walk(cache) for name in names)
