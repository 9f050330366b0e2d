// b runs back up to a
#include "x/a.h"
#include "x/b.h"
