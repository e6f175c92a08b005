// libzstd for the zstd-differential fuzz mode: the buffer-less streaming API
// (ZSTD_decompressBegin_usingDict, ZSTD_decompressContinue) is in the experimental section.
#define ZSTD_STATIC_LINKING_ONLY
#include <zstd.h>
