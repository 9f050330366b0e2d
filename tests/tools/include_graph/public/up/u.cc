// up reaches past low.h
#include "x/low/inner.h"
#include "x/low/low.h"
