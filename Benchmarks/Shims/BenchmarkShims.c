#include "BenchmarkShims.h"
