// malloc.h's declarations are all this module brings (see the header).
#include "CMallocInfo.h"
