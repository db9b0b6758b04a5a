#!/usr/bin/env bash
# Installs the Debian packages the test suite drives, only those missing (idempotent):
#   chromium        headless browser that checks the HTML report renders its figures
#   docker-compose  validates dashboards/docker-compose.yml (no Docker engine needed)
# BENCH_CHROMIUM may name another Chromium binary. Needs root (or sudo) and apt-get.
set -euo pipefail

declare -A package_of=([chromium]=chromium [docker-compose]=docker-compose)
missing=()
for command in chromium docker-compose; do
  if [ "$command" = chromium ] && [ -n "${BENCH_CHROMIUM:-}" ] && command -v "$BENCH_CHROMIUM" >/dev/null 2>&1; then
    continue
  fi
  command -v "$command" >/dev/null 2>&1 || missing+=("${package_of[$command]}")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if ! command -v apt-get >/dev/null 2>&1; then
  echo "error: missing ${missing[*]} and apt-get is not available; install them by hand" >&2
  exit 2
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null 2>&1 || { echo "error: installing ${missing[*]} needs root: apt-get install -y ${missing[*]}" >&2; exit 2; }
  SUDO="sudo"
fi
echo "installing Debian packages: ${missing[*]} ..."
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
for command in chromium docker-compose; do
  command -v "$command" >/dev/null 2>&1 || { echo "error: apt-get left $command missing" >&2; exit 2; }
done
