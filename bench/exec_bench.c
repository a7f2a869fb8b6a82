/* Placeholder while sl-bench exec is written: replaced entirely by its author. */
#include "bench.h"

int slb_exec_main(int argc, char **argv)
{
    (void)argc;
    fprintf(stderr, "sl-bench: '%s' is not built yet\n", argv[0]);
    return 2;
}
