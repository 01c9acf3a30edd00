/* CHECK and EXPECT for the example programs: print what failed, with Ferry's last error, and
 * exit 1. */
#ifndef FERRY_EXAMPLE_CHECK_H
#define FERRY_EXAMPLE_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#include "ferry.h"

#define CHECK(call)                                                                           \
    do {                                                                                      \
        ferry_status s_ = (call);                                                             \
        if (s_ != FERRY_OK) {                                                                 \
            fprintf(stderr, "%s:%d: %s: status %d: %s\n", __FILE__, __LINE__, #call, (int)s_, \
                    ferry_last_error());                                                      \
            exit(1);                                                                          \
        }                                                                                     \
    } while (0)

#define EXPECT(cond)                                                                  \
    do {                                                                              \
        if (!(cond)) {                                                                \
            fprintf(stderr, "%s:%d: expected %s (last error: %s)\n", __FILE__, __LINE__, \
                    #cond, ferry_last_error());                                       \
            exit(1);                                                                  \
        }                                                                             \
    } while (0)

#endif
