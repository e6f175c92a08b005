// brotli >= 1.1 with the shared-dictionary API dcb needs. The headers and the static archives come
// from .deps/brotli (scripts/build-brotli.sh) through the pkg-config file dcserve-brotli.pc.
// Debian 12's /usr/include/brotli is 1.0.9 and has no shared_dictionary.h: if those headers are the
// ones found, stop here instead of compiling against (and linking) the old library.
#if !__has_include(<brotli/shared_dictionary.h>)
#error "dcserve needs brotli >= 1.1 headers (found older ones): run `make deps` and build with PKG_CONFIG_PATH=$PWD/.deps/brotli/lib/pkgconfig (the Makefile does this)"
#endif
#include <brotli/encode.h>
#include <brotli/decode.h>
#include <brotli/shared_dictionary.h>
#if !defined(BROTLI_COMMON_SHARED_DICTIONARY_H_)
#error "brotli shared_dictionary.h is not the >= 1.1 header: run `make deps`"
#endif
