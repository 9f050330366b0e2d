// high includes low
#include "high/h.h"

#include "low/l.h"
