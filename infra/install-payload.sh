#!/bin/bash
# Install the gpubench payload from its source tree into this image's python3.
# usage: install-payload.sh SRC MODE EXTRA [PACKAGE...]
#   MODE package:      pip builds and installs SRC[EXTRA] (needs Python >= 3.11, as pyproject.toml says);
#   MODE requirements: installs only the EXTRA's requirements from SRC/pyproject.toml and puts SRC on
#                      sys.path (a .pth file): for images whose Python cannot build the project
#                      (Python 3.8: pyproject.toml's setuptools>=77 needs Python 3.9).
# PACKAGE...: more requirements installed in the same pip call (a backend's CUDA build, or what
# the image lacks for its framework, e.g. tensorflow[and-cuda]).
# Used by cloud hosts (mounted into the container by run.sh), SSH hosts' docker runtime (with PIP_USER=1:
# the container runs as the SSH user) and payload/Dockerfile.legacy.
set -euo pipefail
src="$1"
mode="$2"
extra="$3"
shift 3
pip=(python3 -m pip install --no-cache-dir --quiet)
case "$mode" in
  package)
    "${pip[@]}" "${src}[${extra}]" "$@"
    ;;
  requirements)
    reqs="$(mktemp)"
    # The extra's list in [project.optional-dependencies]: one quoted requirement per line.
    # Plain Python 3.8 (no tomllib).
    python3 - "$src/pyproject.toml" "$extra" >"$reqs" <<'PY'
import re
import sys

text = open(sys.argv[1]).read()
block = re.search(r"^" + re.escape(sys.argv[2]) + r"\s*=\s*\[(.*?)^\]", text, re.M | re.S)
if block is None:
    sys.exit("gpubench: no extra %r in %s" % (sys.argv[2], sys.argv[1]))
for line in block.group(1).splitlines():
    m = re.match(r'\s*"([^"]+)"', line)
    if m:
        print(m.group(1))
PY
    "${pip[@]}" -r "$reqs" "$@"
    rm -f "$reqs"
    if [ "${PIP_USER:-0}" = 1 ]; then  # pip installed into the user's site (a container run as a user)
      site="$(python3 -c 'import site; print(site.getusersitepackages())')"
      mkdir -p "$site"
    else
      site="$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
    fi
    echo "$src" >"$site/gpubench-source.pth"
    ;;
  *)
    echo "gpubench: unknown install mode $mode (package or requirements)" >&2
    exit 2
    ;;
esac
