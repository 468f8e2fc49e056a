"""What a reader sees that the records make: every value the pages fill in (``{{ ref_* }}``,
``_ext/carpentry.placeholder_values``) and every figure redrawn from the records, kept in a
snapshot to compare after a change of the code that makes them.

    python tools/site_snapshot.py write            # before: _build/site-snapshot.json
    python tools/site_snapshot.py check            # after: the differences, exit 1 if any

A change that only rearranges code leaves both identical for the same records. The episodes'
own prose is not in it: ``make notebooks`` and the site build show that.
"""

import argparse
import hashlib
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = ROOT / "_build" / "site-snapshot.json"


def snapshot() -> dict:
    """The filled values and the figures' digests, the figures redrawn first."""
    subprocess.run([sys.executable, str(ROOT / "tools" / "reference.py"), "--figures"],
                   check=True, cwd=ROOT, capture_output=True)
    sys.path.insert(0, str(ROOT / "_ext"))
    from carpentry import placeholder_values

    figures = {str(p.relative_to(ROOT)): hashlib.sha256(p.read_bytes()).hexdigest()
               for p in sorted((ROOT / "fig").rglob("*.svg"))}
    return {"values": placeholder_values(ROOT), "figures": figures}


def differences(before: dict, after: dict) -> list[str]:
    said = []
    for part in ("values", "figures"):
        old, new = before[part], after[part]
        for key in sorted(set(old) | set(new)):
            if old.get(key) != new.get(key):
                said.append(f"{part} {key}: "
                            + ("missing now" if key not in new else "new" if key not in old
                               else "changed"))
    return said


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=("write", "check"))
    parser.add_argument("--file", type=Path, default=DEFAULT)
    args = parser.parse_args(argv)
    now = snapshot()
    if args.action == "write":
        args.file.parent.mkdir(parents=True, exist_ok=True)
        args.file.write_text(json.dumps(now, indent=1, sort_keys=True), encoding="utf-8")
        print(f"{len(now['values'])} values and {len(now['figures'])} figures in {args.file}")
        return 0
    if not args.file.is_file():
        raise SystemExit(f"no snapshot at {args.file}: write one first, before the change")
    found = differences(json.loads(args.file.read_text(encoding="utf-8")), now)
    print("\n".join(found) or "identical: every value and figure")
    return int(bool(found))


if __name__ == "__main__":
    raise SystemExit(main())
