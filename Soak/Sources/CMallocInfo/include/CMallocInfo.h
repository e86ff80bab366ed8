#ifndef C_MALLOC_INFO_H
#define C_MALLOC_INFO_H
#include <malloc.h>
#endif
