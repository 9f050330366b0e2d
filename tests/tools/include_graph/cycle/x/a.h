// a includes b
#include "x/b.h"
