// xxHash from Debian's libxxhash-dev: XXH3, the fast non-cryptographic checksum that guards the
// cache's disk entries against accidental damage (torn writes, bit rot).
#include <xxhash.h>
