/*
 * sluice.h — the umbrella header: everything sluice offers.
 *
 * sluice is a family of lock-free channels with documented progress guarantees
 * and move-only ownership, with the parking layer they block on. Include the
 * per-concept headers under sluice/ instead to keep compile times down.
 */
#ifndef SLUICE_H
#define SLUICE_H

#include "sluice/base.h"
#include "sluice/version.h"
#include "sluice/status.h"
#include "sluice/park.h"
#include "sluice/spsc.h"
#include "sluice/mpmc.h"
#include "sluice/list.h"
#include "sluice/ring.h"
#include "sluice/chan.h"
#include "sluice/select.h"
#include "sluice/chanfd.h"
#include "sluice/timer.h"
#include "sluice/broadcast.h"
#include "sluice/pool.h"
#include "sluice/exec.h"

#endif /* SLUICE_H */
