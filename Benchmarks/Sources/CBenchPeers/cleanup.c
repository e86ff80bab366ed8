// Children and the private runtime directory must never outlive rlk-bench:
// not on a normal exit, not on Ctrl-C, not when a scenario fails midway.
// Kept in C with fixed storage so that the signal handler only calls
// async-signal-safe functions (kill, waitpid, unlink, rmdir, _exit).
#define _GNU_SOURCE
#include "CBenchPeers.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

enum { MAX_CHILDREN = 64 };
static volatile pid_t children[MAX_CHILDREN];
static char directory[512];

void bench_track_child(pid_t pid) {
    for (int i = 0; i < MAX_CHILDREN; i++) {
        if (children[i] == 0) { children[i] = pid; return; }
    }
}

void bench_untrack_child(pid_t pid) {
    for (int i = 0; i < MAX_CHILDREN; i++) {
        if (children[i] == pid) children[i] = 0;
    }
}

void bench_set_cleanup_directory(const char *path) {
    strncpy(directory, path, sizeof directory - 1);
}

static void remove_directory(void) {
    if (!directory[0]) return;
    // opendir allocates, so this part is not strictly async-signal-safe; the
    // directory holds a handful of socket and lock files.
    DIR *dir = opendir(directory);
    if (dir) {
        struct dirent *entry;
        char path[1024];
        while ((entry = readdir(dir))) {
            if (!strcmp(entry->d_name, ".") || !strcmp(entry->d_name, "..")) continue;
            size_t length = strlen(directory);
            if (length + 1 + strlen(entry->d_name) + 1 > sizeof path) continue;
            memcpy(path, directory, length);
            path[length] = '/';
            strcpy(path + length + 1, entry->d_name);
            unlink(path);
        }
        closedir(dir);
    }
    rmdir(directory);
}

void bench_cleanup_now(void) {
    for (int i = 0; i < MAX_CHILDREN; i++) {
        pid_t pid = children[i];
        if (pid > 0) {
            kill(pid, SIGKILL);
            while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {}
            children[i] = 0;
        }
    }
    remove_directory();
}

static void on_signal(int signal_number) {
    bench_cleanup_now();
    signal(signal_number, SIG_DFL);
    raise(signal_number);
}

void bench_install_cleanup(void) {
    atexit(bench_cleanup_now);
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = on_signal;
    sigemptyset(&action.sa_mask);
    sigaction(SIGINT, &action, NULL);
    sigaction(SIGTERM, &action, NULL);
    sigaction(SIGHUP, &action, NULL);
}
