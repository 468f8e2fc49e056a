"""Stand-ins for a cluster's ``module`` and ``conda``, to see which environment a job activates.

:func:`fake_cluster` makes, under a folder, a ``module`` and a ``conda`` command (``conda shell.bash
hook`` defines the shell function ``conda``, as the real one does) and one conda environment,
``envs/gpulesson``; :func:`fake_environment` makes the ``bin/`` of an environment (a conda one, or
a lesson folder's ``.venv``) whose ``python`` and ``jupyter`` only write down that they ran. Every
call goes to the log, one line each: ``module load X``, ``conda activate X``, ``<path of the
python or jupyter that ran> <its arguments>``.
"""

import os
from pathlib import Path

HOOK = r"""conda() {
    echo "conda $*" >> "$FAKE_LOG"
    if [ "$1" = activate ]; then
        case "$2" in
            /*) PATH="$2/bin:$PATH" ;;
            *) PATH="$FAKE_ENVS/$2/bin:$PATH" ;;
        esac
        export PATH
    fi
}
"""


def _script(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/bash\n" + text)
    path.chmod(0o755)
    return path


def fake_environment(prefix: Path, *, venv: bool = False) -> Path:
    """``prefix/bin`` with a ``python`` and a ``jupyter`` that log their calls (``jupyter
    kernelspec list`` also names the lesson's kernel), and for a ``venv`` its ``activate``."""
    for name in ("python", "jupyter"):
        _script(prefix / "bin" / name, 'echo "$0 $*" >> "$FAKE_LOG"\necho \'"gpulesson"\'\n')
    if venv:
        (prefix / "bin" / "activate").write_text(f'PATH="{prefix / "bin"}:$PATH"\n')
    return prefix


def fake_cluster(root: Path) -> dict[str, str]:
    """The environment variables of a shell on the fake cluster under ``root``: ``module`` and
    ``conda`` on the PATH, the named environment ``gpulesson``, and the log ``root/calls.log``."""
    tools = root / "tools"
    _script(tools / "module", 'echo "module $*" >> "$FAKE_LOG"\n')
    _script(tools / "conda", f"""if [ "$1 $2" = "shell.bash hook" ]; then
cat <<'EOF'
{HOOK}EOF
fi
""")
    fake_environment(root / "envs" / "gpulesson")
    return {"PATH": f"{tools}:/usr/bin:/bin", "HOME": str(root), "FAKE_LOG": str(root / "calls.log"),
            "FAKE_ENVS": str(root / "envs"), "LANG": os.environ.get("LANG", "C.UTF-8")}


def calls(env: dict[str, str]) -> list[str]:
    """The logged calls, in order."""
    log = Path(env["FAKE_LOG"])
    return log.read_text().splitlines() if log.exists() else []
