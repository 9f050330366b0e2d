// b runs back up to a
#include "x/b.h"

#include "x/a.h"
