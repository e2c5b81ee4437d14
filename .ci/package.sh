#!/usr/bin/env bash
# CI (and by hand, as root): builds the Debian package from ./build
# (cpack -G DEB: build/crawler_<version>_<arch>.deb), installs it with
# apt-get, checks what it installed (files, man page, systemd unit), runs an
# embedded crawl of a generated local site with the INSTALLED /usr/bin/crawler
# and checks that its embedded Redis loaded /usr/lib/crawler/crawler_redis.so
# and that the JSONL has every page; removes (purges) the package at the end, whatever
# happened.  The crawl's outputs stay in build/package-crawl (.ci/warc_check.sh
# reads its WARC).  Usage: bash .ci/package.sh
set -euo pipefail
cd "$(dirname "$0")/.."
export DEBIAN_FRONTEND=noninteractive
[ "$(id -u)" -eq 0 ] || { echo "package.sh: run as root (it installs the .deb with apt-get)" >&2; exit 1; }
. .ci/site_lib.sh

if dpkg-query -W -f='${Status}' crawler 2>/dev/null | grep -q "install ok installed"; then
  echo "package.sh: a crawler package is installed already; remove it first (apt-get remove crawler)" >&2
  exit 1
fi
[ -f build/CMakeCache.txt ] || bash .ci/setup
cmake --build build -j"$(nproc)" --target crawler crawler_redis man >/dev/null
rm -f build/crawler_*.deb
(cd build && cpack -G DEB >/dev/null)
deb=$(echo build/crawler_*_"$(dpkg --print-architecture)".deb)
[ -f "$deb" ] || { echo "package.sh: cpack made no $deb" >&2; exit 1; }
echo "package.sh: $deb"
dpkg-deb -f "$deb" Package Version Architecture Depends Recommends

out=$PWD/build/package-crawl
rm -rf "$out"
mkdir -p "$out"
cleanup() {
  site_stop
  apt-get purge -y -qq crawler >/dev/null 2>&1 || true
}
trap cleanup EXIT
apt-get install -y -qq "./$deb" >/dev/null

# A slim Debian image's dpkg leaves out /usr/share/man (path-exclude): the
# page is then checked in the package only.
man_excluded=no
grep -rqs '^path-exclude=*/usr/share/man' /etc/dpkg/dpkg.cfg.d/ && man_excluded=yes
for f in /usr/bin/crawler /usr/lib/crawler/crawler_redis.so /usr/share/man/man1/crawler.1.gz \
         /usr/lib/systemd/system/crawler@.service; do
  dpkg-deb -c "$deb" | awk '{print $NF}' | grep -qx ".$f" || { echo "package.sh: the package has no $f" >&2; exit 1; }
  [ "$f" != /usr/share/man/man1/crawler.1.gz ] || [ $man_excluded = no ] || continue
  [ -e "$f" ] || { echo "package.sh: $f was not installed" >&2; exit 1; }
done
[ "$(command -v crawler)" = /usr/bin/crawler ] || { echo "package.sh: crawler is not /usr/bin/crawler on PATH" >&2; exit 1; }
crawler --version
if command -v man >/dev/null && [ $man_excluded = no ]; then
  [ "$(man -w crawler)" = /usr/share/man/man1/crawler.1.gz ] || { echo "package.sh: man -w crawler: $(man -w crawler 2>&1)" >&2; exit 1; }
fi
if command -v systemd-analyze >/dev/null; then
  # a template is verified through an instance of it
  cp /usr/lib/systemd/system/crawler@.service "$out/crawler@ci.service"
  systemd-analyze verify "$out/crawler@ci.service"
  echo "package.sh: systemd-analyze verify crawler@.service: ok"
else
  echo "package.sh: no systemd-analyze here: the unit is not verified"
fi

# The build tree's module must not be what the installed program loads.
site_make "$out/site" 40
site_serve "$out/site"
(cd "$out" && site_crawl /usr/bin/crawler "$out")
grep -F "Module 'crawler' loaded from /usr/lib/crawler/crawler_redis.so" "$out/data/redis.log" || {
  echo "package.sh: the embedded Redis did not load /usr/lib/crawler/crawler_redis.so:" >&2
  grep -i module "$out/data/redis.log" >&2 || true
  exit 1
}
grep -F "Bloom bits set by the crawler module" "$out/crawl.log" || {
  echo "package.sh: the installed crawler did not use its module:" >&2
  cat "$out/crawl.log" >&2
  exit 1
}
site_check_jsonl "$out"
echo "$SITE_RESPONSES $SITE_REVISITS" >"$out/expected_urls" # responses and revisits its WARC must hold (.ci/warc_check.sh)
echo "package.sh: ok (the package is removed on exit)"
