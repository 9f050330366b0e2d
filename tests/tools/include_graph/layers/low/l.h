// low includes high
#include "high/h.h"
