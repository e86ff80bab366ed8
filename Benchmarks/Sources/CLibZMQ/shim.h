// The system libzmq (Debian: libzmq3-dev), found through pkg-config `libzmq`.
// The benchmarks declare their own system-library module because the root
// package's CZeroMQ is not a product, so another package cannot depend on it.
#include <zmq.h>
