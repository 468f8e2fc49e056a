#!/bin/sh
# Make sure the Slurm and Open OnDemand tests (tests/test_slurm_jobs.py, tests/test_ood_app.py)
# have a one-node Slurm to start and Ruby to render the app's ERB templates.
# Installs Debian's slurmctld, slurmd, slurm-client, munge and ruby when one is missing and this
# is possible here (root, apt-get), as on the CI machines; otherwise says how to enable the tests
# and exits 0 (they skip without them). The tests start and stop the daemons themselves.
set -u

missing=""
for pair in slurmctld:slurmctld slurmd:slurmd sbatch:slurm-client munged:munge ruby:ruby erb:ruby; do
    program=${pair%%:*}
    package=${pair#*:}
    if ! command -v "$program" >/dev/null 2>&1 && ! [ -x "/usr/sbin/$program" ]; then
        case " $missing " in *" $package "*) ;; *) missing="$missing $package" ;; esac
    fi
done
[ -z "$missing" ] && exit 0

if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "Installing Slurm, munge and Ruby for the cluster tests (apt-get install$missing) ..."
    # The tests start their own daemons with their own configuration and ports; they never
    # use services the packages may have started.
    # shellcheck disable=SC2086
    if DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null &&
       DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
           $missing >/dev/null; then
        exit 0
    fi
    echo "Could not install$missing with apt-get; the Slurm and OOD tests will be skipped." >&2
    exit 0
fi

echo "Missing$missing: the Slurm and Open OnDemand tests will be skipped. To run them, install" \
     "the Debian packages as root (sudo apt-get install slurmctld slurmd slurm-client munge ruby)" \
     "and run the tests as root (they start a one-node Slurm on this machine)." >&2
exit 0
