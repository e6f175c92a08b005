// libzstd, including the experimental API dcserve relies on (raw-content dictionaries,
// ZSTD_createCDict_advanced, ZDICT cover/fastCover optimisation). Debian's libzstd exports these.
#define ZSTD_STATIC_LINKING_ONLY
#define ZDICT_STATIC_LINKING_ONLY
#include <zstd.h>
#include <zstd_errors.h>
#include <zdict.h>
#if ZSTD_VERSION_NUMBER < 10500
#error "dcserve needs libzstd >= 1.5 (apt-get install libzstd-dev)"
#endif
