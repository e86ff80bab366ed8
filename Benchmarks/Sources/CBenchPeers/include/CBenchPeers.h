#ifndef CBENCHPEERS_H
#define CBENCHPEERS_H
// The peers written in C, so that what they measure is the transport or the
// kernel and not a language runtime: raw libzmq (PAIR ping-pong, PUSH/PULL
// throughput, inproc and ipc), the OS floor (eventfd + poll between two
// threads), a PULL reader for the tap, bare libzmq sockets and bare pthreads
// for the memory and churn comparisons; plus the few Linux calls the Swift
// side needs (clocks, another thread's CPU time, fd limits, parent death).
//
// Every function returns 0 on success or a negative errno-style code, and
// never blocks longer than its `timeout_ms` (where it has one), so that a
// broken peer turns into an error in the report instead of a hung run.
#include <stdint.h>
#include <stddef.h>
#include <sys/types.h>

// MARK: - Clocks and process support

/// CLOCK_MONOTONIC in nanoseconds.
uint64_t bench_now_ns(void);
/// The kernel thread id of the calling thread.
int32_t bench_gettid(void);
/// CPU time (user + system) of thread `tid` of this process, in nanoseconds,
/// read without disturbing that thread; UINT64_MAX if it cannot be read.
uint64_t bench_thread_cpu_ns(int32_t tid);
/// Voluntary context switches of thread `tid` (each sleep that ended is one:
/// an OS-level count of wake-ups); -1 if it cannot be read.
int64_t bench_thread_voluntary_switches(int32_t tid);
/// Names the calling thread (what `top -H` and perf show; Linux keeps 15 bytes).
void bench_set_thread_name(const char *name);
/// Raises the soft RLIMIT_NOFILE to the hard limit; returns the new soft limit.
int64_t bench_raise_fd_limit(void);
/// In a child: be killed when the parent dies, and exit now if the parent
/// `parent` is already gone (the race between spawn and prctl).
void bench_die_with_parent(pid_t parent);

/// The libzmq version linked in.
void bench_zmq_version(int *major, int *minor, int *patch);

// MARK: - Thread placement

/// Pins thread `tid` of this process (0: the calling thread) to CPU `cpu`;
/// `cpu` < 0 leaves it alone. 0 or -errno.
int bench_pin_thread(int32_t tid, int cpu);
/// Lets thread `tid` (0: the calling thread) run on every online CPU again.
int bench_unpin_thread(int32_t tid);
/// The CPUs thread `tid` may run on, as a bit set of `words` 64-bit words
/// (CPU n is bit n % 64 of word n / 64); 0, or -errno. And the same set
/// given back to a thread.
int bench_thread_affinity(int32_t tid, uint64_t *mask, int words);
int bench_set_thread_affinity(int32_t tid, const uint64_t *mask, int words);

// MARK: - Raw libzmq: threads of one process

/// Ping-pong of 64-byte messages over a PAIR pair at `endpoint` (inproc:// or
/// ipc://) between the calling thread and one echo thread. Runs `warmup`
/// round trips, then records `iterations` round-trip times in `samples_ns`.
/// The calling thread runs on `caller_cpu` meanwhile and the echo thread on
/// `peer_cpu` (-1: wherever the scheduler puts them).
int bench_zmq_pingpong_threads(const char *endpoint, int warmup, int iterations, uint64_t *samples_ns, int timeout_ms,
                               int caller_cpu, int peer_cpu);
/// The same PAIR round trip with each side served as an event loop serves a
/// libzmq socket: it waits in epoll for ZMQ_FD and receives without
/// blocking until the socket is empty (which re-arms ZMQ_FD). What any loop
/// that multiplexes libzmq sockets with other sources pays over a blocking
/// receive: an epoll_wait and one more receive (with libzmq's own poll of
/// its mailbox) per message.
int bench_zmq_pingpong_threads_polled(const char *endpoint, int warmup, int iterations, uint64_t *samples_ns, int timeout_ms,
                                      int caller_cpu, int peer_cpu);
/// The same round trip over REQ (the calling thread, bound) and REP (the
/// echo thread): libzmq's own request-reply, where the reply finds its way
/// back to the asker by the envelope libzmq adds (the shape of a port's
/// sendRequest, whose reply goes to the reply port the request carried).
int bench_zmq_reqrep_threads(const char *endpoint, int warmup, int iterations, uint64_t *samples_ns, int timeout_ms,
                             int caller_cpu, int peer_cpu);
/// One-way throughput: the calling thread PUSHes `count` 64-byte messages to a
/// PULL thread at `endpoint`; `elapsed_ns` is from the first send until the
/// receiver has taken the last one. CPUs as above.
int bench_zmq_throughput_threads(const char *endpoint, int count, uint64_t *elapsed_ns, int timeout_ms,
                                 int caller_cpu, int peer_cpu);
/// The same, with the PULL thread served as an event loop serves a libzmq
/// socket (epoll on ZMQ_FD, non-blocking receives until empty), as
/// bench_zmq_pingpong_threads_polled.
int bench_zmq_throughput_threads_polled(const char *endpoint, int count, uint64_t *elapsed_ns, int timeout_ms,
                                        int caller_cpu, int peer_cpu);
/// The same blocking throughput with frames of `frame_bytes` (1 to 256)
/// instead of 64: raw libzmq carrying as many bytes per message as a
/// RunLoopKit port puts on the wire for a 64-byte payload.
int bench_zmq_throughput_threads_sized(const char *endpoint, int frame_bytes, int count, uint64_t *elapsed_ns,
                                       int timeout_ms, int caller_cpu, int peer_cpu);

/// Fan-in: `senders` threads (at most 64), each with its own PUSH socket
/// connected to one PULL at `endpoint`, each send `count_per_sender` 64-byte
/// messages at once; the calling thread receives them all. After a warm-up
/// (1,000 messages in all), `elapsed_ns` runs from releasing the senders
/// until the last message is taken. Senders run on `sender_cpu`, the
/// receiver on `receiver_cpu` (-1: anywhere).
int bench_zmq_fanin_threads(const char *endpoint, int senders, int count_per_sender, uint64_t *elapsed_ns, int timeout_ms,
                            int sender_cpu, int receiver_cpu);

// MARK: - Raw libzmq: many sockets on one thread

typedef struct bench_zmq_fanin bench_zmq_fanin;
/// `sockets` PULL sockets, each with a PUSH connected to it over inproc, and
/// one epoll set over the PULLs' ZMQ_FDs; fewer pairs if file descriptors
/// run out first (`bench_zmq_fanin_count` says how many). NULL on failure.
bench_zmq_fanin *bench_zmq_fanin_open(int sockets);
int bench_zmq_fanin_count(const bench_zmq_fanin *set);
/// The calling thread sends `count` 64-byte messages round-robin over the
/// PUSHes; a receiving thread drains each PULL its epoll set signals.
/// `elapsed_ns` is from the first send until the last message is taken.
int bench_zmq_fanin_run(bench_zmq_fanin *set, int count, uint64_t *elapsed_ns, int timeout_ms, int sender_cpu,
                        int receiver_cpu);
void bench_zmq_fanin_close(bench_zmq_fanin *set);

// MARK: - Raw libzmq: two processes over ipc

typedef struct bench_zmq_link bench_zmq_link;
/// Parent side: binds a PAIR (echo), a PUSH (sink) and a PULL (acks) at the
/// three endpoints. NULL on failure (errno set).
bench_zmq_link *bench_zmq_link_open(const char *pair_endpoint, const char *push_endpoint, const char *ack_endpoint);
/// Waits until the child has connected (one echo answered); 0 or -ETIMEDOUT.
int bench_zmq_link_wait_ready(bench_zmq_link *link, int timeout_ms);
/// Round trips through the child's echo; as bench_zmq_pingpong_threads.
int bench_zmq_link_pingpong(bench_zmq_link *link, int warmup, int iterations, uint64_t *samples_ns, int timeout_ms);
/// Sends `count` 64-byte messages to the child's sink, then an end marker,
/// and waits for its acknowledgement (carrying the count it saw).
int bench_zmq_link_throughput(bench_zmq_link *link, int count, uint64_t *elapsed_ns, int timeout_ms);
/// Tells the child to exit, and closes everything (linger 0).
void bench_zmq_link_close(bench_zmq_link *link);
/// Child side: connects to the three endpoints and serves echo and sink until
/// told to quit or until `idle_timeout_ms` passes with no traffic. Returns 0.
int bench_zmq_child_serve(const char *pair_endpoint, const char *push_endpoint, const char *ack_endpoint, int idle_timeout_ms);

// MARK: - Raw libzmq: two processes over tcp

typedef struct bench_zmq_tcp_link bench_zmq_tcp_link;
/// Parent side: a DEALER connected to the child's ROUTER at `endpoint`, a
/// CURVE client of `server_public` (40 Z85 characters) unless it is empty,
/// that says hello: the shape of RunLoopKit's tcp between the benchmark
/// and its child (the dialling side sends). NULL on failure.
bench_zmq_tcp_link *bench_zmq_tcp_link_open(const char *endpoint, const char *server_public);
/// Waits for the child's answer to the hello; 0 or an error.
int bench_zmq_tcp_link_wait_ready(bench_zmq_tcp_link *link, int timeout_ms);
/// Round trips through the child's ROUTER, which echoes; as bench_zmq_link_pingpong.
int bench_zmq_tcp_link_pingpong(bench_zmq_tcp_link *link, int warmup, int iterations, uint64_t *samples_ns, int timeout_ms);
/// `count` 64-byte messages to the child, an end marker, and its count back.
int bench_zmq_tcp_link_throughput(bench_zmq_tcp_link *link, int count, uint64_t *elapsed_ns, int timeout_ms);
/// Tells the child to exit, and closes everything.
void bench_zmq_tcp_link_close(bench_zmq_tcp_link *link);
/// Child side: a ROUTER bound at tcp://127.0.0.1 on a port the system
/// picks, a CURVE server when `curve` (its key pair made here), that
/// writes "<endpoint> <public key, or ->" as a line on stdout, answers the
/// parent's hello, echoes pings and counts data until told to quit or
/// `idle_timeout_ms` passes quietly.
int bench_zmq_tcp_child_serve(int curve, int idle_timeout_ms);

// MARK: - The OS floor

/// Ping-pong between the calling thread and one other thread through two
/// eventfds, each side sleeping in poll(2): what any cross-thread wake-up
/// costs on this kernel before any library is involved.
int bench_eventfd_pingpong(int warmup, int iterations, uint64_t *samples_ns, int timeout_ms, int caller_cpu, int peer_cpu);

// MARK: - Helpers for other scenarios

typedef struct bench_pull_reader bench_pull_reader;
/// A thread that binds a PULL socket at `endpoint` and takes every batch
/// the tap sends, counting its events (the sniffer's stand-in). NULL on
/// failure.
bench_pull_reader *bench_pull_reader_start(const char *endpoint);
/// The events the reader has taken so far.
uint64_t bench_pull_reader_events(bench_pull_reader *reader);
/// Stops the reader; returns how many events it took.
uint64_t bench_pull_reader_stop(bench_pull_reader *reader);

typedef struct bench_zmq_sockets bench_zmq_sockets;
/// `count` PULL sockets, each bound at its own inproc endpoint, in one
/// context: libzmq's own cost per receiving socket. NULL on failure.
bench_zmq_sockets *bench_zmq_sockets_open(int count);
/// `count` more PULL sockets in the same context; 0 or -errno.
int bench_zmq_sockets_add(bench_zmq_sockets *sockets, int count);
void bench_zmq_sockets_close(bench_zmq_sockets *sockets);

/// Starts and joins `count` pthreads, one after another, each running one
/// trivial task: the OS floor for the keep-alive churn. Records each
/// start-to-joined time in `samples_ns` (count entries). 0 or -errno.
int bench_pthread_churn(int count, uint64_t *samples_ns, uint64_t *checksum);

// MARK: - Children and clean-up

/// Remembers a child process, so that a signal or exit kills and reaps it.
void bench_track_child(pid_t pid);
/// Forgets a child that has been reaped.
void bench_untrack_child(pid_t pid);
/// The private runtime directory, removed (with its files) at exit or on a signal.
void bench_set_cleanup_directory(const char *path);
/// Installs the SIGINT/SIGTERM/SIGHUP handler and the atexit handler that
/// kill and reap tracked children and remove the directory. Call once, early.
void bench_install_cleanup(void);
/// Kills (SIGKILL) and reaps every tracked child, and removes the directory, now.
void bench_cleanup_now(void);

// MARK: - Timers at scale (timer_heap.c)

/// A bare timerfd + epoll loop whose timers are a binary min-heap: `far_count`
/// one-shot timers 10 to 20 s away, a churn timer every `churn_interval_us`
/// that removes one far timer and adds one, and `probes` one-shot timers
/// spread over `window_ms` (from 0.2 s on), each probe's lateness (fire
/// time - due time) written to `lateness_ns`. Returns the probes fired, or
/// -errno; `changes_out` gets the heap changes made.
int bench_timer_churn(int far_count, int churn_interval_us, int probes, int window_ms,
                      uint64_t *lateness_ns, int *changes_out);
/// The loop of bench_timer_churn without probes, its churn timer due every
/// microsecond, until it fired `fires` times: what one pass with a churn
/// callout costs, for callgrind (timer-churn-passes-c). Returns the fires
/// made, or -errno.
int bench_timer_churn_passes(int far_count, int fires, int *changes_out);
/// With `count` timers in a binary heap, the time to make `changes` changes
/// (half removals, half insertions, in pairs), in `nanoseconds`.
int bench_timer_heap_changes(int count, int changes, uint64_t *nanoseconds);
/// bench_timer_heap_changes with a 96-byte timer object per timer (the
/// heap's entries hold the instant and the timer, the timer its place), and
/// rlk-bench's mix of changes: a removal and an insertion of a new timer,
/// then a moved instant, until at least `changes` changes (each of the
/// three counts one), with `work_rounds` rounds of work on registers alone
/// before each three (0: none). Returns the changes made, or -errno.
int bench_timer_object_heap_changes(int count, int changes, int work_rounds, uint64_t *nanoseconds);

#endif
