#!/usr/bin/env bash
# Print the full lock of an environment (pip freeze), without the lesson's own package.
# Usage: tools/lock.sh .venv/bin/python > requirements/constraints.txt
set -euo pipefail
python=${1:-.venv/bin/python}
echo "# Full lock of the environment built by 'make' on Linux (pip freeze), so that CI and instructors get"
echo "# exactly the tested transitive versions. Regenerate with 'make lock'."
"$python" -m pip freeze --exclude-editable | grep -v -i '^gpulesson' | grep -v -i '^tensorflow[-_]cpu=='
