"""The ladder's command (declared in the package): each part's rungs in two new processes, one
a process start, which the shared one-process command (``registry.run``) cannot do."""

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from gpulesson.experiments import cli
from gpulesson.experiments.ladder import COMMAND, RECORDS, STARTS, rungs_of
from gpulesson.experiments.ladder.page import describe
from gpulesson.records.results import new_run_id

CACHE_ROOT = Path("_build") / "ladder-cache"  # git ignores _build


def main(argv=None) -> int:
    parser, args = COMMAND.parse(argv)
    if args.part == "nightly" and args.nightly is None and args.start is None:
        parser.error("--part nightly needs --nightly DIR, the folder of the keras-nightly wheel")
    if wrong := set(args.rungs or ()) - set(rungs_of(args.part)):
        parser.error(f"not rungs of part {args.part}: {', '.join(sorted(wrong))}; its rungs: "
                     + ", ".join(rungs_of(args.part)))
    if args.start is not None:
        from gpulesson.experiments.ladder.measure import one_start

        return one_start(args)
    run_id = args.run_id or new_run_id()
    env = {**os.environ}
    if args.part == "nightly":  # the wheels installed into a new folder, first on the path
        wheels = sorted(args.nightly.glob("*.whl"))
        if not wheels:
            raise SystemExit(f"no wheel in {args.nightly}: download it first where there is "
                             "internet, as recording.md shows for requirements/node.txt, with -r "
                             f"requirements/node-nightly.txt -d {args.nightly}")
        target = tempfile.mkdtemp(prefix="site-nightly-")
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps",
                        "--target", target, *map(str, wheels)], check=True)
        env["PYTHONPATH"] = os.pathsep.join([target, *filter(None, [env.get("PYTHONPATH")])])
    cache = CACHE_ROOT / f"{run_id}-{args.part}"  # a folder per rung in it
    shutil.rmtree(cache, ignore_errors=True)  # start 1 finds each rung's empty
    failed = 0
    for start in range(1, STARTS + 1):
        command = [sys.executable, "-m", COMMAND.module, "--part", args.part,
                   "--start", str(start), "--run-id", run_id, "--out", str(args.out),
                   "--seed", str(args.seed), "--cache", str(cache),
                   *(["--devices", *args.devices] if args.devices else []),
                   *(["--rungs", *args.rungs] if args.rungs else [])]
        failed += subprocess.run(command, env=env, check=False).returncode != 0
    made = [r for r in RECORDS.read(args.out, run_id=run_id) if r.get("part") == args.part]
    return cli.say_measured(made, args.out, RECORDS.experiment, run_id, describe) or int(failed > 0)


if __name__ == "__main__":
    raise SystemExit(main())
