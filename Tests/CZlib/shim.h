// zlib from Debian's zlib1g-dev, for tests only: they inflate a PNG's image data to read the
// filter each row was encoded with.
#include <zlib.h>
