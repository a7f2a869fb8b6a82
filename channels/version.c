/*
 * channels/version.c — the version the library was built as (sluice/version.h).
 */
#include "sluice/version.h"

SL_API unsigned sl_version_number(void)
{
    return SL_VERSION_NUMBER;
}

SL_API const char *sl_version_string(void)
{
    return SL_VERSION_STRING;
}
