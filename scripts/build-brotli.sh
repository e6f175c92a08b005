#!/usr/bin/env bash
# Builds brotli >= 1.1 (the dictionary API dcb needs) from the pinned PyPI source distribution into
# the project-local prefix .deps/brotli: static archives with names no system library has
# (libbrotli{enc,dec,common}-static.a, so OpenSSL's -L/usr/lib/... can never pull in Debian's 1.0.9),
# a pkg-config file dcserve-brotli.pc, and a `brotli` CLI with -D for tests.
# Idempotent: does nothing when the stamp for this version exists.
set -euo pipefail
VERSION=1.2.1
SHA256=02b2f7b5a83485efe448a44ddf7983def05c3bb1dcf917d4f7154070260e13de
root=$(cd "$(dirname "$0")/.." && pwd)
prefix="$root/.deps/brotli"
stamp="$prefix/.built-$VERSION"
[ -f "$stamp" ] && exit 0

work="$root/.deps/brotli-src"
rm -rf "$work" "$prefix"
mkdir -p "$work" "$prefix/lib" "$prefix/include" "$prefix/bin" "$prefix/lib/pkgconfig"
tarball="$root/.deps/brotli-$VERSION.tar.gz"
if [ ! -f "$tarball" ] || ! echo "$SHA256  $tarball" | sha256sum -c --status; then
  echo "downloading brotli $VERSION source distribution from PyPI"
  python3 -m pip download --quiet --no-deps --no-binary :all: "brotli==$VERSION" -d "$root/.deps"
fi
echo "$SHA256  $tarball" | sha256sum -c --status || { echo "brotli tarball sha256 mismatch" >&2; exit 1; }
tar -xzf "$tarball" -C "$work" --strip-components=1
c="$work/c"
grep -q "BROTLI_VERSION_MINOR 2" "$c/common/version.h" || { echo "unexpected brotli version in source" >&2; exit 1; }

cc=${CC:-cc}
cflags=(-O2 -fPIC -DNDEBUG -I"$c/include")
compile() { # $1 = component
  mkdir -p "$work/obj/$1"
  ls "$c/$1"/*.c | xargs -P "$(nproc)" -I{} sh -c \
    'f={}; '"$cc"' '"${cflags[*]}"' -c "$f" -o "'"$work/obj/$1"'/$(basename "$f" .c).o"'
  ar rcs "$prefix/lib/libbrotli$1-static.a" "$work/obj/$1"/*.o
}
compile common; compile dec; compile enc
cp -r "$c/include/brotli" "$prefix/include/"
$cc "${cflags[@]}" "$c/tools/brotli.c" -o "$prefix/bin/brotli" \
  "$prefix/lib/libbrotlienc-static.a" "$prefix/lib/libbrotlidec-static.a" "$prefix/lib/libbrotlicommon-static.a" -lm
cat > "$prefix/lib/pkgconfig/dcserve-brotli.pc" <<PC
prefix=$prefix
Name: dcserve-brotli
Description: brotli $VERSION static archives built for dcserve
Version: $VERSION
Cflags: -I\${prefix}/include
Libs: -L\${prefix}/lib -lbrotlienc-static -lbrotlidec-static -lbrotlicommon-static
PC
"$prefix/bin/brotli" --version | grep -q "brotli $VERSION" || { echo "built brotli CLI reports wrong version" >&2; exit 1; }
rm -rf "$work"
touch "$stamp"
echo "brotli $VERSION built into $prefix"
