// low reaches up to top
#include "x/top/t.h"
