// The system libzmq (Debian: libzmq3-dev), from the default include path.
#include <zmq.h>
