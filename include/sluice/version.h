/*
 * sluice/version.h — which sluice this is.
 *
 * The macros give the version of the headers a program was compiled with;
 * sl_version_number() gives the version of the library it runs against, so a
 * program can refuse a library older than its headers. This header is the one
 * place the version is written: the build reads it from here, for the CMake
 * package, pkg-config and the shared library's SONAME.
 *
 * ABI: while the major version is 0, every minor release may change the ABI
 * (SemVer's rule for 0.y.z), so the SONAME carries major and minor:
 * libsluice.so.0.1. From 1.0 on it carries the major version alone.
 */
#ifndef SLUICE_VERSION_H
#define SLUICE_VERSION_H

#include "sluice/base.h"

SL_BEGIN_DECLS

#define SL_VERSION_MAJOR 0
#define SL_VERSION_MINOR 1
#define SL_VERSION_PATCH 0

/* "0.1.0" */
#define SL_VERSION_STRINGIFY_(x) #x
#define SL_VERSION_STRINGIFY(x) SL_VERSION_STRINGIFY_(x)
#define SL_VERSION_STRING                                                    \
    SL_VERSION_STRINGIFY(SL_VERSION_MAJOR) "." SL_VERSION_STRINGIFY(         \
        SL_VERSION_MINOR) "." SL_VERSION_STRINGIFY(SL_VERSION_PATCH)

/* One comparable number: major * 10000 + minor * 100 + patch (0.1.0 -> 100). */
#define SL_VERSION_NUMBER                                                    \
    (SL_VERSION_MAJOR * 10000 + SL_VERSION_MINOR * 100 + SL_VERSION_PATCH)

/* Returns SL_VERSION_NUMBER as the library was built: compare it with the
 * macro to detect a program running against another library than the one it
 * was compiled for. Wait-free, thread-safe. */
SL_API unsigned sl_version_number(void);

/* Returns SL_VERSION_STRING as the library was built; static, never NULL.
 * Wait-free, thread-safe. */
SL_API const char *sl_version_string(void);

SL_END_DECLS

#endif /* SLUICE_VERSION_H */
