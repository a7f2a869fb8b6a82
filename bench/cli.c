/*
 * bench/cli.c — what sl-bench's subcommands share: option values (numbers
 * with k/M suffixes, comma lists of names), the watchdog that turns a hang
 * into a failure, and where the programs built next to sl-bench are.
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "bench.h"

static char watchdog_msg[512];
static size_t watchdog_len;

static void on_alarm(int sig)
{
    (void)sig;
    /* Only async-signal-safe calls here; the message was formatted before. */
    ssize_t ignored = write(STDERR_FILENO, watchdog_msg, watchdog_len);
    (void)ignored;
    _exit(3);
}

void slb_watchdog_install(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_alarm;
    sigaction(SIGALRM, &sa, NULL);
}

void slb_watchdog_arm(unsigned seconds, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(watchdog_msg, sizeof(watchdog_msg), fmt, ap);
    va_end(ap);
    watchdog_len = strlen(watchdog_msg);
    alarm(seconds);
}

void slb_watchdog_disarm(void)
{
    alarm(0);
}

bool slb_parse_u64(const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    if (*s < '0' || *s > '9')
        return false; /* strtoull would take "-1" and " 1" */
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s)
        return false;
    if (*end == 'k' || *end == 'K')
        v *= 1000, end++;
    else if (*end == 'M' || *end == 'm')
        v *= 1000000, end++;
    *out = v;
    return *end == '\0';
}

bool slb_parse_names(const char *s, const char *const *names, size_t n, unsigned *out)
{
    *out = 0;
    for (const char *p = s; *p;) {
        size_t len = strcspn(p, ",");
        size_t i = 0;
        while (i < n && !(strlen(names[i]) == len && strncasecmp(p, names[i], len) == 0))
            i++;
        if (i == n)
            return false;
        *out |= 1u << i;
        p += len + (p[len] == ',');
    }
    return *out != 0;
}

bool slb_sibling_path(const char *name, char *buf, size_t len)
{
    ssize_t n = readlink("/proc/self/exe", buf, len - 1);
    if (n <= 0)
        return false;
    buf[n] = '\0';
    char *slash = strrchr(buf, '/');
    size_t name_len = strlen(name) + 1;
    if (!slash || (size_t)(slash - buf) + 1 + name_len > len)
        return false;
    memcpy(slash + 1, name, name_len);
    return true;
}
