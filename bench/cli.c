/*
 * bench/cli.c — option values shared by sl-bench's subcommands: numbers with
 * k/M suffixes and comma lists of names.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "bench.h"

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
