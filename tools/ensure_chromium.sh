#!/bin/sh
# Make sure the browser tests (tests/test_browser.py) have a Chromium to drive.
# Installs Debian's chromium when it is missing and this is possible here (root, apt-get), as on
# the CI machines; otherwise says how to enable the tests and exits 0 (they skip without it).
# The Playwright package itself comes with requirements/dev.txt; it never downloads a browser.
set -u

for candidate in "${LESSON_CHROMIUM:-}" /usr/bin/chromium /usr/bin/chromium-browser; do
    if [ -n "$candidate" ] && [ -x "$candidate" ]; then
        exit 0
    fi
done
if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then
    exit 0
fi

if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "Installing Chromium for the browser tests (apt-get install chromium) ..."
    if DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null &&
       DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null; then
        exit 0
    fi
    echo "Could not install chromium with apt-get; the browser tests will be skipped." >&2
    exit 0
fi

echo "No Chromium found: the browser tests will be skipped. To run them, install it" \
     "(sudo apt-get install chromium) or set LESSON_CHROMIUM=/path/to/chromium." >&2
exit 0
