#!/usr/bin/env bash
# The dashboard tests drive Debian's Chromium through playwright-core (no browser download).
# Installs it with apt when it is missing and we may; otherwise says what to do.
if [ -x "${CHROMIUM_PATH:-/usr/bin/chromium}" ]; then exit 0; fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing Debian's chromium for the browser tests…"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null && exit 0
fi
echo "warning: no Chromium at ${CHROMIUM_PATH:-/usr/bin/chromium}; the dashboard tests will fail (apt-get install chromium, or set CHROMIUM_PATH)" >&2
