// The system libzmq (Debian: libzmq3-dev), found through pkg-config `libzmq`.
#include <zmq.h>
