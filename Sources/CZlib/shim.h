// zlib (gzip content coding). Headers and link flags come from pkg-config `zlib` (apt: zlib1g-dev).
#include <zlib.h>
