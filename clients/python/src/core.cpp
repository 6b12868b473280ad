// The extension's core, src/core/bloom.cpp, compiled into bloomfilter._native as it is: setup.py
// puts src/core on the include path (a file outside the package cannot be one of its sources).
#include "bloom.cpp"
