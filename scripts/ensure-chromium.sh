#!/usr/bin/env bash
# Installs Debian's chromium when it is missing: the dashboard's browser test drives it
# headless through playwright-core (which never downloads a browser of its own).
set -euo pipefail
if [ -x /usr/bin/chromium ]; then
  exit 0
fi
echo "chromium not found at /usr/bin/chromium; installing Debian's chromium package"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
/usr/bin/chromium --version
